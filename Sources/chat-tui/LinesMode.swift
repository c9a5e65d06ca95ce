#if canImport(Glibc)
import Glibc
#endif
import Foundation
import ChatClientKit
import IRCWire

/// `--lines`: the ChatClient without curses. Events print one per line on stdout; lines typed
/// on stdin go to the room (or `/msg NICK text`, `/me`, `/join`, `/nick`, `/quit`).
enum LinesMode {
    static func run(_ config: ClientConfig) async -> Int32 {
        let client = ChatClient(config: config)
        await client.start()
        let input = Task { await readInput(into: client) }
        var exitCode: Int32 = 0
        for await event in client.events {
            if let text = describe(event) { writeLine(text, to: 1) }
            if case .status(.stopped(let reason)) = event {
                // Stopping because the user asked is success; a refusal (password, ban) is not.
                if reason != "you quit" && reason != "disconnected by you" { exitCode = 1 }
                break
            }
        }
        input.cancel()
        return exitCode
    }

    /// Reads stdin on its own thread (a blocking read) and hands each line to the client.
    static func readInput(into client: ChatClient) async {
        let lines = AsyncStream<String?> { continuation in
            let thread = Thread {
                while let line = readLine(strippingNewline: true) { continuation.yield(line) }
                continuation.yield(nil)
                continuation.finish()
            }
            thread.start()
        }
        // The room plain lines go to: the one last joined with /join, else the first we are in.
        // It outlives an outage (the rooms are "left" then), so lines typed offline are held
        // for it and sent after the reconnect, as the client's offline queue promises.
        var current = CurrentRoom()
        for await line in lines {
            guard let line else {
                await client.quit(reason: "end of input")
                return
            }
            await handle(line, client: client, current: &current)
        }
    }

    /// The room plain lines go to, and whether we have been seen in it (a /join not yet
    /// answered counts: a line typed right after `/join #dev` is for #dev).
    struct CurrentRoom {
        var name: String?
        var seenJoined = false

        /// Where a plain line goes now: the current room while we are in it, while its JOIN is
        /// pending, or while offline (the line is then held for it); after a KICK, the first room.
        mutating func target(_ state: ClientState) -> String? {
            let joined = state.joinedRooms
            if let name {
                let inIt = joined.contains { state.key(for: $0) == state.key(for: name) }
                if inIt { seenJoined = true }
                if inIt || !state.isRegistered || !seenJoined { return name }
            }
            // Offline before any line was typed: the first room we were in (its line is held).
            name = joined.first ?? (state.isRegistered ? nil : state.rooms.first?.name)
            seenJoined = !joined.isEmpty
            return name
        }
    }

