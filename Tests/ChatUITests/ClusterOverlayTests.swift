import Testing
@testable import ChatUI

/// Emoji made of several code points, each written whole past curses (issue 24).
@Suite("clusters written past curses")
struct ClusterOverlayTests {
    static let family = "👨\u{200D}👩\u{200D}👧\u{200D}👦"
    static let flag = "🇯🇵"
    static let skinTone = "👍🏽"
    static let keycap = "1\u{FE0F}\u{20E3}"
    static let heart = "\u{2764}\u{FE0F}"
    static let clusters = [family, flag, skinTone, keycap, heart]

    @Test("each is one cluster of width 2 that curses cannot hold; plain text, CJK, a lone emoji and e + a combining accent can")
    func whichGoPast() {
        for cluster in Self.clusters {
            #expect(cluster.count == 1, "\(cluster) is one extended grapheme cluster")
            #expect(DisplayWidth.of(cluster) == 2, "\(cluster)")
            #expect(ClusterOverlay.needsDirectWrite(cluster), "\(cluster)")
        }
        for plain in ["a", "中", "😻", "e\u{301}", " "] { #expect(!ClusterOverlay.needsDirectWrite(plain), "\(plain)") }
    }

    @Test("the bytes written: each cluster whole, after the cursor set to its cell, then the cursor set to the column after it and the cells it could cover again, then back")
    func bytesWhole() {
        var screen = Screen(width: 20, height: 2)
        screen.put("a" + Self.family + "b" + Self.flag + Self.skinTone, x: 0, y: 1)
        let plan = ClusterOverlay.plan(previous: nil, screen: screen)
        #expect(plan.writes.map(\.x) == [1, 4, 6])
        let written = String(decoding: ClusterOverlay.bytes(plan.writes, cursor: (x: 3, y: 0)), as: UTF8.self)
        // After each, the cells a wider drawing could cover are written again: the family's "b"
        // (up to the flag), the two blanks after the skin tone; the flag's are the skin tone's own.
        #expect(written == "\u{1B}[2;2H\(Self.family)\u{1B}[0m\u{1B}[2;4Hb"
                + "\u{1B}[2;5H\(Self.flag)\u{1B}[0m\u{1B}[2;7H"
                + "\u{1B}[2;7H\(Self.skinTone)\u{1B}[0m\u{1B}[2;9H  "
                + "\u{1B}[1;4H")
        #expect([Self.family, Self.flag, Self.skinTone, Self.keycap, Self.heart].map(ClusterOverlay.overhang) == [6, 2, 2, 0, 0],
                "a flag: each regional indicator alone is two wide")
        // The raw UTF-8 of every cluster is there in one piece (what a terminal needs to draw it whole).
        let bytes = ClusterOverlay.bytes(plan.writes, cursor: (x: 0, y: 0))
        for cluster in [Self.family, Self.flag, Self.skinTone] {
            let utf8 = Array(cluster.utf8)
            #expect((0...(bytes.count - utf8.count)).contains { Array(bytes[$0..<$0 + utf8.count]) == utf8 }, "\(cluster)")
        }
    }

    @Test("a styled cluster carries its style and resets it")
    func styled() {
        var screen = Screen(width: 4, height: 1)
        screen.put(Self.keycap, x: 0, y: 0, style: Style(foreground: 3, background: 8, bold: true, reverse: true))
        let written = String(decoding: ClusterOverlay.bytes(ClusterOverlay.plan(previous: nil, screen: screen).writes, cursor: (x: 0, y: 0)), as: UTF8.self)
        #expect(written == "\u{1B}[1;1H\u{1B}[1;7;38;5;3;48;5;8m\(Self.keycap)\u{1B}[0m\u{1B}[1;3H\u{1B}[1;1H")
    }

    @Test("next frame: unchanged clusters are not written again; a new one is; one gone or changed repaints its row and writes the row's others again")
    func frames() {
        var first = Screen(width: 10, height: 3)
        first.put(Self.flag + " x", x: 0, y: 0)
        first.put(Self.heart, x: 0, y: 1)
        var second = first
        second.put("y", x: 4, y: 0)                       // beside a cluster: nothing to write
        second.put(Self.family, x: 0, y: 2)               // new
        var plan = ClusterOverlay.plan(previous: first, screen: second)
        #expect(plan.repaint == [])
        #expect(plan.writes.map(\.text) == [Self.family])
        var third = second
        third.put("ab", x: 0, y: 1)                       // the heart goes
        third.put(Self.skinTone, x: 4, y: 2)              // a second cluster in the family's row
        third.put(Self.keycap, x: 0, y: 2)                // the family changed
        plan = ClusterOverlay.plan(previous: second, screen: third)
        #expect(plan.repaint == [1, 2])
        #expect(plan.writes.map(\.text) == [Self.keycap, Self.skinTone])
        // A change in the cells a cluster could cover writes it again, with the new text after it.
        var covered = first
        covered.put("z", x: 3, y: 0)
        plan = ClusterOverlay.plan(previous: first, screen: covered)
        #expect(plan.repaint == [] && plan.writes.map(\.text) == [Self.flag] && plan.writes[0].following.map(\.text) == [" ", "z"])
        // A resize (no previous) writes every one.
        #expect(ClusterOverlay.plan(previous: nil, screen: third).writes.count == 3)
    }

    @Test("a row with the family, flag, skin tone, keycap and VS16 beside the sidebar: the border in its column at 60, 100 and 200 columns", arguments: [60, 100, 200])
    func besideTheSidebar(_ width: Int) {
        let line = Self.clusters.joined(separator: " ")
        let model = lobbyModel(width: width, height: 12, extra: [":bob!b@h PRIVMSG #lobby :\(line)"])
        let screen = draw(model)
        let layout = Layout(width: width, height: 12)
        let row = (0..<12).first { screen.line($0).contains("<bob>") }!
        #expect(screen.line(row).contains(line), "every cluster whole in the row: \(screen.line(row))")
        // The sidebar's border is at the same column in the message's row as in every other row of the pane.
        let pane = layout.paneTop..<(layout.paneTop + layout.paneHeight)
        let border = pane.map { y in (0..<width).first { x in !screen[x, y].isContinuation && screen[x, y].text == "│" } }
        #expect(pane.contains(row) && border.allSatisfy { $0 != nil && $0 == border.first! }, "border columns \(border)")
        #expect(DisplayWidth.of(String(screen.line(row).prefix { $0 != "│" })) == border.first!, "the columns before the border add up")
    }
}

