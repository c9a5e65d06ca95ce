import ChatClientKit
import ChatTransport
import IRCWire

/// Where each part of the screen goes at a given size.
public struct Layout: Equatable, Sendable {
    public let width: Int
    public let height: Int
    public let sidebarWidth: Int
    public var paneWidth: Int { sidebarWidth > 0 ? width - sidebarWidth - 1 : width }
    public var paneTop: Int { height >= 4 ? 1 : 0 }
    public var paneHeight: Int { max(0, height - 2 - paneTop) }
    public var statusRow: Int { height - 2 }
    public var inputRow: Int { height - 1 }

    /// `sidebar`: the sidebar-width setting (0: a fifth of the width, 12 to 24 columns).
    public init(width: Int, height: Int, sidebar: Int = 0) {
        self.width = width
        self.height = height
        // Narrow terminals give the messages the whole width; a chosen width leaves the pane 20.
        if width < 40 {
            sidebarWidth = 0
        } else if sidebar > 0 {
            sidebarWidth = min(sidebar, width - 21)
        } else {
            sidebarWidth = min(24, max(12, width / 5))
        }
    }
}

enum Palette {
    /// Nick colours: readable on dark and light backgrounds, no black, white or grey.
    static let nickColors: [PaletteColor] = [1, 2, 3, 4, 5, 6, 9, 10, 11, 12, 13, 14]
    static let bar = Style(reverse: true)
    static let dim = Style(dim: true)
    static let timestamp = Style(dim: true)
    static let error = Style(foreground: 1, bold: true)
    static let highlight = Style(foreground: 3, bold: true)

    /// The same colour for the same nick, on every screen and every run (FNV-1a of the folded name).
    static func nickStyle(_ nick: String, own: Bool) -> Style {
        var hash: UInt32 = 2_166_136_261
        for byte in Casemapping.rfc1459.fold(nick).utf8 {
            hash = (hash ^ UInt32(byte)) &* 16_777_619
        }
        return Style(foreground: nickColors[Int(hash % UInt32(nickColors.count))], bold: own)
    }
}

extension ChatModel {
    /// Draws the whole screen. Only the curses backend turns cells into terminal output.
    public func render(into screen: inout Screen) {
        screen.clear()
        guard width > 0 && height > 0 else { return }
        let layout = self.layout
        if layout.paneTop == 1 { renderTitle(into: &screen, layout) }
        if layout.paneHeight > 0 { renderMessages(into: &screen, layout) }
        if layout.sidebarWidth > 0 && layout.paneHeight > 0 { renderSidebar(into: &screen, layout) }
        if height >= 2 { renderStatus(into: &screen, layout) }
        renderInput(into: &screen, layout)
    }

    func renderTitle(into screen: inout Screen, _ layout: Layout) {
        screen.fill(x: 0, y: 0, width: width, height: 1, style: Palette.bar)
        // With several networks, whose conversation this is comes first.
        var title = hasSeveralNetworks ? " [" + PlainText.visible(networks[selectedNetwork].name) + "] " : " "
        if sendsToNewConversation {
            // A person picked for the first time: the pane still shows their room.
            title += PlainText.visible(target) + " (new direct conversation; showing \(PlainText.visible(viewedConversation?.name ?? "")))"
        } else if let conversation = viewedConversation {
            switch conversation.kind {
            case .server: title += "server messages"
            case .room:
                let people = conversation.members.count
                title += PlainText.visible(conversation.name) + (people > 0 ? " (\(people))" : "") + (conversation.topic.isEmpty ? "" : " — " + PlainText.visible(conversation.topic))
            case .direct: title += PlainText.visible(conversation.name) + " (direct)"
            }
        } else {
            title += PlainText.visible(target) + " (direct)"
        }
        // A long topic ends in an ellipsis, so it does not read as the whole of it.
        screen.put(Ellipsis.fit(title, width: width), x: 0, y: 0, limit: width, style: Palette.bar)
    }