    static func handle(_ line: String, client: ChatClient, current: inout CurrentRoom) async {
        let state = await client.state
        guard !line.trimmingCharacters(in: .whitespaces).isEmpty else { return }
        guard line.hasPrefix("/") && !line.hasPrefix("//") else {
            let text = line.hasPrefix("//") ? String(line.dropFirst()) : line
            guard let room = current.target(state) else {
                writeLine("-!- not in a room yet: \"\(PlainText.visible(text))\" not sent (/join #room first, or /msg NICK text)", to: 2)
                return
            }
            await client.send(text, to: room)
            return
        }
        let parts = line.dropFirst().split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true).map(String.init)
        let command = parts.first?.lowercased() ?? ""
        switch (command, parts.count) {
        case ("msg", 3):
            if state.isMe(parts[1]) {
                writeLine("-!- that is you: message not sent", to: 2)
            } else {
                await client.send(parts[2], to: parts[1])
            }
        case ("me", _) where parts.count >= 2:
            let text = line.dropFirst(4)
            guard let room = current.target(state) else {
                writeLine("-!- not in a room yet: \"* \(PlainText.visible(String(text)))\" not sent", to: 2)
                return
            }
            await client.send(String(text), to: room, isAction: true)
        case ("join", 2):
            // Plain lines go to the room joined last, as in irssi's window for it.
            current = CurrentRoom(name: parts[1].split(separator: ",").last.map(String.init))
            await client.sendCommand(IRCMessage("JOIN", parts[1]))
        case ("part", _) where parts.count >= 2:
            let parted = Set(parts[1].split(separator: ",").map { state.key(for: String($0)) })
            if let room = current.name, parted.contains(state.key(for: room)) { current = CurrentRoom() }
            await client.sendCommand(IRCMessage("PART", parts[1]))
        case ("nick", 2):
            await client.sendCommand(IRCMessage("NICK", parts[1]))
        case ("quit", _):
            let reason = parts.count > 1 ? parts.dropFirst().joined(separator: " ") : "Leaving"
            await client.quit(reason: reason)
        case ("send", _) where parts.count >= 3:
            let passive = parts[1] == "-p"
            let rest = line.dropFirst(6).drop(while: { $0 == " " })
            let afterFlag = passive ? rest.dropFirst(2).drop(while: { $0 == " " }) : rest
            let nick = String(afterFlag.prefix(while: { $0 != " " }))
            let path = String(afterFlag.dropFirst(nick.count).drop(while: { $0 == " " }))
            guard !nick.isEmpty, !path.isEmpty else { writeLine("-!- usage: /send [-p] NICK PATH", to: 2); return }
            await client.sendFile(path, to: nick, passive: passive)
        case ("accept", _):
            await client.acceptTransfer(parts.count > 1 ? Int(parts[1]) : nil)
        case ("reject", _):
            await client.rejectTransfer(parts.count > 1 ? Int(parts[1]) : nil)
        case ("cancel", 2):
            if let id = Int(parts[1]) { await client.cancelTransfer(id) }
        case ("transfers", _):
            await client.listTransfers()
        case ("quote", _) where parts.count >= 2:
            if let message = try? IRCMessage(parsing: String(line.dropFirst(7))) { await client.sendCommand(message) }
        default:
            writeLine("-!- unknown command or wrong arguments: \(line) (try /msg NICK text, /me, /join, /part, /nick, /send NICK PATH, /accept, /reject, /transfers, /cancel ID, /quit)", to: 2)
        }
    }

    static func clock(_ time: Double) -> String {
        let formatted = ServerTime.format(time)
        // HH:MM:SS in UTC from the ISO form.
        let start = formatted.index(formatted.startIndex, offsetBy: 11)
        return String(formatted[start..<formatted.index(start, offsetBy: 8)])
    }

    /// One event as a line for the terminal: everything in it made visible once, here, whatever
    /// part of it came from the network (a nickname in "registered as", an ERROR reason, a 432).
    static func describe(_ event: ClientEvent) -> String? {
        describeRaw(event).map(PlainText.visible)
    }

    static func describeRaw(_ event: ClientEvent) -> String? {
        let now = Date().timeIntervalSince1970
        switch event {
        case .status(let status):
            let text: String
            switch status {
            case .connecting(let host, let port, let attempt):
                text = "connecting to \(host) port \(port)" + (attempt > 1 ? " (attempt \(attempt))" : "")
            case .connected: text = "connected, registering"
            case .registered(let nick): text = "registered as \(nick)"
            case .disconnected(let reason): text = "disconnected: \(reason)"
            case .reconnecting(let seconds, _): text = String(format: "reconnecting in %.1f s", seconds)
            case .stopped(let reason): text = "stopped: \(reason)"
            }
            return "\(clock(now)) -!- \(text)"
        case .nickInUse(let taken, let next):
            return "\(clock(now)) -!- nickname \(PlainText.visible(taken)) is taken, trying \(next)"
        case .nickChanged(_, let new):
            return "\(clock(now)) -!- you are now \(new)"
        case .line(let conversation, let line):
            let text = PlainText.visible(line.text)
            let sender = PlainText.visible(line.sender ?? "")
            let place = "[\(PlainText.visible(conversation))]"
            switch line.kind {
            case .message where line.isPending: return "\(clock(line.time)) \(place) <\(sender)> \(text) (held: sent when the connection is back)"
            case .message: return "\(clock(line.time)) \(place) <\(sender)> \(text)"
            case .action: return "\(clock(line.time)) \(place) * \(sender) \(text)"
            case .notice: return "\(clock(line.time)) \(place) -\(sender)- \(text)"
            case .error: return "\(clock(line.time)) \(place) !!! \(text)"
            case .transfer: return "\(clock(line.time)) \(place) -*- \(text)"
            default: return "\(clock(line.time)) \(place) -!- \(text)"
            }
        case .error(let text):
            return "\(clock(now)) !!! \(PlainText.visible(text))"
        case .notSent(let target, let text, let reason):
            return "\(clock(now)) !!! not sent to \(target): \(PlainText.visible(text)) (\(reason))"
        case .roomListReady(let count):
            return "\(clock(now)) -!- \(count) rooms listed"
        case .membersChanged, .topicChanged, .conversationOpened, .lag, .renamed:
            return nil
        }
    }
}
