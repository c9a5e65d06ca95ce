/// One IRC verb: how many parameters it needs, whether it may come before registration,
/// whether only IRC operators may use it, and its handler. Arity, "not registered" and
/// "not an operator" are checked once, in `dispatch`.
struct ServerCommand: Sendable {
    let minParams: Int
    let beforeRegistration: Bool
    let operatorOnly: Bool
    let run: @Sendable (inout ServerState, ServerState.Request) -> Void

    init(_ minParams: Int, beforeRegistration: Bool = false, operatorOnly: Bool = false,
         _ run: @escaping @Sendable (inout ServerState, ServerState.Request) -> Void) {
        self.minParams = minParams
        self.beforeRegistration = beforeRegistration
        self.operatorOnly = operatorOnly
        self.run = run
    }
}

extension ServerState {
    static let privmsg = commands["PRIVMSG"]

    static let commands: [String: ServerCommand] = [
        // Registration and connection
        "CAP": ServerCommand(1, beforeRegistration: true) { $0.handleCap($1) },
        "PASS": ServerCommand(1, beforeRegistration: true) { $0.handlePass($1) },
        "NICK": ServerCommand(0, beforeRegistration: true) { $0.handleNick($1) },
        "USER": ServerCommand(4, beforeRegistration: true) { $0.handleUser($1) },
        "PING": ServerCommand(0, beforeRegistration: true) { $0.handlePing($1) },
        "PONG": ServerCommand(0, beforeRegistration: true) { _, _ in },
        "QUIT": ServerCommand(0, beforeRegistration: true) { $0.handleQuit($1) },
        "AUTHENTICATE": ServerCommand(1, beforeRegistration: true) { $0.handleAuthenticate($1) },
        "REGISTER": ServerCommand(3, beforeRegistration: true) { $0.handleRegister($1) },
        "VERIFY": ServerCommand(2, beforeRegistration: true) { $0.handleVerify($1) },
        // Rooms
        "JOIN": ServerCommand(1) { $0.handleJoin($1) },
        "PART": ServerCommand(1) { $0.handlePart($1) },
        "TOPIC": ServerCommand(1) { $0.handleTopic($1) },
        "NAMES": ServerCommand(0) { $0.handleNames($1) },
        "LIST": ServerCommand(0) { $0.handleList($1) },
        "KICK": ServerCommand(2) { $0.handleKick($1) },
        "INVITE": ServerCommand(0) { $0.handleInvite($1) },
        "MODE": ServerCommand(1) { $0.handleMode($1) },
        "RENAME": ServerCommand(2) { $0.handleRename($1) },
        // Messages
        "PRIVMSG": ServerCommand(0) { $0.handleMessage($1) },
        "NOTICE": ServerCommand(0) { $0.handleMessage($1) },
        "TAGMSG": ServerCommand(1) { $0.handleTagMessage($1) },
        "REDACT": ServerCommand(2) { $0.handleRedact($1) },
        "BATCH": ServerCommand(1) { $0.handleBatch($1) },
        "AWAY": ServerCommand(0, beforeRegistration: true) { $0.handleAway($1) },
        "CHATHISTORY": ServerCommand(1) { $0.handleChathistory($1) },
        "MARKREAD": ServerCommand(0) { $0.handleMarkread($1) },
        "WEBPUSH": ServerCommand(1) { $0.handleWebPush($1) },
        "SEARCH": ServerCommand(1) { $0.handleSearch($1) },
        // Queries
        "WHO": ServerCommand(0) { $0.handleWho($1) },
        "WHOIS": ServerCommand(1) { $0.handleWhois($1) },
        "ISON": ServerCommand(1) { $0.handleIson($1) },
        "USERHOST": ServerCommand(1) { $0.handleUserhost($1) },
        "MOTD": ServerCommand(0) { $0.sendMotd($1.session) },
        "WHOWAS": ServerCommand(1) { $0.handleWhowas($1) },
        "TIME": ServerCommand(0) { $0.handleTime($1) },
        "VERSION": ServerCommand(0) { $0.handleVersion($1) },
        "LUSERS": ServerCommand(0) { $0.handleLusers($1) },
        "ADMIN": ServerCommand(0) { $0.handleAdmin($1) },
        "INFO": ServerCommand(0) { $0.handleInfo($1) },
        "HELP": ServerCommand(0) { $0.handleHelp($1) },
        "MONITOR": ServerCommand(1) { $0.handleMonitor($1) },
        "PERSISTENCE": ServerCommand(1) { $0.handlePersistence($1) },
        "RESUME": ServerCommand(1, beforeRegistration: true) { $0.handleResume($1) },
        // `/ns IDENTIFY …`, `/cs REGISTER #room`: the services' own commands, as ergo takes them.
        "NICKSERV": ServerCommand(0) { $0.nickServ($1, text: $1.params.joined(separator: " ")) },
        "NS": ServerCommand(0) { $0.nickServ($1, text: $1.params.joined(separator: " ")) },
        "CHANSERV": ServerCommand(0) { $0.chanServ($1, text: $1.params.joined(separator: " ")) },
        "CS": ServerCommand(0) { $0.chanServ($1, text: $1.params.joined(separator: " ")) },
        "SETNAME": ServerCommand(1) { $0.handleSetname($1) },
        "METADATA": ServerCommand(0) { $0.handleMetadata($1) },
        // Operators
        "OPER": ServerCommand(2) { $0.handleOper($1) },
        "KILL": ServerCommand(2, operatorOnly: true) { $0.handleKill($1) },
        "WALLOPS": ServerCommand(1, operatorOnly: true) { $0.handleWallops($1) },
        "CHGHOST": ServerCommand(2, operatorOnly: true) { $0.handleChghost($1) },
    ]
}
