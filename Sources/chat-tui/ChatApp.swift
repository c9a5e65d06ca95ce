#if canImport(Glibc)
import Glibc
#endif
import Foundation
import ChatClientKit
import ChatUI
import CursesTerminal

/// The full-screen chat: wires a `ChatClient`, the `ChatModel` and the curses terminal on the
/// main actor. Keys, client events, timers and signals all arrive here as events; each is
/// applied to the model and the screen is redrawn (only changed cells reach the terminal).
@MainActor
final class ChatApp {
    let client: ChatClient
    let terminal = CursesTerminal()
    var model: ChatModel
    var screen: Screen
    var renderPending = false
    var finished: CheckedContinuation<Int32, Never>?
    var sources: [any DispatchSourceProtocol] = []
    var commands: AsyncStream<UICommand>.Continuation?
    var quitting = false

    init(client: ChatClient, options: Arguments, hostHint: [String] = []) {
        self.client = client
        model = ChatModel(state: ClientState(nick: client.config.nick), width: 80, height: 24)
        model.hostHint = hostHint
        model.bellEnabled = options.bell
        model.showSeconds = options.timestampSeconds
        var now = time(nil)
        var local = tm()
        localtime_r(&now, &local)
        model.utcOffset = local.tm_gmtoff
        screen = Screen(width: 80, height: 24)
    }

    func run() async -> Int32 {
        terminal.start()
        let (width, height) = terminal.size
        _ = model.update(.resize(width: width, height: height))
        model.now = Date().timeIntervalSince1970
        watchInput()
        watchSignals()
        startCommandQueue()
        // The host's screen says first of all how others join.
        for line in model.hostHint { commands?.yield(.note(line, conversation: "server", isError: false)) }
        await client.start()
        Task { @MainActor in
            for await event in client.events {
                self.handle(.client(event))
            }
        }
        let timer = DispatchSource.makeTimerSource(queue: .main)
        // Four ticks a second: countdowns and transfer progress stay current without flooding.
        timer.schedule(deadline: .now() + 0.25, repeating: 0.25)
        timer.setEventHandler { [weak self] in
            MainActor.assumeIsolated {
                guard let self else { return }
                let transfers = self.client.transfers.snapshot()
                if !transfers.isEmpty || self.model.reconnectAt != nil {
                    self.model.transfers = Dictionary(uniqueKeysWithValues: transfers.map { ($0.id, $0) })
                    self.handle(.tick(now: Date().timeIntervalSince1970))
                } else if (self.model.viewedConversation?.unread ?? 0) > 0 {
                    // The selection resting on unread lines marks them read after a second.
                    self.handle(.tick(now: Date().timeIntervalSince1970))
                } else {
                    self.model.now = Date().timeIntervalSince1970
                }
            }
        }
        timer.resume()
        sources.append(timer)
        render()
        let code = await withCheckedContinuation { self.finished = $0 }
        for source in sources { source.cancel() }
        terminal.shutdown()
        return code
    }

    func handle(_ event: UIEvent) {
        for command in model.update(event) { commands?.yield(command) }
        scheduleRender()
    }

    /// Commands run one after another, in the order the keys produced them.
    func startCommandQueue() {
        let (stream, continuation) = AsyncStream.makeStream(of: UICommand.self)
        commands = continuation
        Task { @MainActor in
            for await command in stream { await self.perform(command) }
        }
    }

