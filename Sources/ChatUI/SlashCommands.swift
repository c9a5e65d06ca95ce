/// The `/commands` of the chat screen: one table with usage, arity and a one-line description.
public struct SlashCommand: Sendable {
    public let name: String
    public let usage: String
    public let minArguments: Int
    public let summary: String
}

public enum SlashCommands {
    public static let all: [SlashCommand] = [
        SlashCommand(name: "help", usage: "/help [COMMAND]", minArguments: 0, summary: "list the commands, or say what one does"),
        SlashCommand(name: "msg", usage: "/msg NICK TEXT", minArguments: 2, summary: "send a direct message"),
        SlashCommand(name: "query", usage: "/query NICK [TEXT]", minArguments: 1, summary: "open a direct conversation (and say TEXT there)"),
        SlashCommand(name: "notice", usage: "/notice NICK|#ROOM TEXT", minArguments: 2, summary: "send a notice (clients do not answer notices; bots use them)"),
        SlashCommand(name: "ctcp", usage: "/ctcp NICK VERSION|PING|TIME|CLIENTINFO", minArguments: 2, summary: "ask someone's client (PING: the round trip; the answer shows where you asked)"),
        SlashCommand(name: "lastlog", usage: "/lastlog WORDS", minArguments: 1, summary: "this conversation's lines with WORDS (one word: or said by that nickname), from your log (Up/Down, Enter shows one, Esc closes)"),
        SlashCommand(name: "me", usage: "/me ACTION", minArguments: 1, summary: "describe what you do"),
        SlashCommand(name: "nick", usage: "/nick NAME", minArguments: 1, summary: "change your nickname"),
        SlashCommand(name: "join", usage: "/join #ROOM [KEY]", minArguments: 1, summary: "join a room (KEY: a room with +k)"),
        SlashCommand(name: "part", usage: "/part [#ROOM] [REASON]", minArguments: 0, summary: "leave a room (the current one by default)"),
        SlashCommand(name: "topic", usage: "/topic [#ROOM] [TEXT]", minArguments: 0, summary: "show or set the room's topic"),
        SlashCommand(name: "away", usage: "/away [MESSAGE]", minArguments: 0, summary: "mark yourself away, or back without a message"),
        SlashCommand(name: "whois", usage: "/whois NICK [NICK]", minArguments: 1, summary: "who someone is"),
        SlashCommand(name: "names", usage: "/names [#ROOM]", minArguments: 0, summary: "list who is in the room"),
        SlashCommand(name: "kick", usage: "/kick [#ROOM] NICK [REASON]", minArguments: 1, summary: "(room operators) remove someone from the room"),
        SlashCommand(name: "ban", usage: "/ban [#ROOM] NICK|MASK", minArguments: 1, summary: "(room operators) ban a nickname (NICK!*@*) or a mask"),
        SlashCommand(name: "unban", usage: "/unban [#ROOM] MASK", minArguments: 1, summary: "(room operators) lift a ban"),
        SlashCommand(name: "invite", usage: "/invite NICK [#ROOM]", minArguments: 1, summary: "invite someone (to an invite-only room, as its operator)"),
        SlashCommand(name: "op", usage: "/op [#ROOM] NICK…", minArguments: 1, summary: "(room operators) make people operators of the room"),
        SlashCommand(name: "deop", usage: "/deop [#ROOM] NICK…", minArguments: 1, summary: "(room operators) take operator status away"),
        SlashCommand(name: "voice", usage: "/voice [#ROOM] NICK…", minArguments: 1, summary: "(room operators) let people speak in a moderated room"),
        SlashCommand(name: "devoice", usage: "/devoice [#ROOM] NICK…", minArguments: 1, summary: "(room operators) take voice away"),
        SlashCommand(name: "register", usage: "/register [#ROOM]", minArguments: 0, summary: "keep a room you run across restarts, registered to your account (ChanServ)"),
        SlashCommand(name: "mode", usage: "/mode [TARGET] [+|-MODES [ARGS]]", minArguments: 0, summary: "show or change the room's modes (+i +k KEY +l N +m +s +b MASK…) or yours"),
        SlashCommand(name: "reply", usage: "/reply N TEXT", minArguments: 2, summary: "answer message [N] (its number in --lines; Alt-Up picks one here)"),
        SlashCommand(name: "react", usage: "/react N EMOJI", minArguments: 2, summary: "react to message [N] (:+1: :heart: :joy: :tada: :eyes: :pray: or any emoji)"),
        SlashCommand(name: "unreact", usage: "/unreact N EMOJI", minArguments: 2, summary: "take a reaction back"),
        SlashCommand(name: "delete", usage: "/delete N", minArguments: 1, summary: "delete message [N] (yours; any in a room you operate)"),
        SlashCommand(name: "set", usage: "/set [NAME [VALUE]]", minArguments: 0, summary: "list the settings, show one, or change it (-default NAME: back to the default; display-name NAME: the name shown beside your nickname)"),
        SlashCommand(name: "save", usage: "/save", minArguments: 0, summary: "write the settings and aliases to the config file (comments and sections kept)"),
        SlashCommand(name: "reload", usage: "/reload", minArguments: 0, summary: "read the settings and aliases from the config file again"),
        SlashCommand(name: "alias", usage: "/alias [NAME [EXPANSION]]", minArguments: 0, summary: "a command of your own: $1 $2- $* $nick $target, ; between commands (alone: the list)"),
        SlashCommand(name: "unalias", usage: "/unalias NAME", minArguments: 1, summary: "forget an alias"),
        SlashCommand(name: "quote", usage: "/quote RAW IRC LINE", minArguments: 1, summary: "send a line to the server as it is"),
        SlashCommand(name: "list", usage: "/list [MASK]", minArguments: 0, summary: "pick a room from the server's list (Up/Down, Enter joins, Esc closes)"),
        SlashCommand(name: "search", usage: "/search WORDS", minArguments: 1, summary: "find lines in your log of every conversation (Up/Down, Enter opens one, Esc closes)"),
        SlashCommand(name: "ignore", usage: "/ignore [NICK|MASK]", minArguments: 0, summary: "hide someone's messages (kept in your config file); alone: the list"),
        SlashCommand(name: "unignore", usage: "/unignore NICK|MASK", minArguments: 1, summary: "show someone's messages again"),
        SlashCommand(name: "clear", usage: "/clear", minArguments: 0, summary: "clear this conversation's lines"),
        SlashCommand(name: "close", usage: "/close", minArguments: 0, summary: "close this conversation (leaving the room first)"),
        SlashCommand(name: "send", usage: "/send [-p] NICK PATH", minArguments: 2, summary: "offer a file (DCC SEND; -p: passive, for a sender behind NAT)"),
        SlashCommand(name: "upload", usage: "/upload [PATH]", minArguments: 0, summary: "send a file through the host and share its link here (alone: the last /send nobody could take)"),
        SlashCommand(name: "download", usage: "/download N", minArguments: 1, summary: "fetch file N shared through the host into the downloads folder"),
        SlashCommand(name: "accept", usage: "/accept [ID]", minArguments: 0, summary: "take a file offered to you (the newest by default)"),
        SlashCommand(name: "reject", usage: "/reject [ID]", minArguments: 0, summary: "refuse a file offered to you"),
        SlashCommand(name: "transfers", usage: "/transfers", minArguments: 0, summary: "list file transfers"),
        SlashCommand(name: "cancel", usage: "/cancel ID|NICK", minArguments: 0, summary: "stop a file transfer, or give up on messages held for someone"),
        SlashCommand(name: "send-held", usage: "/send-held [NICK]", minArguments: 0, summary: "send what is held for NICK to whoever has the nickname now (asked when it may be someone else)"),
        SlashCommand(name: "disconnect", usage: "/disconnect [NETWORK]", minArguments: 0, summary: "close the connection (the shown network's, or NETWORK's), stay in the program"),
        SlashCommand(name: "reconnect", usage: "/reconnect", minArguments: 0, summary: "connect again now"),
        SlashCommand(name: "connect", usage: "/connect HOST[:PORT]|NETWORK", minArguments: 1, summary: "join another network as well (or connect a network again)"),
        SlashCommand(name: "network", usage: "/network [NAME]", minArguments: 0, summary: "show that network; alone: list the networks and their state"),
        SlashCommand(name: "highlights", usage: "/highlights", minArguments: 0, summary: "the lines that named you or a highlight word, in every room (Up/Down, Enter opens one, Esc closes)"),
        SlashCommand(name: "window", usage: "/window [N|NAME|next|prev|move N|list|close]", minArguments: 0, summary: "go to conversation N (the sidebar's numbers; Alt-1…Alt-0 too) or the one called NAME; move N renumbers the one in view; alone: the list"),
        SlashCommand(name: "buffer", usage: "/buffer [N|NAME|move N|list|close]", minArguments: 0, summary: "the same as /window (WeeChat's name)"),
        SlashCommand(name: "scroll", usage: "/scroll end|top", minArguments: 1, summary: "back to the newest line (Alt-End), or to the oldest loaded (Alt-Home)"),
        SlashCommand(name: "quit", usage: "/quit [REASON]", minArguments: 0, summary: "leave and restore the terminal"),
    ]