    /// The /list picker in the message pane: a header, then one row per room.
    func renderRoomPicker(into screen: inout Screen, _ layout: Layout, selected: Int) {
        let rooms = state.roomList
        let paneWidth = layout.paneWidth
        guard paneWidth > 0, layout.paneHeight > 0 else { return }
        screen.put(Ellipsis.fit("\(rooms.count) rooms — Up/Down, Enter joins, Esc closes", width: paneWidth),
                   x: 0, y: layout.paneTop, limit: paneWidth, style: Palette.highlight)
        let visible = layout.paneHeight - 1
        guard visible > 0 else { return }
        let top = max(0, min(selected - visible / 2, rooms.count - visible))
        for (row, room) in rooms.dropFirst(top).prefix(visible).enumerated() {
            let y = layout.paneTop + 1 + row
            let isSelected = top + row == selected
            let users = String(room.users)
            let name = PlainText.visible(room.name)
            let text = name + String(repeating: " ", count: max(1, 20 - DisplayWidth.of(name)))
                + String(repeating: " ", count: max(0, 4 - users.count)) + users + "  " + PlainText.visible(room.topic)
            var style = Style.plain
            if isSelected { style.reverse = true; screen.fill(x: 0, y: y, width: paneWidth, height: 1, style: Style(reverse: true)) }
            screen.put(Ellipsis.fit(text, width: paneWidth), x: 0, y: y, limit: paneWidth, style: style)
        }
    }

    /// The pane's rows from the newest back (bottom row first), formatted only as far as
    /// `needed` rows: what render draws and how far PgUp may go.
    /// Each row says which line it belongs to (`line`: its index in the conversation; -1 for the
    /// read marker), for a click on a message.
    /// `skip`: rows at the bottom only counted, not drawn (below the view, or all of them to measure):
    /// a line wholly among them is an empty placeholder per row, its count from `rowCache`.
    func paneRows(_ conversation: Conversation, width paneWidth: Int, needed: Int, skip: Int = 0) -> [(spans: [Span], indent: Int, line: Int)] {
        var rows: [(spans: [Span], indent: Int, line: Int)] = []
        var progressShown = Set<Int>()
        // The read marker: a line between what was read and what came after, when both are here.
        var newerThanMarker = false
        var dividerDrawn = conversation.readMarker == nil
        // The smart filter: a run of quiet joins, parts, quits and renames, folded into one row.
        let folding = settings.isOn("smart-filter")
        var burst: [(index: Int, line: ChatLine)] = []
        func flushBurst() {
            defer { burst = [] }
            guard let newest = burst.first else { return }
            // A short run (one person rejoining) reads better as its lines than as counts.
            if burst.count < Self.smartFilterFoldsFrom {
                for item in burst { rows += lineRows(item.line, in: conversation, width: paneWidth).reversed().map { ($0.spans, $0.indent, item.index) } }
                return
            }
            // The counts in the order the kinds first came (a netsplit: quits, then joins).
            // People, not events: someone who joined three times in the burst is one who joined.
            var counts: [ChatLine.Kind: Int] = [:], order: [ChatLine.Kind] = []
            var counted = Set<String>()
            for item in burst.reversed() {
                if counts[item.line.kind] == nil { order.append(item.line.kind) }
                let who = item.line.sender.map { state.key(for: $0) } ?? item.line.text
                if counted.insert("\(item.line.kind)\u{0}\(who)").inserted { counts[item.line.kind, default: 0] += 1 }
            }
            let names: [ChatLine.Kind: String] = [.join: "joined", .part: "left", .quit: "quit", .nick: "renamed"]
            let words = order.compactMap { kind in names[kind].map { "\(counts[kind]!) \($0)" } }
            let spans = [Span(clock(newest.line.time) + " ", Palette.timestamp), Span("-!- " + words.joined(separator: ", "), Palette.dim)]
            let wrapped = Wrapper.wrap(spans, width: paneWidth, indent: 10)
            for (i, row) in wrapped.enumerated().reversed() { rows.append((row, i == 0 ? 0 : 10, -1)) }
        }
        for (index, line) in zip(conversation.lines.indices.reversed(), conversation.lines.reversed()) {
            if !dividerDrawn, let marker = conversation.readMarker {
                if line.time > marker {
                    if !line.isOwn && (line.kind == .message || line.kind == .action || line.kind == .notice) { newerThanMarker = true }
                } else {
                    dividerDrawn = true
                    flushBurst()
                    if newerThanMarker {
                        let text = "── new since you last read ──"
                        rows.append(([Span(text, Palette.highlight)], 0, -1))
                    }
                }
            }
            if folding && line.isQuiet {
                burst.append((index, line))
                continue
            }
            flushBurst()
            // Below the view: counted, not formatted (a transfer's progress row is drawn always).
            if rows.count < skip, !isTransfer(line) {
                let count = rowCount(line, in: conversation, width: paneWidth)
                if rows.count + count <= skip {
                    rows += repeatElement((spans: [Span](), indent: 0, line: index), count: count)
                    if rows.count >= needed { break }
                    continue
                }
            }
            // Under the newest line of a running transfer, a row of its own with its live
            // progress and what it is doing now (the line above may be the offer, long answered).
            if case .transfer(let id) = line.kind, !progressShown.contains(id), let info = transfers[id] {
                progressShown.insert(id)
                let indent = format(line, width: paneWidth).1
                if let bar = progressText(info, width: paneWidth - indent) {
                    // A received file is named as saved ("slow (1).dat" when slow.dat was taken).
                    let name = info.direction == .receiving ? Paths.lastComponent(of: info.localPath) : info.offeredName
                    let doing = (info.direction == .receiving ? "receiving " : "sending ") + PlainText.visible(name)
                    let progress = [Span(doing + "  " + bar, Palette.highlight)]
                    for row in Wrapper.wrap(progress, width: paneWidth - indent, indent: 0).reversed() { rows.append((row, indent, index)) }
                }
            }
            var own = lineRows(line, in: conversation, width: paneWidth)
            // The message cursor's line, reversed (the quote and reactions around it too).
            // So is the search hit just opened, until the next key: found at a glance.
            let isCursor = messageCursor.map { line.msgid == $0 } ?? false
            let isHit = revealing.map { $0.id == conversation.id && line.time == $0.time && line.text == $0.text } ?? false
            if isCursor || isHit {
                own = own.map { row in (row.spans.map { Span($0.text, Style(bold: $0.style.bold, reverse: true)) }, row.indent) }
            }
            rows += own.reversed().map { ($0.spans, $0.indent, index) }
            if rows.count >= needed { break }
        }
        flushBurst()
        return rows
    }

