"""Modern messaging between two chat-tui screens through our server, in tmux: a reply, a
reaction, a deletion, typing and a multiline paste, each seen on the other screen."""
import os
import shutil
import subprocess
import time

import pytest

from conftest import BINARY, end_tmux

SOCKET = f"chat-tui-modern-{os.getpid()}"
SCREENS = os.environ.get("CHAT_TUI_SCREENS")  # a folder to save the captured screens in


def tmux(*args):
    return subprocess.run(["tmux", "-u", "-L", SOCKET, *args], check=True, capture_output=True, text=True).stdout


def capture(session):
    return tmux("capture-pane", "-p", "-t", session).split("\n")[:-1]


def wait_for(session, predicate, what, timeout=15):
    deadline = time.monotonic() + timeout
    screen = []
    while time.monotonic() < deadline:
        screen = capture(session)
        if predicate(screen):
            return screen
        time.sleep(0.1)
    raise AssertionError(f"{session} never showed {what}:\n" + "\n".join(screen))


def save(name, screen):
    if SCREENS:
        os.makedirs(SCREENS, exist_ok=True)
        with open(os.path.join(SCREENS, name + ".txt"), "w") as f:
            f.write("\n".join(screen) + "\n")


def row_with(screen, text):
    return next(i for i, row in enumerate(screen) if text in row)


@pytest.fixture
def screens(server, tmp_path):
    if not shutil.which("tmux"):
        pytest.fail("tmux is missing: make deps installs it")
    for nick in ("alice", "bob"):
        home = tmp_path / nick
        home.mkdir()
        command = (f"HOME={home} LANG=C.UTF-8 TERM=xterm-256color {BINARY} --host 127.0.0.1 --port {server.port} --nick {nick}; sleep 60")
        tmux("new-session", "-d", "-s", nick, "-x", "100", "-y", "24", command)
        # alice first: she is the room's operator on every run.
        wait_for(nick, lambda s: any("connected" in r for r in s[-2:]), "connected")
    both = lambda s: any("@alice" in r for r in s) and any(" bob" in r for r in s)
    wait_for("alice", both, "both in the room")
    wait_for("bob", both, "both in the room")
    yield
    end_tmux(SOCKET)


def type_line(session, text):
    tmux("send-keys", "-t", session, "-l", text)
    tmux("send-keys", "-t", session, "Enter")


def test_reply_reaction_deletion_typing_and_multiline_between_two_screens(screens):
    type_line("bob", "lunch at noon?")
    wait_for("alice", lambda s: any("<bob> lunch at noon?" in r for r in s), "bob's question")

    # alice: Alt-Up highlights the newest message (bob's), r answers it.
    tmux("send-keys", "-t", "alice", "M-Up")
    wait_for("alice", lambda s: "r reply" in s[-2], "the cursor's keys in the status line")
    tmux("send-keys", "-t", "alice", "r")
    wait_for("alice", lambda s: "replying to bob: lunch at noon?" in s[-2], "replying to bob")
    type_line("alice", "count me in")
    seen = wait_for("bob", lambda s: any("<alice> count me in" in r for r in s), "alice's reply")
    reply = row_with(seen, "<alice> count me in")
    assert "↳ bob: lunch at noon?" in seen[reply - 1], "the quote of the parent above the reply"

    # alice reacts to bob's question: Alt-Up (her reply), Up (his question), e, 1 (👍).
    tmux("send-keys", "-t", "alice", "M-Up")
    tmux("send-keys", "-t", "alice", "Up")
    tmux("send-keys", "-t", "alice", "e")
    wait_for("alice", lambda s: "react with: 1 👍" in s[-2], "the emoji choice")
    tmux("send-keys", "-t", "alice", "1")
    seen = wait_for("bob", lambda s: any("👍 1" in r for r in s), "the reaction under bob's question")
    assert row_with(seen, "👍 1") == row_with(seen, "<bob> lunch at noon?") + 1
    save("bob-reply-reaction", seen)

    # bob deletes a line of his own.
    type_line("bob", "oops, wrong room")
    wait_for("alice", lambda s: any("oops, wrong room" in r for r in s), "bob's mistake")
    tmux("send-keys", "-t", "bob", "M-Up")
    tmux("send-keys", "-t", "bob", "d")
    # Asked first: a deletion cannot be taken back.
    wait_for("bob", lambda s: 'Delete your message "oops, wrong room"? y/n' in s[-1], "the question")
    tmux("send-keys", "-t", "bob", "y")
    seen = wait_for("alice", lambda s: any("<bob> (deleted by bob)" in r for r in s), "the deletion")
    assert not any("oops, wrong room" in r for r in seen)
    save("alice-deletion", seen)

    # alice types without sending: bob's status line says so; emptied, it goes.
    tmux("send-keys", "-t", "alice", "-l", "thinking about it")
    wait_for("bob", lambda s: "alice is typing…" in s[-2], "alice typing")
    tmux("send-keys", "-t", "alice", "C-u")
    wait_for("bob", lambda s: "typing" not in s[-2], "alice no longer typing")

    # bob pastes two lines: one message, its second line under the first at the indent.
    tmux("set-buffer", "-b", "two", "first of two\nsecond of two")
    tmux("paste-buffer", "-p", "-d", "-b", "two", "-t", "bob")
    seen = wait_for("alice", lambda s: any("<bob> first of two" in r for r in s) and any("second of two" in r for r in s), "the multiline message")
    first = row_with(seen, "<bob> first of two")
    second = seen[first + 1]
    assert second.lstrip().startswith("second of two") and second.index("second") == seen[first].index("first of two"), seen
    save("alice-multiline", seen)
