import ChatClientKit
import IRCWire

/// What a command needs to know of where it was typed.
public struct CommandContext: Sendable {
    /// The conversations as the typing side sees them.
    public var book: ConversationBook
    /// Where answers and errors go: the conversation in view.
    public var here: ConversationID
    /// The room room commands (/topic, /kick, /part) act on.
    public var room: String?
    /// Where /me goes: the conversation in view, or the person picked ("" for the server window).
    public var target: String
    /// Registered at least once (our name is known).
    public var registered: Bool
    /// Lines /help adds after the command table (the screen's keys, the host's join hint).
    public var extraHelp: [String]
    /// The time now (seconds since 1970), for what a command stamps (/ctcp PING).
    public var now: Double = 0

    public init(book: ConversationBook, here: ConversationID, room: String?, target: String, registered: Bool, extraHelp: [String] = []) {
        self.book = book
        self.here = here
        self.room = room
        self.target = target
        self.registered = registered
        self.extraHelp = extraHelp
    }
}

/// The one interpreter of `/commands`, shared by the chat screen and the line mode: the table
/// (`SlashCommands`) gives usage and arity, checked here once; each command becomes
/// `UICommand`s for the shell, and refusals become notes where the command was typed.
public enum CommandInterpreter {
    /// The commands a line means, in order; refusals and usage errors are notes in `here`.
    public static func run(_ line: String, _ context: CommandContext) -> [UICommand] {
        let state = context.book, here = context.here, room = context.room, target = context.target
        let body = line.dropFirst()
        let name = String(body.prefix(while: { $0 != " " }))
        let rest = body.dropFirst(name.count).drop(while: { $0 == " " })
        let words = rest.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        guard let command = SlashCommands.named(name) else {
            let matching = SlashCommands.starting(name).map { "/" + $0.name }
            if matching.count > 1 {
                return [.note("/\(name) could be \(matching.joined(separator: ", ")): type more of it", conversation: here, isError: true)]
            }
            return [.note("Unknown command /\(name): /help lists the commands", conversation: here, isError: true)]
        }
        guard words.count >= command.minArguments else {
            return [.note("Usage: \(command.usage) — \(command.summary)", conversation: here, isError: true)]
        }
        switch command.name {
        case "help":
            // `/help COMMAND`: that command's line, the same words its man page entry has.
            if let asked = words.first {
                guard let one = SlashCommands.named(String(asked.drop { $0 == "/" })) else {
                    return [.note("No command /\(asked.drop { $0 == "/" }); /help lists them", conversation: here, isError: true)]
                }
                return [.note(one.usage + "  " + one.summary, conversation: here, isError: false)]
            }
            let width = SlashCommands.all.map(\.usage.count).max() ?? 0
            let commands = SlashCommands.all.map { cmd -> UICommand in
                .note(cmd.usage + String(repeating: " ", count: width - cmd.usage.count + 2) + cmd.summary, conversation: here, isError: false)
            }
            return commands + context.extraHelp.map { .note($0, conversation: here, isError: false) }
        case "msg":
            let text = String(rest.drop(while: { $0 != " " }).dropFirst())
            return send(text, to: words[0], isAction: false, context)
        case "query":
            guard !state.isMe(words[0]) else { return [.note("That is you", conversation: here, isError: true)] }
            guard !state.isChannel(words[0]) else { return [.note("\(words[0]) is a room: /join \(words[0])", conversation: here, isError: true)] }
            // `/query bob hello` opens it and says hello there (as irssi's and WeeChat's do).
            let text = String(rest.drop(while: { $0 != " " }).dropFirst())
            let opened: [UICommand] = [.open(words[0]), .show(.direct(state.key(for: words[0])))]
            return text.isEmpty ? opened : opened + send(text, to: words[0], isAction: false, context)
        case "me":
            return send(String(rest), to: target, isAction: true, context)
        case "notice":
            let text = String(rest.drop(while: { $0 != " " }).dropFirst())
            if let reason = refusal(sendingTo: words[0], context) { return [.note(reason, conversation: here, isError: true)] }
            return [.irc(IRCMessage("NOTICE", words[0], text))]
        case "ctcp":
            let verb = words[1].uppercased()
            guard verb != "ACTION", verb.allSatisfy({ $0.isLetter || $0.isNumber }) else {
                return [.note("Usage: \(command.usage) (/me for an action)", conversation: here, isError: true)]
            }
            // PING carries the time it was asked in milliseconds: the answer gives it back.
            let argument = verb == "PING" ? " \(Int((context.now * 1000).rounded()))" : words.dropFirst(2).map { " " + $0 }.joined()
            return [.irc(IRCMessage("PRIVMSG", words[0], "\u{1}\(verb)\(argument)\u{1}"))]
        case "lastlog":
            return [.lastlog(words)]
        case "nick":
            if let problem = IRCNames.nickProblem(words[0], maxBytes: state.isupport.nickLength ?? 30) {
                return [.note("\(words[0]): \(problem)", conversation: here, isError: true)]
            }
            return [.irc(IRCMessage("NICK", words[0]))]
        case "join":
            // `/join dev` means #dev (as irssi's does): a name without a room prefix gets one.
            let rooms = words[0].split(separator: ",").map { state.isChannel(String($0)) ? String($0) : "#" + $0 }.joined(separator: ",")
            // Already in it: go there (irssi and WeeChat switch to the window).
            if let room = state.conversation(rooms), room.kind == .room, room.isJoined {
                return [.show(room.id)]
            }
            return [.irc(IRCMessage(command: "JOIN", params: [rooms] + words.dropFirst().prefix(1)))]
        case "part":
            let named = words.first.map { state.isChannel($0) } ?? false
            guard let which = named ? words[0] : room else {
                return [notInRoom("/part #ROOM", here)]
            }
            let reason = words.dropFirst(named ? 1 : 0).joined(separator: " ")
            return [.irc(IRCMessage(command: "PART", params: reason.isEmpty ? [which] : [which, reason]))]
        case "topic":
            // `/topic #dev [TEXT]` names the room (irssi's form); else the room here.
            let named = words.first.map { state.isChannel($0) } ?? false
            guard let which = named ? words[0] : room else {
                return [notInRoom("/topic #ROOM [TEXT]", here)]
            }
            let text = named ? String(rest.dropFirst(words[0].count).drop(while: { $0 == " " })) : String(rest)
            return [.irc(IRCMessage(command: "TOPIC", params: text.isEmpty ? [which] : [which, text]))]
        case "away":
            return [.irc(IRCMessage(command: "AWAY", params: rest.isEmpty ? [] : [String(rest)]))]
        case "whois":
            // `/whois bob bob` (irssi's /wii): asked of bob's own server, which knows the idle time.
            return [.irc(IRCMessage(command: "WHOIS", params: Array(words.prefix(2))))]
        case "names":
            let named = words.first.map { state.isChannel($0) } ?? false
            guard let which = named ? words[0] : room else {
                return [notInRoom("/names #ROOM", here)]
            }
            guard let conversation = state.conversation(which), conversation.kind == .room, conversation.isJoined else {
                // Not one of ours: the server's NAMES answers (as irssi asks it).
                return [.irc(IRCMessage("NAMES", which))]
            }
            let names = conversation.sortedMembers().map { $0.highestPrefix + $0.nick }
            let people = names.count == 1 ? "1 person" : "\(names.count) people"
            return [.note("\(conversation.name): \(people): " + names.joined(separator: " "), conversation: here, isError: false)]
        case "kick", "ban", "unban", "op", "deop", "voice", "devoice":
            // `/kick #dev bob`, `/op #dev bob` name the room (irssi's and WeeChat's form); else the room here.
            if state.isChannel(words[0]) {
                guard words.count >= 2 else { return [.note("Usage: \(command.usage) — \(command.summary)", conversation: here, isError: true)] }
                let after = String(rest.dropFirst(words[0].count).drop(while: { $0 == " " }))
                return operatorCommand(command.name, room: words[0], words: Array(words.dropFirst()), rest: after)
            }
            guard let room else {
                let shape = command.usage.split(separator: " ").dropFirst(2).joined(separator: " ")
                return [notInRoom("/\(command.name) #ROOM \(shape)", here)]
            }
            return operatorCommand(command.name, room: room, words: words, rest: String(rest))
        case "register":
            // ChanServ answers in a NOTICE: what it did, or why not.
            guard let which = words.first ?? room else {
                return [notInRoom("/register #ROOM", here)]
            }
            return [.note("Asking ChanServ to register \(which)…", conversation: here, isError: false),
                    .irc(IRCMessage("PRIVMSG", "ChanServ", "REGISTER \(which)"))]
        case "invite":
            guard let into = words.count > 1 ? words[1] : room else {
                return [notInRoom("/invite NICK #ROOM", here)]
            }
            return [.irc(IRCMessage("INVITE", words[0], into))]
        case "mode":
            // `/mode +i`: the room in view; `/mode alice +i`, `/mode #dev -k *`: that target.
            let first = words.first ?? ""
            let named = !first.isEmpty && !first.hasPrefix("+") && !first.hasPrefix("-")
            guard let target = named ? first : room else {
                return [notInRoom("/mode #ROOM +MODES", here)]
            }
            return [.irc(IRCMessage(command: "MODE", params: [target] + words.dropFirst(named ? 1 : 0)))]
        case "list":
            return [.awaitRoomList, .irc(IRCMessage(command: "LIST", params: words.prefix(1).map { $0 }))]
        case "search":
            return [.search(words)]
        case "ignore":
            return [.ignore(words.first)]
        case "unignore":
            return [.unignore(words[0])]
        case "reply", "react", "unreact", "delete":
            guard let number = Int(words[0].filter { $0 != "[" && $0 != "]" }), let reference = state.references[number],
                  let conversation = state[reference.conversation] else {
                return [.note("No message [\(words[0])]: the numbers are those shown before messages in --lines", conversation: here, isError: true)]
            }
            let text = String(rest.drop(while: { $0 != " " }).dropFirst())
            return messageAction(command.name, on: reference.msgid, in: conversation.name, text: text, context)
        case "set":
            let value = words.isEmpty ? nil : String(rest.dropFirst(words[0].count).drop(while: { $0 == " " }))
            if words.first?.lowercased() == "display-name" {
                let name = value ?? ""
                return [.irc(IRCMessage(command: "METADATA", params: ["*", "SET", "display-name"] + (name.isEmpty ? [] : [name])))]
            }
            if words.first == "-default" {
                guard words.count == 2 else { return [.note("Usage: /set -default NAME", conversation: here, isError: true)] }
                return [.setting(name: words[1], value: nil, reset: true)]
            }
            return [.setting(name: words.first, value: value?.isEmpty == true ? nil : value, reset: false)]
        case "save":
            return [.saveSettings]
        case "reload":
            return [.reloadSettings]
        case "alias":
            let expansion = words.isEmpty ? nil : String(rest.dropFirst(words[0].count).drop(while: { $0 == " " }))
            return [.alias(name: words.first, expansion: expansion?.isEmpty == true ? nil : expansion)]
        case "unalias":
            return [.unalias(words[0])]
        case "highlights":
            return [.showHighlights]
        case "window", "buffer":
            return [.window(words)]
        case "scroll":
            guard ["end", "top", "bottom", "home"].contains(words[0].lowercased()) else { return [.note("Usage: \(command.usage)", conversation: here, isError: true)] }
            return [.scroll(toEnd: ["end", "bottom"].contains(words[0].lowercased()))]
        case "quote":
            guard let message = try? IRCMessage(parsing: String(rest)) else {
                return [.note("Not an IRC line: \(rest)", conversation: here, isError: true)]
            }
            return [.irc(message)]
        case "clear":
            return [.clear(here)]
        case "close":
            guard let viewed = state[here], viewed.kind != .server else {
                return [.note("The server window stays open; /close closes a room or a direct conversation", conversation: here, isError: true)]
            }
            // A room still joined is left first, as irssi's /window close (/wc) does.
            if viewed.kind == .room && (viewed.isJoined || viewed.awaitingRejoin) {
                return [.irc(IRCMessage(command: "PART", params: [viewed.name])), .close(here)]
            }
            return [.close(here)]
        case "send":
            let passive = words[0] == "-p"
            let nick = passive ? words[1] : words[0]
            let pathStart = passive ? 2 : 1
            guard words.count > pathStart else { return [.note("Usage: \(command.usage)", conversation: here, isError: true)] }
            // The path is the rest of the line, spaces and all.
            var remainder = Substring(rest)
            for _ in 0..<pathStart { remainder = remainder.drop(while: { $0 != " " }).drop(while: { $0 == " " }) }
            let path = String(remainder).expandingTilde()
            if state.isMe(nick) { return [.note("That is you: pick someone else to send a file to", conversation: here, isError: true)] }
            return [.sendFile(path: path, to: nick, passive: passive)]
        case "upload":
            let path = String(rest.drop { $0 == " " }).expandingTilde()
            if !path.isEmpty && target.isEmpty {
                return [.note("Pick a room or a person to share the file with, then /upload", conversation: here, isError: true)]
            }
            return [.uploadFile(path: path, to: target)]
        case "download":
            guard let number = words.first.flatMap({ Int($0.trimmingPrefix("#")) }) else {
                return [.note("Usage: \(command.usage)", conversation: here, isError: true)]
            }
            return [.downloadShared(number)]
        case "accept", "reject":
            let id = words.first.flatMap { Int($0.trimmingPrefix("#")) }
            if !words.isEmpty && id == nil { return [.note("Usage: \(command.usage)", conversation: here, isError: true)] }
            return [command.name == "accept" ? .acceptTransfer(id) : .rejectTransfer(id)]
        case "transfers":
            return [.listTransfers]
        case "cancel":
            // A number is a transfer; a name (or nothing, in a direct conversation) is the
            // person whose held messages are given up.
            if let word = words.first, let id = Int(word.trimmingPrefix("#")) { return [.cancelTransfer(id)] }
            if let nick = words.first { return [.cancelHeld(nick)] }
            if here.kind == .direct, let name = state[here]?.name { return [.cancelHeld(name)] }
            return [.note("Usage: \(command.usage)", conversation: here, isError: true)]
        case "send-held":
            if let nick = words.first { return [.sendHeld(nick)] }
            if here.kind == .direct, let name = state[here]?.name { return [.sendHeld(name)] }
            return [.note("Usage: \(command.usage)", conversation: here, isError: true)]
        case "disconnect":
            return words.isEmpty ? [.disconnect] : [.disconnectNetwork(words[0])]
        case "connect":
            return [.connect(words[0])]
        case "network":
            return [.network(words.first)]
        case "reconnect":
            return [.reconnect]
        case "quit":
            return [.quit(reason: rest.isEmpty ? "Leaving" : String(rest))]
        default:
            return []
        }
    }