    /// The smart filter folds runs of this many quiet lines or more.
    static let smartFilterFoldsFrom = 3

    func isTransfer(_ line: ChatLine) -> Bool {
        if case .transfer = line.kind { return true }
        return false
    }

    /// The /search picker: a header, then one row per hit (where, when, who, the text).
    func renderSearchPicker(into screen: inout Screen, _ layout: Layout, _ picker: (query: String, hits: [SearchHit], selected: Int)) {
        let paneWidth = layout.paneWidth
        guard paneWidth > 0, layout.paneHeight > 0 else { return }
        // No query: the highlights view (/highlights).
        let header = picker.query.isEmpty
            ? "\(picker.hits.count) highlight\(picker.hits.count == 1 ? "" : "s"), newest first — Up/Down, Enter opens, Esc closes"
            : "\(picker.hits.count) line\(picker.hits.count == 1 ? "" : "s") with \(PlainText.visible(picker.query)) — Up/Down, Enter opens, Esc closes"
        screen.put(Ellipsis.fit(header, width: paneWidth), x: 0, y: layout.paneTop, limit: paneWidth, style: Palette.highlight)
        let visible = layout.paneHeight - 1
        guard visible > 0 else { return }
        let top = max(0, min(picker.selected - visible / 2, picker.hits.count - visible))
        for (row, hit) in picker.hits.dropFirst(top).prefix(visible).enumerated() {
            let y = layout.paneTop + 1 + row
            let when = String(ServerTime.format(hit.line.time + Double(utcOffset)).dropFirst(5).prefix(5)) + " " + clock(hit.line.time)
            // Said by someone: `<bob>`, `* bob`, `-bob-`; a join, a part or a note already names who.
            let who: String
            switch (hit.line.kind, hit.line.sender.map(PlainText.visible)) {
            case (.message, let sender?): who = "<\(sender)> "
            case (.action, let sender?): who = "* \(sender) "
            case (.notice, let sender?): who = "-\(sender)- "
            default: who = "-!- "
            }
            // With several networks each hit says where it was said.
            let network = hasSeveralNetworks && searchHitNetworks.indices.contains(top + row)
                ? "[" + PlainText.visible(networks[searchHitNetworks[top + row]].name) + "] " : ""
            let text = network + PlainText.visible(hit.name) + " " + when + " " + who + Self.aroundMatch(PlainText.visible(hit.line.text), picker.query)
            var style = Style.plain
            if top + row == picker.selected { style.reverse = true; screen.fill(x: 0, y: y, width: paneWidth, height: 1, style: Style(reverse: true)) }
            screen.put(Ellipsis.fit(text, width: paneWidth), x: 0, y: y, limit: paneWidth, style: style)
        }
    }

