import ChatClientKit

// Settings and aliases at run time: /set, /alias, /unalias, and the config file read again.
extension ChatModel {
    /// `/set`, `/alias` and `/unalias` change the model and answer with notes where they were typed.
    mutating func settingsCommand(_ command: UICommand) -> [UICommand] {
        let here = viewedID
        func say(_ text: String, error: Bool = false) -> UICommand { .note(text, conversation: here, isError: error) }
        switch command {
        case .setting(nil, _, _):
            let width = Setting.all.map(\.name.count).max() ?? 0
            return [say("Settings (/set NAME VALUE changes one, /set NAME explains it, /save keeps them):")]
                + settings.all.map { setting, value in
                    let shown = value.isEmpty ? "(none)" : value
                    return say("  " + setting.name + String(repeating: " ", count: width - setting.name.count) + " = " + shown
                               + (value == setting.defaultValue ? "" : "   (default " + (setting.defaultValue.isEmpty ? "none" : setting.defaultValue) + ")"))
                }
        case .setting(let name?, let value, let reset):
            guard let setting = Setting.named(name) else {
                let near = Setting.all.filter { $0.name.hasPrefix(name.lowercased().prefix(3)) }.map(\.name)
                return [say("No setting called \(name)" + (near.isEmpty ? "" : " (perhaps \(near.joined(separator: ", ")))") + "; /set lists them", error: true)]
            }
            if reset {
                settings.reset(setting.name)
            } else if let value {
                if let problem = settings.set(setting.name, value) { return [say(problem.description, error: true)] }
            }
            if value != nil || reset, setting.name.hasPrefix("highlight") {
                return [say("\(setting.name) = \(settings[setting.name].isEmpty ? "(none)" : settings[setting.name])")] + highlightsChanged()
            }
            if value != nil || reset, setting.name == "text-logs" {
                return [say("text-logs = \(settings["text-logs"])")] + networks.indices.map { .on(network: $0, .textLogs(settings.isOn("text-logs"))) }
            }
            if value != nil || reset, setting.name == "mouse" {
                return [say("mouse = \(settings["mouse"])"), .mouseReporting(settings.isOn("mouse"))]
            }
            if value == nil && !reset {
                let shown = settings[setting.name].isEmpty ? "(none)" : settings[setting.name]
                let kind = setting.placeholder + "; default " + (setting.defaultValue.isEmpty ? "none" : setting.defaultValue)
                return [say("\(setting.name) = \(shown)  (\(kind)) — \(setting.help)")]
            }
            let shown = settings[setting.name].isEmpty ? "(none)" : settings[setting.name]
            return [say("\(setting.name) = \(shown)" + (setting.appliesAtOnce ? "" : " — takes effect at the next start (/save keeps it)"))]
        case .alias(nil, _):
            let names = aliases.table.keys.sorted()
            return [say(names.isEmpty ? "No aliases (/alias NAME EXPANSION makes one)" : "Aliases (built in as well: /j /q /m /w /leave):")]
                + names.map { say("  /\($0) = \(aliases.table[$0]!)") }
        case .alias(let name?, nil):
            guard let expansion = aliases[name] else { return [say("No alias /\(name)", error: true)] }
            return [say("/\(name.lowercased()) = \(expansion)")]
        case .alias(let name?, let expansion?):
            if let problem = aliases.set(name, expansion) { return [say(problem, error: true)] }
            return [say("/\(name.lowercased()) = \(aliases[name]!) (/save keeps it)")]
        case .unalias(let name):
            return [aliases.remove(name) ? say("/\(name.lowercased()) forgotten (/save keeps that)") : say("No alias /\(name)", error: true)]
        default:
            return []
        }
    }

    /// The highlight settings for every network's client (a line is marked by the client that receives it).
    func highlightsChanged() -> [UICommand] {
        let highlights = Highlights(words: settings.words("highlights"), pattern: settings["highlight-regex"]) ?? Highlights()
        return networks.indices.map { .on(network: $0, .highlights(highlights)) }
    }

    /// `/highlights`: the lines that highlighted you in any room of any network, newest first
    /// (up to 500), in the picker `/search` uses; Enter opens one in its conversation.
    mutating func showHighlights() -> [UICommand] {
        var found: [(network: Int, hit: SearchHit)] = []
        for (index, network) in networks.enumerated() {
            for conversation in network.state.rooms {
                for line in conversation.lines where line.isHighlight && !line.isOwn && (line.kind == .message || line.kind == .action || line.kind == .notice) {
                    found.append((index, SearchHit(conversation: conversation.id, name: conversation.name, line: line, network: network.key)))
                }
            }
        }
        guard !found.isEmpty else {
            return [.note("Nothing has highlighted you yet (lines naming you; /set highlights WORD,WORD adds words)", conversation: viewedID, isError: false)]
        }
        found.sort { $0.hit.line.time > $1.hit.line.time }
        found = Array(found.prefix(500))
        searchPicker = ("", found.map(\.hit), 0)
        searchHitNetworks = found.map(\.network)
        return []
    }

    /// `/reload`: the file's settings and aliases replace the running ones.
    mutating func settingsLoaded(_ result: Result<ConfigValues, SettingProblem>) -> [UICommand] {
        switch result {
        case .success(let values):
            settings = values.settings
            aliases = values.aliases
            return [.note("Settings and aliases read from the config file", conversation: viewedID, isError: false),
                    .mouseReporting(settings.isOn("mouse"))] + highlightsChanged()
                + networks.indices.map { .on(network: $0, .textLogs(settings.isOn("text-logs"))) }
        case .failure(let problem):
            return [.note("Not reloaded: \(problem.description)", conversation: viewedID, isError: true)]
        }
    }
}
