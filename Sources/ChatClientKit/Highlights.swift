/// Words and a regular expression that mark a line like a mention (irssi's /hilight, WeeChat's
/// weechat.look.highlight and highlight_regex): the line is shown highlighted, its conversation
/// marked `!`, it rings and notifies, and it is listed by `/highlights`.
public struct Highlights: Sendable, Equatable {
    /// Folded to lower case; matched as whole words.
    public private(set) var words: Set<String> = []
    public private(set) var pattern = ""
    private var compiled: CompiledPattern?

    public init() {}

    /// Nil when `pattern` is not a regular expression (it is then left out, and said so by the caller).
    public init?(words: [String], pattern: String) {
        self.words = Set(words.map { $0.lowercased() }.filter { !$0.isEmpty })
        self.pattern = pattern
        if !pattern.isEmpty {
            guard let regex = try? Regex(pattern) else { return nil }
            compiled = CompiledPattern(regex.ignoresCase())
        }
    }

    public static func == (a: Highlights, b: Highlights) -> Bool { a.words == b.words && a.pattern == b.pattern }

    public var isEmpty: Bool { words.isEmpty && compiled == nil }

    public func matches(_ text: String) -> Bool {
        if !words.isEmpty {
            var word = ""
            for character in text.lowercased() + " " {
                if character.isLetter || character.isNumber || character == "-" || character == "_" {
                    word.append(character)
                } else {
                    if words.contains(word) { return true }
                    word = ""
                }
            }
        }
        if let compiled, (try? compiled.regex.firstMatch(in: text)) != nil { return true }
        return false
    }
}

/// A compiled pattern, made once and only read after (`Regex` is not `Sendable`): the state that
/// holds it belongs to one `ChatClient` actor, which alone matches lines against it.
final class CompiledPattern: @unchecked Sendable {
    let regex: Regex<AnyRegexOutput>
    init(_ regex: Regex<AnyRegexOutput>) { self.regex = regex }
}
