import ChatClientKit

// The mouse (SGR reporting; the mouse setting): a click on a sidebar row picks it, the wheel
// scrolls the messages (or the sidebar, over it, or a picker's rows), a click on a message opens
// the message cursor there, a click in the input moves the caret. Shift-drag stays the
// terminal's own selection (terminals keep Shift for themselves).
extension ChatModel {
    mutating func mouse(_ event: MouseEvent) -> [UICommand] {
        guard settings.isOn("mouse") else { return [] }
        // A release means nothing (a click is its press): it must not take away what the press did.
        guard event.pressed || event.button == .wheelUp || event.button == .wheelDown else { return [] }
        // The message cursor goes with any other mouse event; a click on a message puts it there again.
        messageCursor = nil
        choosingReaction = false
        let layout = self.layout
        let inRows = event.y >= layout.paneTop && event.y < layout.paneTop + layout.paneHeight
        let inSidebar = layout.sidebarWidth > 0 && event.x > layout.paneWidth && inRows
        let inPane = event.x < layout.paneWidth && inRows
        switch event.button {
        case .wheelUp, .wheelDown:
            let up = event.button == .wheelUp
            if inSidebar {
                let items = sidebarRows
                let top = sidebarTop(items, layout) + (up ? -3 : 3)
                sidebarOffset = (min(max(0, top), max(0, items.count - layout.paneHeight)), SidebarRow(network: selectedNetwork, item: selection))
                return []
            }
            if roomPicker != nil || searchPicker != nil { return press(up ? .up : .down) }
            guard inPane else { return [] }
            if up {
                // At the top of what is loaded, as PgUp: the room's history before it.
                if scrollPane(by: 3), let room = viewedConversation, room.kind == .room,
                   let oldest = room.lines.first(where: { $0.msgid != nil })?.msgid, olderAsked[room.id] != oldest {
                    olderAsked[room.id] = oldest
                    return [.fetchOlder(room: room.name, before: oldest)]
                }
            } else {
                scrollPane(by: -3)
            }
            return []
        case .left where event.pressed:
            if inSidebar { return clickSidebar(row: sidebarTop(sidebarRows, layout) + event.y - layout.paneTop) }
            if inPane { return clickPane(y: event.y, layout) }
            if event.y == layout.inputRow && pendingPaste == nil && pendingTrust == nil && !confirmingQuit {
                editor.moveCursor(toColumn: max(0, event.x - 2), width: max(0, width - 2))
            }
            return []
        default:
            return []
        }
    }

    mutating func clickSidebar(row: Int) -> [UICommand] {
        let items = sidebarRows
        guard items.indices.contains(row), isSelectable(items[row]) else { return [] }
        // The list stays where it is (scrolled by the wheel or not): the row clicked stays under the pointer.
        let top = sidebarTop(items, layout)
        messageCursor = nil
        let commands = selectIndex(row)
        sidebarOffset = (top, SidebarRow(network: selectedNetwork, item: selection))
        return commands
    }

    /// A message clicked: the message cursor on it (a picker's row: that row chosen).
    mutating func clickPane(y: Int, _ layout: Layout) -> [UICommand] {
        if let picker = searchPicker {
            let visible = layout.paneHeight - 1
            let top = max(0, min(picker.selected - visible / 2, picker.hits.count - visible))
            let index = top + y - layout.paneTop - 1
            if picker.hits.indices.contains(index) { searchPicker?.selected = index }
            return []
        }
        if let selected = roomPicker {
            let rooms = state.roomList
            let visible = layout.paneHeight - 1
            let top = max(0, min(selected - visible / 2, rooms.count - visible))
            let index = top + y - layout.paneTop - 1
            if rooms.indices.contains(index) { roomPicker = index }
            return []
        }
        guard let conversation = viewedConversation else { return [] }
        let skip = scroll[viewedID] ?? 0
        let height = skip > 0 ? max(0, layout.paneHeight - 1) : layout.paneHeight
        let fromBottom = layout.paneTop + height - 1 - y
        guard fromBottom >= 0 else { return [] }
        let rows = paneRows(conversation, width: layout.paneWidth, needed: layout.paneHeight + skip)
        let wanted = min(skip, max(0, rows.count - height)) + fromBottom
        guard rows.indices.contains(wanted), rows[wanted].line >= 0 else { return [] }
        let index = rows[wanted].line
        guard cursorStops(conversation).contains(index), let msgid = conversation.lines[index].msgid else { return [] }
        messageCursor = msgid
        return []
    }
}