    public static func named(_ name: String) -> SlashCommand? {
        let name = aliases[name.lowercased()] ?? name.lowercased()
        if let exact = all.first(where: { $0.name == name }) { return exact }
        // A prefix of one command only is that command (`/win`, `/notic`), as irssi takes them.
        let matching = starting(name)
        return matching.count == 1 ? matching[0] : nil
    }

    /// The commands whose name starts so (none for an empty prefix).
    public static func starting(_ prefix: String) -> [SlashCommand] {
        prefix.isEmpty ? [] : all.filter { $0.name.hasPrefix(prefix.lowercased()) }
    }

    /// irssi's and WeeChat's short forms, for the fingers that type them.
    public static let aliases: [String: String] = ["j": "join", "q": "query", "m": "msg", "w": "whois", "leave": "part", "bye": "quit", "exit": "quit"]

    public static var completions: [String] { all.map { "/" + $0.name } }
}

/// The shortcodes a reaction may be typed as (`:+1:`), and the emoji picker's choices.
public enum Shortcodes {
    public static let common: [(code: String, emoji: String)] = [
        (":+1:", "👍"), (":heart:", "❤️"), (":joy:", "😂"), (":tada:", "🎉"), (":eyes:", "👀"), (":pray:", "🙏"),
        (":-1:", "👎"), (":smile:", "😄"), (":thinking:", "🤔"), (":fire:", "🔥"), (":ok:", "👌"), (":rocket:", "🚀"),
    ]

    /// The emoji a shortcode stands for; anything else as typed.
    public static func emoji(for typed: String) -> String {
        common.first { $0.code == typed.lowercased() }?.emoji ?? typed
    }
}
