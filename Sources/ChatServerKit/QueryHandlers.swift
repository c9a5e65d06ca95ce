import IRCWire

extension ServerState {
    // WHO [<mask>]
    mutating func handleWho(_ request: Request) {
        let id = request.id
        let mask = request.params.first ?? "*"
        let all = clients[id]!.caps.contains(.multiPrefix)
        if IRCNames.isChannel(mask) {
            if let channel = channels[casemapping.fold(mask)] {
                let members = channel.members.sorted { $0.key < $1.key }
                for (member, status) in members {
                    whoReply(to: id, about: member, channel: channel.name, status: status.prefix(all: all))
                }
            }
        } else {
            let folded = casemapping.fold(mask)
            let matches = clients.values.filter { client in
                guard client.registered, let nick = client.nick else { return false }
                return mask == "*" || mask == "0" || IRCNames.globMatch(folded, casemapping.fold(nick))
            }.sorted { $0.id < $1.id }
            for client in matches { whoReply(to: id, about: client.id, channel: "*", status: "") }
        }
        reply(id, .endOfWho, mask, "End of /WHO list")
    }

    mutating func whoReply(to id: ConnectionID, about member: ConnectionID, channel: String, status: String) {
        guard let other = clients[member], let nick = other.nick else { return }
        let flags = (other.away == nil ? "H" : "G") + status
        reply(id, .whoReply, channel, other.user ?? "unknown", other.host, config.name, nick, flags, "0 \(other.realname)")
    }

    // WHOIS [<server>] <nick>
    mutating func handleWhois(_ request: Request) {
        let id = request.id
        let nick = request.params.last!
        guard let target = client(named: nick), let other = clients[target] else {
            reply(id, .noSuchNick, nick, "No such nick/channel")
            reply(id, .endOfWhois, nick, "End of /WHOIS list")
            return
        }
        let name = other.nick!
        reply(id, .whoisUser, name, other.user ?? "unknown", other.host, "*", other.realname)
        let all = clients[id]!.caps.contains(.multiPrefix)
        let rooms = other.channels.sorted().compactMap { key -> String? in
            guard let channel = channels[key], let status = channel.members[target] else { return nil }
            return status.prefix(all: all) + channel.name
        }
        if !rooms.isEmpty { reply(id, .whoisChannels, name, rooms.joined(separator: " ")) }
        reply(id, .whoisServer, name, config.name, config.network)
        if let away = other.away { reply(id, .away, name, away) }
        reply(id, .whoisIdle, name, String(Int(request.now - other.lastSpoke)), String(Int(other.connectedAt)),
              "seconds idle, signon time")
        reply(id, .endOfWhois, name, "End of /WHOIS list")
    }

    // ISON <nick>{ <nick>}
    mutating func handleIson(_ request: Request) {
        let online = request.params.flatMap { $0.split(separator: " ") }.compactMap { nick in
            client(named: String(nick)).flatMap { clients[$0]?.nick }
        }
        reply(request.id, .ison, online.joined(separator: " "))
    }

    // USERHOST <nick>{ <nick>}
    mutating func handleUserhost(_ request: Request) {
        let entries = request.params.flatMap { $0.split(separator: " ") }.prefix(5).compactMap { nick -> String? in
            guard let id = client(named: String(nick)), let other = clients[id] else { return nil }
            return "\(other.nick!)=\(other.away == nil ? "+" : "-")\(other.user ?? "unknown")@\(other.host)"
        }
        reply(request.id, .userhost, entries.joined(separator: " "))
    }
}