    /// Why a message to `target` cannot be sent from here, or nil when it can.
    public static func refusal(sendingTo target: String, _ context: CommandContext) -> String? {
        let state = context.book
        if !context.registered { return "Not connected yet: your name is not set, so nothing was sent" }
        if target.isEmpty { return "This is the server window: pick a room or a person (Up/Down, or Alt-1…9) to send a message" }
        if state.isMe(target) { return "That is you: pick someone else to send a message to" }
        if let room = state.conversation(target), room.kind == .room, !room.isJoined, !room.awaitingRejoin {
            return "You are not in \(room.name): /join \(room.name) to talk there"
        }
        return nil
    }

    /// A reply, a reaction (given or taken back) or a deletion of the message `msgid` said in `target`.
    public static func messageAction(_ name: String, on msgid: String, in target: String, text: String, _ context: CommandContext) -> [UICommand] {
        switch name {
        case "reply":
            if let reason = refusal(sendingTo: target, context) { return [.note(reason, conversation: context.here, isError: true)] }
            return [.reply(text: text, to: target, parent: msgid)]
        case "react", "unreact":
            let emoji = Shortcodes.emoji(for: text.split(separator: " ").first.map(String.init) ?? "")
            guard !emoji.isEmpty, emoji.count <= 4 else { return [.note("React with one emoji or a shortcode like :+1:", conversation: context.here, isError: true)] }
            let tag = name == "react" ? "+draft/react" : "+draft/unreact"
            return [.irc(IRCMessage(tags: [IRCTag(tag, emoji), IRCTag("+draft/reply", msgid)], command: "TAGMSG", params: [target]))]
        default:
            return [.irc(IRCMessage(command: "REDACT", params: [target, msgid]))]
        }
    }

