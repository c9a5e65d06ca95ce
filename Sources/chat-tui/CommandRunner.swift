import ChatTransport
import ChatClientKit
import ChatUI

/// Carries out the commands the interpreter (and the chat screen's keys) produce, on the
/// client: the one place both the chat screen and the line mode turn `UICommand`s into calls.
/// Returns false for the ones only a screen can do (bell, redraw, quit, view changes), which
/// the caller handles.
enum CommandRunner {
    static func perform(_ command: UICommand, on client: ChatClient, typedIn here: ConversationID) async -> Bool {
        switch command {
        case .send(let text, let target):
            await client.replyIn(here)
            await client.send(text, to: target)
        case .reply(let text, let target, let parent): await client.send(text, to: target, replyTo: parent)
        case .typing(let state, let target): await client.sendTyping(state, to: target)
        case .action(let text, let target): await client.send(text, to: target, isAction: true)
        case .irc(let message): await client.sendCommand(message, replyIn: here)
        case .ignore(let mask):
            guard let mask else {
                let list = await client.ignoreMasks
                await client.note(list.isEmpty ? "Nobody is ignored" : "Ignored: " + list.joined(separator: " "), in: here, isError: false)
                return true
            }
            guard let list = await client.ignore(mask) else {
                await client.note("\(mask) is not a nickname or a nick!user@host mask", in: here)
                return true
            }
            if let problem = persistIgnores(list) { await client.note(problem, in: here) }
            await client.note("Ignoring \(list.last ?? mask): their messages are hidden (/unignore to undo)", in: here, isError: false)
        case .unignore(let mask):
            let list = await client.unignore(mask)
            if let problem = persistIgnores(list) { await client.note(problem, in: here) }
            await client.note("No longer ignoring \(mask)", in: here, isError: false)
        case .note(let text, let conversation, let isError):
            await client.note(text, in: conversation, isError: isError)
        case .markRead(let conversation): await client.markRead(conversation)
        case .clear(let conversation): await client.clear(conversation)
        case .open(let name): await client.openConversation(name)
        case .close(let conversation): await client.closeConversation(conversation)
        case .disconnect: await client.disconnect()
        case .reconnect: await client.reconnectNow()
        case .sendFile(let path, let nick, let passive):
            await client.replyIn(here)
            await client.sendFile(path, to: nick, passive: passive)
        case .uploadFile(let path, let to):
            await client.replyIn(here)
            if path.isEmpty {
                if !(await client.uploadUnreachable()) { await client.note("Usage: /upload PATH (Tab completes it)", in: here) }
            } else {
                await client.uploadFile(path, to: to)
            }
        case .downloadShared(let number):
            await client.replyIn(here)
            await client.downloadShared(number)
        case .acceptTransfer(let id):
            await client.replyIn(here)
            await client.acceptTransfer(id)
        case .rejectTransfer(let id):
            await client.replyIn(here)
            await client.rejectTransfer(id)
        case .cancelTransfer(let id):
            await client.replyIn(here)
            await client.cancelTransfer(id)
        case .listTransfers:
            await client.replyIn(here)
            await client.listTransfers()
        case .trustCertificate(let fingerprint): await client.trustCertificate(fingerprint)
        case .search(let words, let alsoSender): await client.search(words, alsoSender: alsoSender)
        case .showAround(let hit): await client.showAround(hit)
        case .fetchOlder(let room, let msgid): await client.fetchOlder(room, before: msgid)
        case .looking(let conversation): await client.looking(at: conversation)
        case .highlights(let highlights): await client.setHighlights(highlights)
        case .textLogs(let on): await client.setTextLogs(on ? textLogsPath : nil)
        case .cancelHeld(let nick):
            await client.replyIn(here)
            await client.cancelHeld(for: nick)
        case .sendHeld(let nick):
            await client.replyIn(here)
            await client.sendHeld(for: nick)
        case .quit, .bell, .redraw, .copy, .show, .awaitRoomList, .listFiles, .connect, .disconnectNetwork, .network, .on,
             .setting, .alias, .unalias, .saveSettings, .reloadSettings, .window, .scroll, .showHighlights, .notify, .mouseReporting, .lastlog:
            return false
        }
        return true
    }

    /// Quits every network's client at once (each waits for its server's goodbye).
    static func quitAll(_ clients: [ChatClient], reason: String) async {
        await withTaskGroup(of: Void.self) { group in
            for client in clients { group.addTask { await client.quit(reason: reason) } }
        }
    }

    /// Keeps the ignore list in the config file, so it holds next time.
    /// Nil when saved, else what went wrong, for the user to see.
    static func persistIgnores(_ list: [String]) -> String? {
        do {
            try ConfigFile.set("ignore", to: list.isEmpty ? nil : list.joined(separator: ","), in: configPath)
            return nil
        } catch {
            return "The ignore list could not be saved in \(configPath) (\(error)): it lasts until you quit"
        }
    }
}
