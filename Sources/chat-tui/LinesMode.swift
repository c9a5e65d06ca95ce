#if canImport(Glibc)
import Glibc
#endif
import ChatTransport
import ChatClientKit
import ChatUI
import IRCWire

/// `--lines`: the ChatClient without curses. Events print one per line on stdout; lines typed
/// on stdin go to the room (or `/msg NICK text`, `/me`, `/join`, `/nick`, `/quit`). With several
/// networks each line starts with `[network]`, and typed lines go to the current network's
/// client (`/network NAME` changes it).
enum LinesMode {
    static func run(_ networks: [(name: String, config: ClientConfig)], arguments: Arguments) async -> Int32 {
        let session = Session(arguments: arguments)
        let (events, sink) = AsyncStream.makeStream(of: (network: Int, event: ClientEvent).self)
        for network in networks { await session.add(name: network.name, config: network.config, events: sink) }
        let waiting = session.waiting
        let input = Task { await readInput(session, events: sink) }
        var exitCode: Int32 = 0
        var stopped = Set<Int>()
        for await (index, event) in events {
            waiting.taken()
            let (view, prefix) = await session.view(index)
            await view.apply(event)
            var event = event
            if !prefix.isEmpty, case .searchResults(let query, let hits, let failure) = event {
                // Every network is asked (they share one log): each lists the lines said on it.
                let key = await session.clients[index].network
                event = .searchResults(query: query, hits.filter { $0.network == key }, failure: failure)
            }
            var name: String?
            if case .line(let id, _) = event { name = id == .server ? "server" : await view.book[id]?.name }
            if case .typing(let id, _, _) = event { name = await view.book[id]?.name }
            // Messages are numbered ([12]) for /reply, /react and /delete; what refers to one names its number.
            let references = await view.book.referenceOf
            if let text = describe(event, name: name, references: references) { writeLine(prefix + text, to: 1) }
            guard case .status(let status) = event else { continue }
            if case .stopped(let reason) = status {
                // Stopping because the user asked is success; a refusal (password, ban) is not.
                if reason != "you quit" && reason != "disconnected by you" { exitCode = 1 }
                stopped.insert(index)
                // The run ends when every network has stopped.
                if stopped.count == (await session.count) { break }
            } else {
                stopped.remove(index)
            }
        }
        input.cancel()
        // The stop can be printed before /quit has written the log's last lines: they go in first.
        for client in await session.clients { await client.flushLog() }
        return exitCode
    }

    /// The networks of a line-mode run: one client and one view each, and the one typed
    /// lines go to.
    actor Session {
        let arguments: Arguments
        /// The networks' events waiting to be printed, as many as a client's own bound: a
        /// client whose lines come faster than they are printed is then no longer read.
        nonisolated let waiting = EventBacklog(bound: ChatClient.eventBound)
        var clients: [ChatClient] = []
        var views: [LineView] = []
        var names: [String] = []
        var current = 0

        init(arguments: Arguments) { self.arguments = arguments }

        var count: Int { clients.count }

        /// Starts a network's client; its events go to `events` with its index.
        func add(name: String, config: ClientConfig, events: AsyncStream<(network: Int, event: ClientEvent)>.Continuation) async {
            let client = ChatClient(config: config)
            let index = clients.count
            clients.append(client)
            views.append(LineView(nick: config.nick))
            names.append(name)
            await client.start()
            Task {
                for await event in client.events {
                    let waiting = self.waiting
                    await waiting.waitForRoom()
                    waiting.added()
                    events.yield((index, event))
                }
            }
        }

        /// A network's view and the prefix of its lines (none while there is one network).
        func view(_ index: Int) -> (LineView, String) {
            (views[index], clients.count > 1 ? "[\(PlainText.visible(names[index]))] " : "")
        }

        func typing() -> (ChatClient, LineView, String) {
            (clients[current], views[current], clients.count > 1 ? "[\(PlainText.visible(names[current]))] " : "")
        }

        func index(named word: String) -> Int? {
            NetworkView.index(named: word, names: names, keys: clients.map(\.network))
        }

        func select(_ index: Int) { current = index }

        /// `/network`: one line per network.
        func list() async -> [String] {
            var lines: [String] = []
            for (index, view) in views.enumerated() {
                lines.append(NetworkView.describe(name: names[index], key: clients[index].network, status: await view.status,
                                                  shown: index == current))
            }
            return lines
        }
    }