    /// A long line's text from a little before the first searched word, so the match shows.
    static func aroundMatch(_ text: String, _ query: String) -> String {
        let lower = text.lowercased()
        let starts = query.split(separator: " ").compactMap { lower.firstRange(of: $0.lowercased())?.lowerBound }
        guard let first = starts.min() else { return text }
        let offset = lower.distance(from: lower.startIndex, to: first)
        guard offset > 20 else { return text }
        return "…" + String(text.dropFirst(offset - 10))
    }

    func renderMessages(into screen: inout Screen, _ layout: Layout) {
        if let selected = roomPicker {
            renderRoomPicker(into: &screen, layout, selected: selected)
            return
        }
        if let picker = searchPicker {
            renderSearchPicker(into: &screen, layout, picker)
            return
        }
        let paneWidth = layout.paneWidth
        guard paneWidth > 0, let conversation = viewedConversation else { return }
        var skip = scroll[viewedID] ?? 0
        var rows = paneRows(conversation, width: paneWidth, needed: layout.paneHeight + skip, skip: skip)
        if skip > 0, rows.count < skip + layout.paneHeight - 1 {
            // Scrolled past the oldest row (lines folded or went since the scroll was set, as a
            // search hit's surroundings arriving): the oldest row at the top, not the rows below
            // the view (counted, not drawn) showing as blanks.
            skip = max(0, rows.count - max(0, layout.paneHeight - 1))
            rows = paneRows(conversation, width: paneWidth, needed: layout.paneHeight + skip, skip: skip)
        }
        // Scrolled up: the bottom row says how much is below, and covers no line.
        let height = skip > 0 ? max(0, layout.paneHeight - 1) : layout.paneHeight
        let visible = rows.dropFirst(min(skip, max(0, rows.count - height))).prefix(height)
        var y = layout.paneTop + height - 1
        for row in visible {
            var x = row.indent
            for span in row.spans {
                x += screen.put(span.text, x: x, y: y, limit: paneWidth - x, style: span.style)
            }
            y -= 1
        }
        if skip > 0 && layout.paneHeight > 0 {
            let note = " \(skip) more row\(skip == 1 ? "" : "s") below (PgDn) "
            let w = DisplayWidth.of(note)
            screen.fill(x: 0, y: layout.paneTop + layout.paneHeight - 1, width: paneWidth, height: 1, style: Style.plain)
            screen.put(note, x: max(0, paneWidth - w), y: layout.paneTop + layout.paneHeight - 1, limit: paneWidth, style: Palette.bar)
        }
    }

