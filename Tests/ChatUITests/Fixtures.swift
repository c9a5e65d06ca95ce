@testable import ChatUI
@testable import ChatClientKit
import IRCWire

/// A model as alice, registered, in #lobby with bob, 小明 and carol, drawn at `width`×`height`.
func lobbyModel(width: Int = 60, height: Int = 12, extra: [String] = [], scrollback: Int = 4_096) -> ChatModel {
    var state = ClientState(nick: "alice", scrollbackLimit: scrollback)
    let lines = [
        ":srv 001 alice :Welcome alice!a@h",
        ":srv 005 alice PREFIX=(ov)@+ CHANTYPES=# :are supported",
        ":alice!a@h JOIN #lobby",
        ":srv 353 alice = #lobby :@alice +bob 小明 carol",
        ":srv 366 alice #lobby :End",
    ] + extra
    for line in lines { _ = state.apply(try! IRCMessage(parsing: line), now: 3600 * 10 + 60 * 5) }
    state.record(.markedRead(.room("#lobby"))) // the shell does this for the conversation in view
    var model = ChatModel(state: state.book, width: width, height: height)
    model.everRegistered = true
    model.status = .registered(nick: "alice")
    model.currentRoom = "#lobby"
    model.selection = .conversation(.room("#lobby"))
    return model
}

func draw(_ model: ChatModel) -> Screen {
    var screen = Screen(width: model.width, height: model.height)
    model.render(into: &screen)
    return screen
}

/// Display columns of each row: every row of a screen must be exactly its width.
func columns(_ text: String) -> Int { DisplayWidth.of(text) }

extension ChatModel {
    /// Server lines read by a client interpreter that continues from this model's view, and
    /// each resulting event applied with `update`, as the app does. Lines that belong together
    /// (NAMES, LIST) go in one call.
    @discardableResult
    mutating func receive(_ lines: String..., now: Double) -> [UICommand] {
        var client = ClientState(continuing: state, registered: everRegistered)
        var commands: [UICommand] = []
        for line in lines {
            for event in client.apply(try! IRCMessage(parsing: line), now: now) { commands += update(.client(event)) }
        }
        return commands
    }

    /// The connection dropped, as the client reports it.
    @discardableResult
    mutating func lose(reason: String, now: Double) -> [UICommand] {
        var client = ClientState(continuing: state, registered: everRegistered)
        return client.connectionLost(reason: reason, now: now).events.flatMap { update(.client($0)) }
    }

    /// One event from the client.
    @discardableResult
    mutating func receive(_ event: ClientEvent) -> [UICommand] { update(.client(event)) }
}

extension ChatModel {
    /// The notes among `commands` added where they say, as the client does for the shell.
    mutating func performNotes(_ commands: [UICommand], now: Double) {
        for case .note(let text, let id, let isError) in commands {
            var client = ClientState(continuing: state, registered: everRegistered)
            let line = ChatLine(time: now, kind: isError ? .error : .info, text: text)
            for event in client.line(line, to: id) { _ = update(.client(event)) }
        }
    }

    /// A line typed into the input and Enter pressed; the commands it gave.
    mutating func type(_ line: String) -> [UICommand] {
        editor.set(line)
        return update(.key(.enter))
    }
}
