#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import ChatLink
import ChatStore
import ChatWeb
import ChatTransport
import IRCWire

// Links out: dialling configured links on threads of their own and taking the sockets back.
extension ServerRuntime {
    // MARK: Links out

    /// Dials a link on a thread of its own (resolving and connecting block); the socket comes
    /// back to the loop through `dialled` and the wakeup.
    func dial(_ block: LinkBlock) {
        guard let host = block.host else { return }
        let results = dialled, wakeup = control.wakeup
        Threads.start(name: "chat-tui link \(block.name)") {
            let outcome: Result<Int32, TransportError>
            do throws(TransportError) {
                outcome = .success(try Sockets.connect(host: host, port: block.port, timeout: 10, nonBlocking: true))
            } catch {
                outcome = .failure(error)
            }
            results.list.withLock { $0.append((block, outcome)) }
            wakeup.signal()
        }
    }

    /// A dial's answer: the connection joins the loop (its TLS handshake starts at once), or the state hears why not.
    func linkDialled(_ block: LinkBlock, _ outcome: Result<Int32, TransportError>) {
        switch outcome {
        case .failure(let error):
            state.linkDialFailed(block.name, reason: error.description, now: WallClock.now())
            apply()
        case .success(let fd):
            guard !block.tls || linkClientTLS != nil else {
                close(fd)
                state.linkDialFailed(block.name, reason: "TLS is not set up on this server (no certificate)", now: WallClock.now())
                apply()
                return
            }
            let id = connections.nextID()
            let tls = block.tls ? linkClientTLS.map { TLSSession(context: $0, fd: fd, server: false) } : nil
            let connection = Connection(id: ConnectionID(id), fd: fd, peer: "\(block.host ?? ""):\(block.port)", tls: tls, isLink: true)
            do {
                try epoll.add(fd, token: id)
            } catch {
                close(fd)
                state.linkDialFailed(block.name, reason: "\(error)", now: WallClock.now())
                apply()
                return
            }
            connections.insert(connection, as: id)
            state.linkConnected(connection.id, peer: connection.peer, dialled: block, secure: tls != nil, now: WallClock.now())
            apply()
            // The client speaks first in TLS: its hello goes out now.
            if tls != nil { read(connection) }
        }
    }
}

/// Sockets of outgoing links, from their dialling threads to the loop.
final class DialResults: Sendable {
    let list = Locked<[(LinkBlock, Result<Int32, TransportError>)]>([])
}