extension ClusterOverlayTests {
    @Test("the whole 60×12 screen with the five clusters in a message: every row, the sidebar aligned")
    func golden() {
        let model = lobbyModel(extra: [":bob!b@h PRIVMSG #lobby :" + Self.clusters.joined(separator: " ") + " end"])
        expectScreen(model, Self.goldenRows)
    }

    @Test("a run of clusters longer than the pane wraps between clusters: none cut, every row the screen's width, the border in place")
    func wrapsBetweenClusters() {
        // 30 clusters of two columns (with no spaces) in a pane of 47: rows break between them.
        let run = String(repeating: Self.clusters.joined(), count: 6)
        let model = lobbyModel(extra: [":bob!b@h PRIVMSG #lobby :" + run])
        expectScreen(model, [
            " #lobby (4)                                                 ",
            "                                               │1 (server)  ",
            "                                               │2 #lobby    ",
            "                                               │ @alice…    ",
            "                                               │ +bob       ",
            "                                               │  carol     ",
            "                                               │  小明      ",
            "10:05 -!- You joined #lobby                    │            ",
            // 35 columns after the prefix: 17 clusters, one column left over, then the next row.
            "10:05 <bob> " + String(repeating: Self.clusters.joined(), count: 3) + Self.family + Self.flag + " │            ",
            "            " + Self.skinTone + Self.keycap + Self.heart + String(repeating: Self.clusters.joined(), count: 2) + "         │            ",
            " alice │ connected │ Enter sends to #lobby                  ",
            ">                                                           ",
        ])
    }

    static let goldenRows: [String] = [
        " #lobby (4)                                                 ",
        "                                               │1 (server)  ",
        "                                               │2 #lobby    ",
        "                                               │ @alice…    ",
        "                                               │ +bob       ",
        "                                               │  carol     ",
        "                                               │  小明      ",
        "                                               │            ",
        "10:05 -!- You joined #lobby                    │            ",
        "10:05 <bob> \(family) \(flag) \(skinTone) \(keycap) \(heart) end                 │            ",
        " alice │ connected │ Enter sends to #lobby                  ",
        ">                                                           ",
    ]
}
