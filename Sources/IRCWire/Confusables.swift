/// Names that look alike: the skeletons of Unicode Technical Standard #39, section 4.
public enum Confusables {
    /// The TR39 skeleton of `s`: two names whose skeletons are equal look alike (`paypal` and
    /// `pаypal` with a Cyrillic `а`, `alice` and `ａｌｉｃｅ`). Case is not folded here: fold first,
    /// then take the skeleton of the folded name.
    ///
    /// The result is `NFD(prototypes(NFKD(s)))` scalar for scalar, so it can be compared as
    /// scalars or as Strings alike. TR39 decomposes with NFD; we use NFKD so that fullwidth,
    /// mathematical and circled letters and ligatures (`ｂ`, `𝐛`, `ﬁ`) fold to plain ones first,
    /// as ergo's PRECIS folding (width mapping, NFKC) does before it takes a skeleton.
    public static func skeleton(_ s: String) -> String {
        let tables = ConfusableTables.shared
        var decomposed: [Unicode.Scalar] = []
        decomposed.reserveCapacity(s.unicodeScalars.count)
        for scalar in s.unicodeScalars {
            tables.decompose(scalar) { appendInCanonicalOrder($0, to: &decomposed) }
        }
        var mapped = String.UnicodeScalarView()
        var buffer: [Unicode.Scalar] = []
        buffer.reserveCapacity(decomposed.count)
        for scalar in decomposed {
            if let prototype = tables.prototypes[scalar.value] {
                for part in prototype { appendInCanonicalOrder(part, to: &buffer) }
            } else {
                appendInCanonicalOrder(scalar, to: &buffer)
            }
        }
        mapped.append(contentsOf: buffer)
        return String(mapped)
    }

    /// Appends `scalar`, moving it before the combining marks of a higher combining class that
    /// end `scalars`: the canonical ordering step of NFD, done as the scalars arrive.
    static func appendInCanonicalOrder(_ scalar: Unicode.Scalar, to scalars: inout [Unicode.Scalar]) {
        let ccc = scalar.properties.canonicalCombiningClass.rawValue
        var index = scalars.endIndex
        if ccc != 0 {
            while index > scalars.startIndex {
                let before = scalars[index - 1].properties.canonicalCombiningClass.rawValue
                if before <= ccc { break }
                index -= 1
            }
        }
        scalars.insert(scalar, at: index)
    }

    /// The Script property of `scalar` (Common, Inherited, Latin, …), as a name; Unknown for a
    /// code point the data does not know.
    static func scriptName(_ scalar: Unicode.Scalar) -> String {
        ConfusableTables.shared.scriptName(ConfusableTables.shared.script(of: scalar))
    }
}

/// The tables of ConfusableData.swift, parsed once, at first use.
struct ConfusableTables: Sendable {
    static let shared = ConfusableTables()

    /// A script, as its index in `scriptNames`; `unknown` for code points in no range.
    typealias Script = UInt8
    static let unknown: Script = .max

    let prototypes: ScalarMapping
    let decompositions: ScalarMapping
    let scriptNames: [String]
    let rangeStarts: [UInt32]
    let rangeEnds: [UInt32]
    let rangeScripts: [Script]

    init() {
        prototypes = ScalarMapping(ConfusableData.prototypes)
        decompositions = ScalarMapping(ConfusableData.decompositions)
        scriptNames = ConfusableData.scriptNames.split(separator: ",").map(String.init)
        var starts: [UInt32] = [], ends: [UInt32] = [], scripts: [Script] = []
        starts.reserveCapacity(ConfusableData.scriptRangeCount)
        ends.reserveCapacity(ConfusableData.scriptRangeCount)
        scripts.reserveCapacity(ConfusableData.scriptRangeCount)
        Self.forEachEntry(ConfusableData.scriptRanges) { fields in
            // START-END:SCRIPT, or START:SCRIPT, arrive as [START, END, SCRIPT] or [START, SCRIPT].
            starts.append(fields[0])
            ends.append(fields[fields.count == 3 ? 1 : 0])
            scripts.append(Script(truncatingIfNeeded: fields[fields.count - 1]))
        }
        rangeStarts = starts
        rangeEnds = ends
        rangeScripts = scripts
    }