    /// The line mode's own view of the conversations, kept by applying the client's events
    /// (no lines kept: they are printed), and where plain lines go.
    actor LineView {
        var book: ConversationBook
        var registered = false
        var everRegistered = false
        var status: ConnectionStatus = .connecting(host: "", port: 0, attempt: 1)
        var current = CurrentRoom()

        init(nick: String) { book = ConversationBook(nick: nick, keepsLines: false) }

        func apply(_ event: ClientEvent) {
            book.apply(event)
            if case .status(let status) = event {
                self.status = status
                if case .registered = status { registered = true; everRegistered = true } else { registered = false }
            }
        }

        /// Where a plain line goes now.
        func target() -> String? { current.target(book, registered: registered) }

        func context() -> CommandContext {
            let room = current.name.flatMap { book.isChannel($0) ? $0 : nil } ?? book.joinedRooms.first
            let here = current.name.map { book.id(for: $0) }.flatMap { book[$0] != nil ? $0 : nil } ?? .server
            // Registered or not, a /msg is the client's to hold until it is (the offline queue).
            return CommandContext(book: book, here: here, room: room, target: target() ?? "", registered: true)
        }

        /// Plain lines go to the room joined last (as in irssi's window for it), or the person
        /// a /query named.
        func setCurrent(_ name: String?) { current = CurrentRoom(name: name) }

        func parted(_ rooms: String) {
            let parted = Set(rooms.split(separator: ",").map { book.key(for: String($0)) })
            if let room = current.name, parted.contains(book.key(for: room)) { current = CurrentRoom() }
        }
    }

    /// Reads stdin on its own thread (a blocking read) and hands each line to the client.
    static func readInput(_ session: Session, events: AsyncStream<(network: Int, event: ClientEvent)>.Continuation) async {
        let lines = AsyncStream<String?> { continuation in
            Threads.start(name: "chat-tui input") {
                while let line = readLine(strippingNewline: true) { continuation.yield(line) }
                continuation.yield(nil)
                continuation.finish()
            }
        }
        for await line in lines {
            guard let line else {
                await CommandRunner.quitAll(await session.clients, reason: "end of input")
                return
            }
            await handle(line, session: session, events: events)
        }
    }

    /// The room plain lines go to, and whether we have been seen in it (a /join not yet
    /// answered counts: a line typed right after `/join #dev` is for #dev). It outlives an
    /// outage (the rooms are "left" then), so lines typed offline are held for it and sent
    /// after the reconnect, as the client's offline queue promises.
    struct CurrentRoom {
        var name: String?
        var seenJoined = false

        /// Where a plain line goes now: the current room while we are in it, while its JOIN is
        /// pending, or while offline (the line is then held for it); after a KICK, the first room.
        mutating func target(_ book: ConversationBook, registered: Bool) -> String? {
            let joined = book.joinedRooms
            if let name {
                if !book.isChannel(name) { return name } // a /query
                let inIt = joined.contains { book.key(for: $0) == book.key(for: name) }
                if inIt { seenJoined = true }
                if inIt || !registered || !seenJoined { return name }
            }
            // Offline before any line was typed: the first room we were in (its line is held).
            name = joined.first ?? (registered ? nil : book.rooms.first?.name)
            seenJoined = !joined.isEmpty
            return name
        }
    }