    /// `[#####-----]  45%  12.3 MiB/s  3 s left` for a transfer in progress.
    func progressText(_ info: TransferInfo, width: Int) -> String? {
        guard info.state == .active || info.state == .connecting else { return nil }
        let percent = Int(info.fraction * 100)
        let rate = info.rate(now: now)
        let left = rate > 0 ? Int((Double(info.size - info.transferred) / rate).rounded(.up)) : nil
        let barWidth = max(5, min(20, width / 4))
        let filled = Int(info.fraction * Double(barWidth))
        let bar = "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: barWidth - filled) + "]"
        var text = "\(bar) \(percent)%"
        if rate > 0 { text += "  \(Self.rateText(rate))" }
        if let left { text += "  \(left) s left" }
        return text
    }

    static func rateText(_ bytesPerSecond: Double) -> String {
        let mebibytes = bytesPerSecond / 1_048_576
        if mebibytes >= 1 {
            let tenths = Int(mebibytes * 10)
            return "\(tenths / 10).\(tenths % 10) MiB/s"
        }
        return "\(Int(bytesPerSecond / 1024)) KiB/s"
    }

    /// One line's rows, top to bottom: the quote of what it answers, the message (a multiline
    /// message's lines under the first at the indent, a blank line kept), its reactions.
    func lineRows(_ line: ChatLine, in conversation: Conversation, width paneWidth: Int) -> [(spans: [Span], indent: Int)] {
        let (spans, indent) = format(line, width: paneWidth)
        var rows: [(spans: [Span], indent: Int)] = []
        if let parent = line.replyTo {
            rows.append(([Span(replyQuote(parent, in: conversation, width: paneWidth - indent), Palette.dim)], indent))
        }
        for (i, row) in Wrapper.wrap(spans, width: paneWidth, indent: indent).enumerated() { rows.append((row, i == 0 ? 0 : indent)) }
        let paragraphs = line.deletedBy == nil ? line.text.split(separator: "\n", omittingEmptySubsequences: false) : [""]
        for paragraph in paragraphs.dropFirst() {
            for row in Wrapper.wrap(FormattedText.spans(String(paragraph), base: Style.plain), width: paneWidth - indent, indent: 0) { rows.append((row, indent)) }
        }
        if !line.reactions.isEmpty {
            for row in Wrapper.wrap(reactionSpans(line.reactions), width: paneWidth - indent, indent: 0) { rows.append((row, indent)) }
        }
        return rows
    }

    /// `↳ bob: first words…` for the message a reply answers (or that it is not here).
    func replyQuote(_ msgid: String, in conversation: Conversation, width: Int) -> String {
        guard let index = conversation.index(ofMessage: msgid) else { return "↳ a reply to an earlier message" }
        let parent = conversation.lines[index]
        let text = parent.deletedBy.map { "(deleted by \($0))" } ?? parent.text.split(separator: "\n").first.map(String.init) ?? ""
        return Ellipsis.fit(PlainText.visible("↳ \(parent.sender ?? ""): \(text)"), width: max(1, width))
    }

    /// `👍 3  ❤ 1`: each emoji with its count, the ones you gave in the highlight colour.
    func reactionSpans(_ reactions: [Reaction]) -> [Span] {
        var spans: [Span] = []
        for (index, reaction) in reactions.enumerated() {
            if index > 0 { spans.append(Span("  ", Style.plain)) }
            let mine = reaction.nicks.contains { state.isMe($0) }
            spans.append(Span(PlainText.visible(reaction.emoji) + " \(reaction.nicks.count)", mine ? Palette.highlight : Palette.dim))
        }
        return spans
    }

    /// A line as spans, and the hanging indent for its continuation rows.
    func format(_ line: ChatLine, width: Int) -> ([Span], Int) {
        var spans = [Span(clock(line.time) + " ", Palette.timestamp)]
        let sender = PlainText.visible(line.sender ?? "")
        var textStyle = Style.plain
        switch line.kind {
        case .message:
            spans.append(Span("<", Palette.dim))
            spans.append(Span(sender, nickStyle(sender, own: line.isOwn)))
            spans.append(Span("> ", Palette.dim))
        case .action:
            spans.append(Span("* ", Palette.dim))
            spans.append(Span(sender + " ", nickStyle(sender, own: line.isOwn)))
        case .notice:
            spans.append(Span("-" + sender + "- ", nickStyle(sender, own: line.isOwn)))
        case .error:
            spans.append(Span("!!! ", Palette.error))
            textStyle = Palette.error
        case .transfer:
            spans.append(Span("-*- ", Palette.highlight))
        default:
            spans.append(Span("-!- ", Palette.dim))
            textStyle = Palette.dim
        }
        if line.isHighlight && !line.isOwn { textStyle = Palette.highlight }
        if line.isPending { textStyle = Palette.dim }
        let indent = min(spans.reduce(0) { $0 + DisplayWidth.of($1.text) }, width / 2)
        // Connected, a held line waits for its person (MONITOR), not for the connection.
        let pending = line.isPending ? [Span(!networks[focus].isDown ? "  (held: sent when they are back)" : "  (held: sent when the connection is back)", Palette.dim)] : []
        if let by = line.deletedBy { return (spans + [Span("(deleted by \(PlainText.visible(by)))", Palette.dim)], indent) }
        // The first line of a multiline message here; `paneRows` draws the rest.
        let first = line.text.firstIndex(of: "\n").map { String(line.text[..<$0]) } ?? line.text
        return (spans + FormattedText.spans(first, base: textStyle) + pending, indent)
    }

    /// A nickname's colour, or none with nick-colors off (your own still bold).
    func nickStyle(_ nick: String, own: Bool) -> Style {
        settings.isOn("nick-colors") ? Palette.nickStyle(nick, own: own) : Style(bold: own)
    }

    func clock(_ time: Double) -> String {
        let local = Int((time + Double(utcOffset)).rounded(.down))
        let secondOfDay = ((local % 86_400) + 86_400) % 86_400
        let hh = secondOfDay / 3600, mm = secondOfDay / 60 % 60, ss = secondOfDay % 60
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return showSeconds ? "\(two(hh)):\(two(mm)):\(two(ss))" : "\(two(hh)):\(two(mm))"
    }

    func renderSidebar(into screen: inout Screen, _ layout: Layout) {
        let x = layout.paneWidth + 1
        let border = layout.paneWidth
        for y in layout.paneTop..<(layout.paneTop + layout.paneHeight) {
            screen.put("│", x: border, y: y, limit: 1, style: Palette.dim)
        }
        let items = sidebarRows
        let chosen = SidebarRow(network: selectedNetwork, item: selection)
        let top = sidebarTop(items, layout)
        // Conversations are numbered (Alt-1…Alt-0, /window N); the numbers line up, and the
        // people under a room are indented by as much.
        let numbers = rowNumbers
        let digits = String(numbers.count).count
        for (row, item) in items.dropFirst(top).prefix(layout.paneHeight).enumerated() {
            let y = layout.paneTop + row
            let isSelected = item == chosen
            let network = networks[item.network]
            var (label, badge, style) = item.item == .networkHeading ? networkHeading(network, width: layout.sidebarWidth) : sidebarEntry(item.item, network.state)
            switch item.item {
            case .conversation:
                let number = String(numbers[item] ?? 0)
                label = String(repeating: " ", count: digits - number.count) + number + " " + label
            case .user:
                label = String(repeating: " ", count: digits) + label
            case .heading, .networkHeading:
                break
            }
            // With several networks, one that is down greys its own rows only.
            if hasSeveralNetworks && network.isDown { style = Palette.dim }
            if isSelected { style.reverse = true; screen.fill(x: x, y: y, width: layout.sidebarWidth, height: 1, style: Style(reverse: true)) }
            let badgeWidth = DisplayWidth.of(badge)
            let room = layout.sidebarWidth - (badgeWidth > 0 ? badgeWidth + 1 : 0)
            // A name too long for the sidebar ends in an ellipsis, so it does not read as another name.
            screen.put(Ellipsis.fit(label, width: room), x: x, y: y, limit: room, style: style)
            if badgeWidth > 0 {
                var badgeStyle = Palette.highlight
                badgeStyle.reverse = isSelected
                screen.put(badge, x: x + layout.sidebarWidth - badgeWidth, y: y, limit: badgeWidth, style: badgeStyle)
            }
        }
    }

    /// The first sidebar row shown: the selection in the middle, unless the wheel moved the list
    /// (for as long as the selection stays where it was).
    func sidebarTop(_ items: [SidebarRow], _ layout: Layout) -> Int {
        let chosen = SidebarRow(network: selectedNetwork, item: selection)
        let most = max(0, items.count - layout.paneHeight)
        if let offset = sidebarOffset, offset.selection == chosen { return min(max(0, offset.top), most) }
        let selected = items.firstIndex(of: chosen) ?? 0
        return max(0, min(selected - layout.paneHeight / 2, most))
    }

    /// The row over a network's rows: `[name]`, what is wrong with its connection, its unread
    /// lines. Narrow, the marker matters more than the count, and both more than the whole name.
    func networkHeading(_ network: NetworkView, width: Int) -> (String, String, Style) {
        let (count, urgent) = network.unread
        var badge = count > 0 ? String(count) + (urgent ? "!" : "") : ""
        let marker = network.marker.isEmpty ? "" : " " + network.marker
        let name = PlainText.visible(network.name)
        let full = "[" + name + "]" + marker
        if !marker.isEmpty && !badge.isEmpty && DisplayWidth.of(full) + badge.count + 1 > width { badge = "" }
        let room = width - (badge.isEmpty ? 0 : badge.count + 1)
        let label = DisplayWidth.of(full) <= room ? full
            : "[" + Self.cut(name, width: max(1, room - 2 - DisplayWidth.of(marker))) + "]" + marker
        return (label, badge, Style(bold: true))
    }

    /// A network's name cut to fit: a `host:port` name from its start (`…0.1:17667`: names from
    /// `--host` that share a host differ at their end), any other at its end (`libe…`).
    static func cut(_ name: String, width: Int) -> String {
        guard DisplayWidth.of(name) > width else { return name }
        guard name.contains(":") else { return Ellipsis.fit(name, width: width) }
        var kept = ""
        for character in name.reversed() {
            guard DisplayWidth.of(String(character) + kept) <= width - 1 else { break }
            kept = String(character) + kept
        }
        return "…" + kept
    }

    /// Label, unread badge and style of one sidebar row, of the network whose book is `state`.
    func sidebarEntry(_ item: SidebarItem, _ state: ConversationBook) -> (String, String, Style) {
        func badge(_ conversation: Conversation?) -> String {
            guard let conversation, conversation.unread > 0 else { return "" }
            return String(conversation.unread) + (conversation.mentioned ? "!" : "")
        }
        switch item {
        case .heading(let text):
            return ("── " + text + " ──", "", Palette.dim)
        case .networkHeading:
            return ("", "", Palette.dim) // drawn by networkHeading
        case .conversation(.server):
            return ("(server)", badge(state[.server]).isEmpty ? "" : "•", Palette.dim)
        case .conversation(let id):
            let conversation = state[id]
            let name = conversation?.name ?? id.key
            let style = conversation?.kind == .room ? Style(bold: true) : Style.plain
            let out = conversation?.kind == .room && conversation?.isJoined == false
            // "(left)" only when we left; a room waiting for the connection is just greyed.
            let left = out && conversation?.awaitingRejoin == false
            return (PlainText.visible(name) + (left ? " (left)" : ""), badge(conversation), out ? Palette.dim : style)
        case .user(let nick, let room):
            let member = state[room]?.members[state.key(for: nick)]
            let prefix = member?.highestPrefix ?? ""
            let isMe = state.isMe(nick)
            var style = nickStyle(nick, own: isMe)
            // Away people, and everyone while the connection is down (the list may be stale).
            if member?.isAway == true || state[room]?.isJoined == false { style = Palette.dim }
            // A display name (draft/metadata-2) beside the nickname, never instead of it.
            // Written " · Name", never in parentheses: a display name of "you" must not read as the "(you)" of your own row.
            let shown = state.displayName(of: nick).map { " · " + PlainText.visible($0) } ?? ""
            let label = (prefix.isEmpty ? " " : prefix) + PlainText.visible(nick) + (isMe ? " (you)" : shown)
            return (label, isMe ? "" : badge(state[.direct(state.key(for: nick))]), style)
        }
    }

    func renderStatus(into screen: inout Screen, _ layout: Layout) {
        let y = layout.statusRow
        screen.fill(x: 0, y: y, width: width, height: 1, style: Palette.bar)
        var parts = [" " + PlainText.visible(state.nick) + (isAway ? " (away)" : "")]
        // With several networks, the state is the shown network's, and says whose.
        parts.append((hasSeveralNetworks ? networks[selectedNetwork].name + ": " : "") + statusText)
        // The hotlist: the numbers of conversations with news, `!` for yours (Alt-a goes there).
        let news = hotlist
        if !news.isEmpty { parts.append(news) }
        if case .conversation(.server) = selection {
            parts.append(settings["arrows"] == "history" ? "pick a conversation with Alt-1…9 or Alt-Right" : "pick a room or a person with Up/Down")
        } else if choosingReaction {
            parts.append("react with: " + Shortcodes.common.prefix(9).enumerated().map { "\($0.offset + 1) \($0.element.emoji)" }.joined(separator: " ") + " (another key: none)")
        } else if let cursor = messageCursor {
            let deletable = viewedConversation.flatMap { conversation in
                conversation.index(ofMessage: cursor).map { mayDelete(conversation.lines[$0], in: conversation) }
            } ?? false
            parts.append(deletable ? "r reply · e react · d delete · y copy" : "r reply · e react · y copy")
        } else if let reply = replyingTo {
            parts.append("replying to \(reply.nick): \(reply.snippet) (Esc: not a reply)")
        } else {
            // Who is typing here now (+typing): a few names, then how many more; before the
            // rest, which a narrow screen cuts.
            if let typing = state.conversation(target)?.typing.values.filter({ $0.current(at: now) }).map(\.nick).sorted(), !typing.isEmpty {
                let names = typing.prefix(3).joined(separator: ", ") + (typing.count > 3 ? " and \(typing.count - 3) more" : "")
                parts.append(names + (typing.count == 1 ? " is" : " are") + " typing…")
            }
            if let room = state.conversation(target), room.kind == .room, !room.isJoined, !room.awaitingRejoin {
                parts.append("not in \(PlainText.visible(room.name)): /join \(PlainText.visible(room.name))")
            } else {
                parts.append("Enter sends to " + PlainText.visible(target) + (sendsToNewConversation ? " (new)" : ""))
            }
        }
        // Reasons in the status (an ERROR text, a refused nickname) come from the network too.
        // Too long for the row: cut at a word with an ellipsis, never mid-word.
        screen.put(Ellipsis.fit(PlainText.visible(parts.joined(separator: " │ ")), width: width), x: 0, y: y, limit: width, style: Palette.bar)
    }

    var statusText: String {
        switch status {
        case .connecting(let host, let port, let attempt):
            return "connecting to \(host) port \(port)" + (attempt > 1 ? " (attempt \(attempt))" : "") + "…"
        case .connected:
            return "connected, registering…"
        case .registered:
            if let lag, lag >= 0.5 { return "connected, lag \(Int((lag * 10).rounded()) / 10).\(Int((lag * 10).rounded()) % 10) s" }
            return "connected"
        case .disconnected(let reason):
            return "disconnected: \(reason)"
        case .reconnecting(_, let reason):
            let seconds = max(0, Int(((reconnectAt ?? now) - now).rounded(.up)))
            // A long wait says how to skip it.
            return (seconds > 0 ? "reconnecting in \(seconds) s" : "reconnecting now") + (seconds >= 10 ? ", /reconnect: now" : "") + " (\(reason))"
        case .stopped(let reason):
            return "disconnected: \(reason) (/reconnect to connect again)"
        }
    }

    func renderInput(into screen: inout Screen, _ layout: Layout) {
        let y = layout.inputRow
        if confirmingQuit {
            let text = closesRoom ? "Close the room for \(othersOnline) \(othersOnline == 1 ? "person" : "people")? y/n (Ctrl-C again: yes)"
                : "Quit chat-tui? y/n (Ctrl-C again: yes)"
            screen.put(text, x: 0, y: y, limit: width, style: Palette.highlight)
            screen.cursor = nil
            return
        }
        if let deleting = confirmingDelete {
            screen.put(Ellipsis.fit("Delete \(deleting.what)? y/n", width: width), x: 0, y: y, limit: width, style: Palette.highlight)
            screen.cursor = nil
            return
        }
        if let trust = pendingTrust {
            // The question first, so a narrow row still shows what to answer.
            screen.put(Ellipsis.fit("Trust \(trust.server)'s certificate? y/n  (SHA-256 \(trust.fingerprint))", width: width), x: 0, y: y, limit: width, style: Palette.highlight)
            screen.cursor = nil
            return
        }
        if let lines = pendingPaste {
            screen.put("Paste \(lines.count) lines to \(target)? y/n", x: 0, y: y, limit: width, style: Palette.highlight)
            screen.cursor = nil
            return
        }
        let available = max(0, width - 2)
        let shown = editor.window(width: available)
        let (text, cursorColumn) = (shown.text, shown.cursorColumn)
        // "<" in place of the prompt when the line goes on to the left of the window.
        let prompt = shown.hiddenBefore ? "< " : "> "
        screen.put(prompt, x: 0, y: y, limit: width, style: shown.hiddenBefore ? Palette.highlight : Palette.dim)
        screen.put(text, x: prompt.count, y: y, limit: available)
        screen.cursor = (min(width - 1, prompt.count + cursorColumn), y)
    }
}
