#if canImport(Glibc)
import Glibc
#endif
import ChatTransport
import Dispatch
import ChatClientKit
import ChatUI
import CursesTerminal
import IRCWire

/// The full-screen chat: wires one `ChatClient` per network, the `ChatModel` and the curses
/// terminal on the main actor. Keys, client events (each with its network), timers and signals
/// all arrive here as events; each is applied to the model and the screen is redrawn (only
/// changed cells reach the terminal). A command goes to the client of its network.
@MainActor
final class ChatApp {
    /// One per network, in the order of `model.networks`.
    var clients: [ChatClient]
    let options: Arguments
    let terminal = CursesTerminal()
    var model: ChatModel
    var screen: Screen
    var renderPending = false
    var finished: CheckedContinuation<Int32, Never>?
    var sources: [any DispatchSourceProtocol] = []
    var commands: AsyncStream<(network: Int, command: UICommand)>.Continuation?
    var quitting = false
    /// Held direct messages a quit leaves unsent, said on the terminal once the screen is closed.
    var unsentOnQuit: [String] = []
    /// The settings and aliases as the config file has them (at start, /save, /reload): on
    /// quitting, anything changed since is saved when autosave is on.
    var savedSettings: (Settings, Aliases)

    init(clients: [(name: String, client: ChatClient)], options: Arguments, hostHint: [String] = []) {
        self.clients = clients.map(\.client)
        self.options = options
        let first = clients[0].client
        model = ChatModel(state: Self.book(for: first), width: 80, height: 24)
        model.networks[0].name = clients[0].name
        model.networks[0].key = first.network
        for (name, client) in clients.dropFirst() { model.addNetwork(name: name, key: client.network, state: Self.book(for: client)) }
        model.hostHint = hostHint
        // The rooms named with --join were asked for: each takes the view as it is joined, so the
        // screen ends on the last of them (irssi's autojoin, WeeChat's buffer_switch_autojoin).
        model.askToJoin(options.rooms)
        model.windowOrder = WindowOrder(text: Files.readText(windowOrderPath) ?? "")
        model.settings = options.settings
        if let table = options.aliases {
            model.aliases = Aliases([:])
            for (name, expansion) in table { _ = model.aliases.set(name, expansion) }
        }
        savedSettings = (model.settings, model.aliases)
        var now = time(nil)
        var local = tm()
        localtime_r(&now, &local)
        model.utcOffset = local.tm_gmtoff
        screen = Screen(width: 80, height: 24)
    }

    /// The screen's own book for a network, fed by its client's events.
    static func book(for client: ChatClient) -> ConversationBook {
        ConversationBook(nick: client.config.nick, scrollbackLimit: client.config.scrollbackLimit)
    }

    /// Network `index`'s events reach the model as that network's.
    func listen(_ index: Int) {
        let client = clients[index]
        Task { @MainActor in
            for await event in client.events {
                self.handle(.fromNetwork(index, event))
            }
        }
    }

    func run() async -> Int32 {
        terminal.start()
        terminal.setMouse(model.settings.isOn("mouse"))
        let (width, height) = terminal.size
        _ = model.update(.resize(width: width, height: height))
        model.now = WallClock.now()
        watchInput()
        watchSignals()
        startCommandQueue()
        // The host's screen says first of all how others join.
        for line in model.hostHintInPane { commands?.yield((0, .note(line, conversation: .server, isError: false))) }
        for (index, client) in clients.enumerated() {
            await client.start()
            listen(index)
        }
        let timer = DispatchSource.makeTimerSource(queue: .main)
        // Four ticks a second: countdowns and transfer progress stay current without flooding.
        timer.schedule(deadline: .now() + 0.25, repeating: 0.25)
        timer.setEventHandler { [weak self] in
            MainActor.assumeIsolated {
                guard let self else { return }
                let moving = self.model.transfers.values.contains { $0.state == .active }
                if moving || self.model.reconnectAt != nil {
                    // Rates and countdowns move with the clock.
                    self.handle(.tick(now: WallClock.now()))
                } else if (self.model.viewedConversation?.unread ?? 0) > 0 {
                    // The selection resting on unread lines marks them read after a second.
                    self.handle(.tick(now: WallClock.now()))
                } else {
                    self.model.now = WallClock.now()
                }
            }
        }
        timer.resume()
        sources.append(timer)
        render()
        // Drawn once: the code that ran only to start (faulted in 64 KiB windows) stops
        // counting, and what runs from now on is resident page by page, as the server does.
        Memory.trimCodePages()
        let code = await withCheckedContinuation { self.finished = $0 }
        for source in sources { source.cancel() }
        terminal.shutdown()
        if !unsentOnQuit.isEmpty {
            writeLine("chat-tui: not sent, held for people who were not back (\(unsentOnQuit.count)):", to: 2)
            for line in unsentOnQuit { writeLine("  " + PlainText.visible(line), to: 2) }
        }
        return code
    }

    func handle(_ event: UIEvent) {
        // A client's event is that network's; a key is for the network shown (after the key).
        var origin: Int?
        if case .fromNetwork(let index, _) = event { origin = index }
        let order = model.windowOrder
        for command in model.handle(event) { commands?.yield(command.routed(defaultNetwork: origin ?? model.selectedNetwork)) }
        if model.windowOrder != order { saveWindowOrder() }
        scheduleRender()
    }