    /// One typed line: plain text to the current room, `/commands` through the same
    /// interpreter as the chat screen, for the current network.
    static func handle(_ line: String, session: Session, events: AsyncStream<(network: Int, event: ClientEvent)>.Continuation) async {
        guard !line.trimmedOfWhitespace().isEmpty else { return }
        let (client, view, prefix) = await session.typing()
        let context = await view.context()
        let commands: [UICommand]
        if line.hasPrefix("/") && !line.hasPrefix("//") {
            commands = CommandInterpreter.run(line, context)
        } else {
            let text = line.hasPrefix("//") ? String(line.dropFirst()) : line
            guard let room = await view.target() else {
                writeLine(prefix + "-!- not in a room yet: \"\(PlainText.visible(text))\" not sent (/join #room first, or /msg NICK text)", to: 2)
                return
            }
            commands = [.send(text: text, to: room)]
        }
        var opened: String?
        for command in commands {
            switch command {
            case .open(let name):
                opened = name
            case .irc(let message) where message.command == "JOIN":
                await view.setCurrent(message.params.first?.split(separator: ",").last.map(String.init))
            case .irc(let message) where message.command == "PART":
                await view.parted(message.params.first ?? "")
            case .show(let id):
                let name = await view.book[id]?.name
                await view.setCurrent(name ?? opened ?? id.key)
            default:
                break
            }
            if case .search = command, await session.count > 1 {
                for other in await session.clients { _ = await CommandRunner.perform(command, on: other, typedIn: .server) }
                continue
            }
            if await CommandRunner.perform(command, on: client, typedIn: context.here) { continue }
            switch command {
            case .quit(let reason):
                await CommandRunner.quitAll(await session.clients, reason: reason)
            case .notify, .mouseReporting:
                break
            case .setting, .alias, .unalias, .saveSettings, .reloadSettings, .window, .scroll, .showHighlights, .lastlog:
                writeLine("\(clock(WallClock.now())) !!! /set, /alias, /save, /reload, /window and /scroll are the chat screen's (here: flags and the config file)", to: 1)
            case .network(nil):
                for text in await session.list() { writeLine("\(clock(WallClock.now())) -!- " + PlainText.visible(text), to: 1) }
            case .network(let word?), .disconnectNetwork(let word):
                guard let index = await session.index(named: word) else {
                    writeLine("\(clock(WallClock.now())) !!! no network \(PlainText.visible(word)) (/network lists them)", to: 1)
                    continue
                }
                if case .disconnectNetwork = command {
                    await session.clients[index].disconnect()
                } else {
                    await session.select(index)
                    writeLine("\(clock(WallClock.now())) -!- typing to \(PlainText.visible(await session.names[index]))", to: 1)
                }
            case .connect(let word):
                if let index = await session.index(named: word) {
                    await session.clients[index].reconnectNow()
                    continue
                }
                do {
                    let settings = try NetworkSettings.adding(word, to: await session.names)
                    await session.add(name: settings.name, config: clientConfig(session.arguments, network: settings, interactive: false), events: events)
                } catch {
                    writeLine("\(clock(WallClock.now())) !!! \(PlainText.visible(error.description))", to: 1)
                }
            default:
                break
            }
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
    static func describe(_ event: ClientEvent, name: String?, references: [String: Int] = [:]) -> String? {
        // Line by line: a multiline message's own newlines stay newlines; nothing else has any.
        describeRaw(event, name: name, references: references).map { $0.split(separator: "\n", omittingEmptySubsequences: false).map { PlainText.visible(String($0)) }.joined(separator: "\n") }
    }

    /// `name`: the display name of the conversation a line is for.
    static func describeRaw(_ event: ClientEvent, name: String?, references: [String: Int] = [:]) -> String? {
        func number(_ msgid: String?) -> String { msgid.flatMap { references[$0] }.map { "[\($0)]" } ?? "a message" }
        let now = WallClock.now()
        switch event {
        case .status(let status):
            let text: String
            switch status {
            case .connecting(let host, let port, let attempt):
                text = "connecting to \(host) port \(port)" + (attempt > 1 ? " (attempt \(attempt))" : "")
            case .connected: text = "connected, registering"
            case .registered(let nick): text = "registered as \(nick)"
            case .disconnected(let reason): text = "disconnected: \(reason)"
            case .reconnecting(let seconds, _): text = "reconnecting in \(seconds.fixed(1)) s"
            case .stopped(let reason): text = "stopped: \(reason)"
            }
            return "\(clock(now)) -!- \(text)"
        case .nickChanged(_, let new):
            return "\(clock(now)) -!- you are now \(new)"
        case .line(let conversation, let line):
            // The lines of a multiline message under the first, indented (each made visible on its own).
            let text = line.text.split(separator: "\n", omittingEmptySubsequences: false).map { PlainText.visible(String($0)) }.joined(separator: "\n    ")
            let sender = PlainText.visible(line.sender ?? "")
            var place = "[\(PlainText.visible(name ?? conversation.key))]"
            if let msgid = line.msgid, let reference = references[msgid] { place = "[\(reference)] " + place }
            if let parent = line.replyTo { place += " ↳ reply to \(number(parent)):" }
            if let by = line.deletedBy { return "\(clock(line.time)) \(place) (deleted by \(by))" }
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
        case .unknownCertificate:
            return nil // the stop that follows says what to do
        case .notSent(let target, let text, let reason):
            return "\(clock(now)) !!! not sent to \(target): \(PlainText.visible(text)) (\(reason))"
        case .roomList(let rooms):
            return "\(clock(now)) -!- \(rooms.count) rooms listed" + rooms.prefix(50).map { "\n  \($0.name) (\($0.users)) \($0.topic)" }.joined()
        case .searchResults(let query, _, let failure?):
            return "\(clock(now)) !!! could not search your log for \(PlainText.visible(query)): \(failure)"
        case .searchResults(let query, let hits, nil):
            return "\(clock(now)) -!- \(hits.count) lines with \(PlainText.visible(query))" + hits.prefix(50).map { hit in
                "\n  \(PlainText.visible(hit.name)) \(ServerTime.format(hit.line.time)) <\(PlainText.visible(hit.line.sender ?? ""))> \(PlainText.visible(hit.line.text))"
            }.joined()
        case .serverSearchResults:
            return nil // taken by the client, which merges it into its .searchResults
        case .reaction(_, let msgid, let emoji, let nick, let added):
            return "\(clock(now)) -!- \(nick) \(added ? "reacted" : "took back") \(emoji) \(added ? "to" : "from") \(number(msgid))"
        case .redacted(_, let msgid, let by):
            return "\(clock(now)) -!- \(number(msgid)) deleted by \(by)"
        case .typing(let conversation, let nick, let typing):
            guard let typing, !typing.paused else { return nil }
            return "\(clock(now)) [\(PlainText.visible(name ?? conversation.key))] -!- \(nick) is typing…"
        case .profile, .roomRenamed:
            return nil // the room's line says a rename; display names show in /whois
        case .renamed, .nickInUse, // the server window's line says it
             .transfer, .opened, .closed, .joined, .left, .connectionLost, .pendingDone, .members, .memberJoined,
             .memberLeft, .memberChanged, .topic, .modes, .markedRead, .unreadRestored, .readMarker, .cleared, .serverSupport, .away, .lag:
            return nil
        }
    }
}