    static func send(_ text: String, to target: String, isAction: Bool, _ context: CommandContext) -> [UICommand] {
        if let reason = refusal(sendingTo: target, context) { return [.note(reason, conversation: context.here, isError: true)] }
        return [isAction ? .action(text: text, to: target) : .send(text: text, to: target)]
    }

    /// KICK and the membership and ban modes, as IRC lines for `room`. Several nicknames go in
    /// lines of four changes each (every server takes at least four per MODE).
    /// A room command typed where there is no room (a direct conversation, the server window),
    /// with no room named: what to type instead. `form` is the command with its room.
    static func notInRoom(_ form: String, _ here: ConversationID) -> UICommand {
        .note("Not in a room here: \(form), or go to the room", conversation: here, isError: true)
    }

    static func operatorCommand(_ name: String, room: String, words: [String], rest: String) -> [UICommand] {
        switch name {
        case "kick":
            let reason = String(rest.drop(while: { $0 != " " }).drop(while: { $0 == " " }))
            return [.irc(IRCMessage(command: "KICK", params: reason.isEmpty ? [room, words[0]] : [room, words[0], reason]))]
        case "ban", "unban":
            // A bare nickname bans that nickname wherever it comes from.
            let mask = words[0].contains("!") || words[0].contains("@") ? words[0] : words[0] + "!*@*"
            return [.irc(IRCMessage("MODE", room, (name == "ban" ? "+b" : "-b"), mask))]
        default:
            let sign = name.hasPrefix("de") ? "-" : "+"
            let letter = name.hasSuffix("op") ? "o" : "v"
            return stride(from: 0, to: words.count, by: 4).map { start in
                let nicks = Array(words[start..<min(start + 4, words.count)])
                return .irc(IRCMessage(command: "MODE", params: [room, sign + String(repeating: letter, count: nicks.count)] + nicks))
            }
        }
    }
}