    /// The conversations' numbers, saved when they change (rarely: a new conversation, /close,
    /// /window move); a failure only costs the numbers at the next start.
    func saveWindowOrder() {
        try? Files.createDirectories(Paths.directory(of: windowOrderPath))
        try? Files.writeAtomically(windowOrderPath, Array(model.windowOrder.text.utf8), mode: 0o600)
    }

    /// Commands run one after another, in the order the keys produced them.
    func startCommandQueue() {
        let (stream, continuation) = AsyncStream.makeStream(of: (network: Int, command: UICommand).self)
        commands = continuation
        Task { @MainActor in
            for await (network, command) in stream { await self.perform(command, on: network) }
        }
    }

    func perform(_ command: UICommand, on network: Int) async {
        guard clients.indices.contains(network) else { return }
        // Answers go where the command was typed when it was typed on the network shown.
        let here = network == model.selectedNetwork ? model.viewedID : .server
        if await CommandRunner.perform(command, on: clients[network], typedIn: here) {
            scheduleRender()
            return
        }
        switch command {
        case .quit(let reason): await quit(reason: reason)
        case .connect(let word): await connect(word, from: network)
        case .bell: terminal.bell()
        case .notify(let title, let body): notify(title: title, body: body)
        case .mouseReporting(let on): terminal.setMouse(on)
        case .copy(let text): terminal.copyToClipboard(text)
        case .redraw: terminal.forceRedraw()
        case .listFiles(let word): handle(.filesListed(word: word, entries: Self.listFiles(completing: word)))
        case .saveSettings:
            let here = network == model.selectedNetwork ? model.viewedID : .server
            do {
                try Arguments.saveScreenSettings(model.settings, model.aliases, to: configPath)
                savedSettings = (model.settings, model.aliases)
                await clients[network].note("Settings and aliases saved in \(configPath)", in: here, isError: false)
            } catch {
                await clients[network].note("Not saved in \(configPath): \(error)", in: here)
            }
        case .reloadSettings:
            handle(.settingsLoaded(Arguments.screenSettings(fromConfig: configPath)))
            savedSettings = (model.settings, model.aliases)
        default: break
        }
        scheduleRender()
    }

    /// A notification as the notify setting says: the terminal's own sequence (through tmux when
    /// inside it), or the user's command with the title and the text as its last arguments.
    func notify(title: String, body: String) {
        switch model.settings["notify"] {
        case "osc":
            let environment = Environment.all
            terminal.writeSequence(DesktopNotification.sequence(DesktopNotification.style(environment: environment), title: title, body: body,
                                                                inTmux: environment["TMUX"] != nil))
        case "command":
            guard let arguments = DesktopNotification.commandArguments(model.settings["notify-command"], title: title, body: body) else { return }
            Spawn.detached(arguments)
        default:
            break
        }
    }

    /// The disk half of Tab after `/send`: the entries of the directory the path is in that
    /// could complete it (only those are asked whether they are directories).
    static func listFiles(completing word: String) -> [FileEntry] {
        let directory = PathCompletion.directory(of: word.expandingTilde())
        let names = PathCompletion.matching(Files.list(directory) ?? [], prefix: PathCompletion.prefix(of: word))
        return names.map { FileEntry(name: $0, isDirectory: Files.isDirectory(directory + "/" + $0)) }
    }

    /// `/connect HOST[:PORT]`: one more network, shown at once.
    func connect(_ word: String, from network: Int) async {
        let settings: NetworkSettings
        do {
            settings = try NetworkSettings.adding(word, to: model.networks.map(\.name))
        } catch {
            await clients[network].note(error.description, in: network == model.selectedNetwork ? model.viewedID : .server)
            return
        }
        let client = ChatClient(config: clientConfig(options, network: settings, interactive: false))
        clients.append(client)
        let index = model.addNetwork(name: settings.name, key: client.network, state: Self.book(for: client))
        model.selectNetwork(index)
        await client.start()
        listen(index)
    }

    func quit(reason: String, code: Int32 = 0) async {
        guard !quitting else { return }
        quitting = true
        if model.settings.isOn("autosave") && (model.settings != savedSettings.0 || model.aliases != savedSettings.1) {
            // Best effort: the screen is closing; a failure here is what /save would have said.
            try? Arguments.saveScreenSettings(model.settings, model.aliases, to: configPath)
        }
        // A held message is lost with the client: not silently (tour: /bye dropped one unsaid).
        for client in clients { unsentOnQuit += await client.unsentHeld }
        await CommandRunner.quitAll(clients, reason: reason)
        finished?.resume(returning: code)
        finished = nil
    }

    /// Coalesces redraws: a flood of events costs one frame per 20 ms. The model is already
    /// current (each event was applied as it came); nothing is fetched from the client.
    func scheduleRender() {
        guard !renderPending else { return }
        renderPending = true
        Task { @MainActor in
            try? await Task.sleep(for: .milliseconds(20))
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