    func perform(_ command: UICommand) async {
        switch command {
        case .send(let text, let target): await client.send(text, to: target)
        case .action(let text, let target): await client.send(text, to: target, isAction: true)
        case .irc(let message):
            let here = model.viewedConversation.map { $0.kind == .server ? ClientState.serverKey : $0.name }
            await client.sendCommand(message, replyIn: here)
        case .ignore(let mask):
            let here = model.viewedConversation.map { $0.kind == .server ? ClientState.serverKey : $0.name } ?? ClientState.serverKey
            guard let mask else {
                let list = await client.ignoreMasks
                await client.note(list.isEmpty ? "Nobody is ignored" : "Ignored: " + list.joined(separator: " "), in: here, isError: false)
                return
            }
            guard let list = await client.ignore(mask) else {
                await client.note("\(mask) is not a nickname or a nick!user@host mask", in: here)
                return
            }
            persistIgnores(list)
            await client.note("Ignoring \(list.last ?? mask): their messages are hidden (/unignore to undo)", in: here, isError: false)
        case .unignore(let mask):
            let here = model.viewedConversation.map { $0.kind == .server ? ClientState.serverKey : $0.name } ?? ClientState.serverKey
            let list = await client.unignore(mask)
            persistIgnores(list)
            await client.note("No longer ignoring \(mask)", in: here, isError: false)
        case .note(let text, let conversation, let isError):
            await client.note(text, in: conversation == "server" ? ClientState.serverKey : conversation, isError: isError)
        case .markRead(let conversation): await client.markRead(conversation)
        case .clear(let conversation): await client.clear(conversation)
        case .open(let conversation): await client.openConversation(conversation)
        case .close(let conversation): await client.closeConversation(conversation)
        case .disconnect: await client.disconnect()
        case .reconnect: await client.reconnectNow()
        case .quit(let reason): await quit(reason: reason)
        case .bell: terminal.bell()
        case .redraw: terminal.forceRedraw()
        case .sendFile(let path, let nick, let passive): await client.sendFile(path, to: nick, passive: passive)
        case .acceptTransfer(let id): await client.acceptTransfer(id)
        case .rejectTransfer(let id): await client.rejectTransfer(id)
        case .cancelTransfer(let id): await client.cancelTransfer(id)
        case .listTransfers: await client.listTransfers()
        }
        scheduleRender()
    }

    /// Keeps the ignore list in the config file, so it holds next time.
    func persistIgnores(_ list: [String]) {
        try? ConfigFile.set("ignore", to: list.isEmpty ? nil : list.joined(separator: ","), in: configPath)
    }

    func quit(reason: String, code: Int32 = 0) async {
        guard !quitting else { return }
        quitting = true
        await client.quit(reason: reason)
        finished?.resume(returning: code)
        finished = nil
    }

    /// Coalesces redraws: a flood of events costs one state fetch and one frame per 20 ms.
    func scheduleRender() {
        guard !renderPending else { return }
        renderPending = true
        Task { @MainActor in
            try? await Task.sleep(for: .milliseconds(20))
            self.model.state = await self.client.state
            self.model.reconcileSelection()
            self.renderPending = false
            self.render()
        }
    }

    func render() {
        guard terminal.isActive else { return }
        if screen.width != model.width || screen.height != model.height {
            screen = Screen(width: model.width, height: model.height)
        }
        model.render(into: &screen)
        terminal.draw(screen)
        let unread = model.totalUnread
        let title = unread > 0 ? "chat-tui (\(unread))" : "chat-tui"
        if title != model.lastTitle {
            model.lastTitle = title
            terminal.setTitle(title)
        }
    }

    func watchInput() {
        let source = DispatchSource.makeReadSource(fileDescriptor: 0, queue: .main)
        source.setEventHandler { [weak self] in
            MainActor.assumeIsolated {
                guard let self else { return }
                for key in self.terminal.readKeys() { self.handle(.key(key)) }
            }
        }
        source.resume()
        sources.append(source)
    }

    func watchSignals() {
        // libdispatch owns SIGWINCH, so ncurses never sees KEY_RESIZE: watch it here.
        signal(SIGWINCH, SIG_IGN)
        let resize = DispatchSource.makeSignalSource(signal: SIGWINCH, queue: .main)
        resize.setEventHandler { [weak self] in
            MainActor.assumeIsolated {
                guard let self else { return }
                let (width, height) = self.terminal.resized()
                self.handle(.resize(width: width, height: height))
            }
        }
        resize.resume()
        sources.append(resize)
        for number in [SIGTERM, SIGHUP, SIGINT] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .main)
            source.setEventHandler { [weak self] in
                MainActor.assumeIsolated {
                    guard let self else { return }
                    Task { @MainActor in await self.quit(reason: "Leaving") }
                }
            }
            source.resume()
            sources.append(source)
        }
    }
}