    /// Calls `body` with each scalar of the full compatibility decomposition (NFKD) of `scalar`.
    func decompose(_ scalar: Unicode.Scalar, _ body: (Unicode.Scalar) -> Void) {
        let value = scalar.value
        // Hangul syllables decompose by arithmetic (Unicode 16.0, section 3.12).
        let sBase: UInt32 = 0xAC00, lBase: UInt32 = 0x1100, vBase: UInt32 = 0x1161, tBase: UInt32 = 0x11A7
        let tCount: UInt32 = 28, nCount: UInt32 = 21 * 28, sCount: UInt32 = 19 * 21 * 28
        if value >= sBase && value < sBase + sCount {
            let index = value - sBase
            body(Unicode.Scalar(lBase + index / nCount)!)
            body(Unicode.Scalar(vBase + (index % nCount) / tCount)!)
            if index % tCount != 0 { body(Unicode.Scalar(tBase + index % tCount)!) }
        } else if let parts = decompositions[value] {
            for part in parts { body(part) }
        } else {
            body(scalar)
        }
    }

    func script(of scalar: Unicode.Scalar) -> Script {
        let value = scalar.value
        // The last range that starts at or before `value`.
        var low = 0, high = rangeStarts.count
        while low < high {
            let middle = (low + high) / 2
            if rangeStarts[middle] <= value { low = middle + 1 } else { high = middle }
        }
        guard low > 0, value <= rangeEnds[low - 1] else { return Self.unknown }
        return rangeScripts[low - 1]
    }

    func scriptName(_ script: Script) -> String {
        script == Self.unknown ? "Unknown" : scriptNames[Int(script)]
    }

    /// Calls `body` with the hex numbers of each entry of `text`: entries end at `;` or a line
    /// break, and the numbers in one are split by anything else that is not a hex digit.
    static func forEachEntry(_ text: String, _ body: ([UInt32]) -> Void) {
        var fields: [UInt32] = []
        var number: UInt32 = 0
        var inNumber = false
        for byte in text.utf8 {
            let digit: UInt32?
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: digit = nil
            }
            if let digit {
                number = number << 4 | digit
                inNumber = true
                continue
            }
            if inNumber { fields.append(number) }
            number = 0
            inNumber = false
            if byte == UInt8(ascii: ";") || byte == UInt8(ascii: "\n") {
                if !fields.isEmpty { body(fields) }
                fields.removeAll(keepingCapacity: true)
            }
        }
        if inNumber { fields.append(number) }
        if !fields.isEmpty { body(fields) }
    }
}

/// `KEY:V V V` entries as three flat arrays, the keys sorted: a lookup is a binary search.
/// (As a dictionary of arrays, the two tables took ~760 KB of heap in 12,000 small arrays,
/// most of an empty server's heap; these take ~190 KB in six.)
struct ScalarMapping: Sendable {
    private let keys: [UInt32]
    /// Where each key's scalars start in `values`; one more entry, for the end of the last.
    private let starts: [UInt32]
    private let values: [Unicode.Scalar]

    init(_ text: String) {
        var flat: [UInt32] = []
        var spans: [(key: UInt32, start: Int, end: Int)] = []
        ConfusableTables.forEachEntry(text) { fields in
            spans.append((fields[0], flat.count, flat.count + fields.count - 1))
            flat.append(contentsOf: fields.dropFirst())
        }
        // The generated data is in code point order; sorted all the same, a later entry winning.
        spans.sort { ($0.key, $0.start) < ($1.key, $1.start) }
        var keys: [UInt32] = [], starts: [UInt32] = [], values: [Unicode.Scalar] = []
        keys.reserveCapacity(spans.count)
        starts.reserveCapacity(spans.count + 1)
        values.reserveCapacity(flat.count)
        for (index, span) in spans.enumerated() where index + 1 == spans.count || spans[index + 1].key != span.key {
            keys.append(span.key)
            starts.append(UInt32(values.count))
            values.append(contentsOf: flat[span.start..<span.end].map { Unicode.Scalar($0)! })
        }
        starts.append(UInt32(values.count))
        self.keys = keys
        self.starts = starts
        self.values = values
    }

    var count: Int { keys.count }

    /// The scalars `key` maps to, or nil.
    subscript(key: UInt32) -> ArraySlice<Unicode.Scalar>? {
        var low = 0, high = keys.count
        while low < high {
            let middle = (low + high) / 2
            if keys[middle] < key { low = middle + 1 } else { high = middle }
        }
        guard low < keys.count, keys[low] == key else { return nil }
        return values[Int(starts[low])..<Int(starts[low + 1])]
    }
}

/// The keys under which a name's look-alikes are found: the skeleton of the folded name, and the
/// folded skeleton of the name as typed. Folding first loses the confusables that depend on
/// case (`I` looks like `l`, `0` like `O`, but `i` and `o` map to nothing), so `aIice` and
/// `B0B` are caught only by the second.
public enum NameKeys {
    public static func of(_ name: String, _ casemapping: Casemapping) -> Set<String> {
        [Confusables.skeleton(casemapping.fold(name)), casemapping.fold(Confusables.skeleton(name))]
    }
}
