"""The full-screen chat end to end: the real binary in tmux against our server.

Two users; alice picks 小明 with the arrow keys and sends a direct message in Chinese;
小明's screen shows it in the right conversation, in the right columns; a resize keeps the
layout whole; /quit gives the terminal back in cooked mode.
"""
import os
import shutil
import subprocess
import time
import unicodedata

import pytest

from conftest import BINARY, end_tmux

SOCKET = f"chat-tui-test-{os.getpid()}"
SCREENS = os.environ.get("CHAT_TUI_SCREENS")  # a folder to save the captured screens in


def tmux(*args):
    return subprocess.run(["tmux", "-u", "-L", SOCKET, *args], check=True, capture_output=True, text=True).stdout


def capture(session):
    return tmux("capture-pane", "-p", "-t", session).split("\n")[:-1]


def width(text):
    total = 0
    for ch in text:
        if unicodedata.combining(ch):
            continue
        total += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return total


def wait_for(session, predicate, timeout=15):
    deadline = time.monotonic() + timeout
    screen = []
    while time.monotonic() < deadline:
        screen = capture(session)
        if predicate(screen):
            return screen
        time.sleep(0.1)
    with open(f"/tmp/chat-tui-{session}-last-screen.txt", "w") as f:
        f.write("\n".join(screen))
    raise AssertionError(f"{session} never showed what we waited for:\n" + "\n".join(screen))


def border_columns(screen):
    return {width(row[: row.index("│")]) for row in screen[1:-2] if "│" in row}


def redrawn_at(columns, rows):
    """The screen has been redrawn for the new size: its border is where that size puts it."""
    sidebar = min(24, max(12, columns // 5))
    return lambda s: len(s) == rows and border_columns(s) == {columns - sidebar - 1}


def assert_layout_whole(screen, columns):
    """Every row is exactly `columns` wide and the sidebar border is in one column."""
    borders = set()
    for row in screen[1:-2]:
        assert width(row.ljust(columns)) == columns or width(row) <= columns, f"row wider than the screen: {row!r}"
        if "│" in row:
            borders.add(width(row[: row.index("│")]))
    assert len(borders) == 1, f"sidebar border moved: columns {sorted(borders)}"


def save(name, screen):
    if SCREENS:
        os.makedirs(SCREENS, exist_ok=True)
        with open(os.path.join(SCREENS, name + ".txt"), "w") as f:
            f.write("\n".join(screen) + "\n")


@pytest.fixture
def sessions(server, tmp_path):
    if not shutil.which("tmux"):
        pytest.fail("tmux is missing: make deps installs it")
    env = "LANG=C.UTF-8 TERM=xterm-256color"
    for name, nick in (("alice", "alice"), ("xiaoming", "小明")):
        stty = tmp_path / f"{name}.stty"
        command = (f"{env} {BINARY} --host 127.0.0.1 --port {server.port} --nick {nick}; "
                   f"echo EXITED $?; stty -a > {stty}; sleep 60")
        tmux("new-session", "-d", "-s", name, "-x", "100", "-y", "30", command)
        # One after the other, so alice is first in the room (its operator) on every run.
        wait_for(name, lambda s: any("connected" in r for r in s[-2:]))
    yield tmp_path
    end_tmux(SOCKET)


def test_two_users_direct_message_resize_and_quit(sessions):
    both_in = lambda s: any("@alice" in r for r in s) and any("小明" in r for r in s) and any("connected" in r for r in s)
    wait_for("alice", both_in)
    wait_for("xiaoming", both_in)

    # alice: Down once — the arrows skip her own row — to 小明, then a direct message in Chinese.
    tmux("send-keys", "-t", "alice", "Down")
    wait_for("alice", lambda s: "Enter sends to 小明" in s[-2])
    message = "你好，小明！这是一条私信。"
    tmux("send-keys", "-t", "alice", "-l", message)
    tmux("send-keys", "-t", "alice", "Enter")
    alice_screen = wait_for("alice", lambda s: any(message in r for r in s))
    assert alice_screen[0].startswith(" 小明 (direct)")

    # 小明 sees an unread mark next to alice, picks her, and reads it there.
    wait_for("xiaoming", lambda s: any("@alice" in r and "1!" in r for r in s))
    tmux("send-keys", "-t", "xiaoming", "Down")
    screen = wait_for("xiaoming", lambda s: any(message in r for r in s))
    assert screen[0].startswith(" alice (direct)")
    assert "Enter sends to alice" in screen[-2]
    row = next(r for r in screen if message in r)
    assert row.index("<alice>") < row.index(message)
    # The message starts right after "HH:MM <alice> " and the border stays where it belongs.
    assert width(row[: row.index(message)]) == len("00:00 <alice> ")
    assert_layout_whole(screen, 100)
    save("alice-100x30", capture("alice"))
    save("xiaoming-100x30", screen)

    # Both at 60×15.
    for session in ("alice", "xiaoming"):
        tmux("resize-window", "-t", session, "-x", "60", "-y", "15")
    small = wait_for("xiaoming", lambda s: redrawn_at(60, 15)(s) and any(message[:4] in r for r in s))
    assert_layout_whole(small, 60)
    assert small[0].startswith(" alice (direct)")
    save("xiaoming-60x15", small)
    save("alice-60x15", wait_for("alice", redrawn_at(60, 15)))

    # /quit restores the terminal: the shell after us finds echo and canonical mode back on.
    tmux("send-keys", "-t", "xiaoming", "-l", "/quit 再见")
    tmux("send-keys", "-t", "xiaoming", "Enter")
    wait_for("xiaoming", lambda s: any("EXITED 0" in r for r in s))
    deadline = time.monotonic() + 5
    stty = sessions / "xiaoming.stty"
    while not (stty.exists() and stty.stat().st_size) and time.monotonic() < deadline:
        time.sleep(0.1)
    modes = stty.read_text().split()
    assert "icanon" in modes and "echo" in modes, "terminal left in raw mode"
    wait_for("alice", lambda s: any("小明 quit (Quit: 再见)" in r for r in s))
