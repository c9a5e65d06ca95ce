"""Emoji made of several code points on the real chat screen (issue 24): the bytes chat-tui
writes to its terminal hold each cluster whole (a ZWJ family, a flag, a skin tone, a keycap,
a VS16 heart), and in tmux the row that holds them keeps the sidebar's border in its column,
at 60, 100 and 200 columns. Every process is started with a HOME of its own and ended."""
import fcntl
import os
import pty
import select
import shutil
import struct
import subprocess
import tempfile
import termios
import time

import pytest

from conftest import BINARY, RawClient

CLUSTERS = ["👨\u200d👩\u200d👧\u200d👦", "🇯🇵", "👍🏽", "1\ufe0f\u20e3", "\u2764\ufe0f"]
SOCKET = f"chat-tui-clusters-{os.getpid()}"
# The sidebar's border column at each width (the layout's; ChatUITests' besideTheSidebar checks the same).
BORDER = {60: 47, 100: 79, 200: 175}


def spawn_in_pty(port, columns=100, rows=30):
    """chat-tui on a pseudo-terminal of its own; returns (pid, master fd)."""
    home = tempfile.mkdtemp(prefix="chat-tui-clusters-home-")
    pid, master = pty.fork()
    if pid == 0:
        os.environ.update(HOME=home, TERM="xterm-256color", LANG="C.UTF-8")
        os.execv(BINARY, [BINARY, "--host", "127.0.0.1", "--port", str(port), "--nick", "viewer"])
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    return pid, master


def read_until(master, wanted, timeout=20):
    """Everything the client wrote until every byte string in `wanted` appeared whole."""
    seen = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not all(w in seen for w in wanted):
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                seen += os.read(master, 65536)
            except OSError:
                break
    return seen


def test_each_cluster_is_written_whole(server):
    pid, master = spawn_in_pty(server.port)
    bob = None
    try:
        assert b"Enter sends to #lobby" in read_until(master, [b"Enter sends to #lobby"]), "the client did not join"
        bob = RawClient(server.port)
        bob.register("bob")
        bob.send("PRIVMSG #lobby :" + " ".join(CLUSTERS) + " end")
        written = read_until(master, [c.encode() for c in CLUSTERS] + [b" end"])
        for cluster in CLUSTERS:
            assert cluster.encode() in written, f"{cluster!r} not written whole; written: {written[-800:]!r}"
        # Each is followed by the cursor set to the column after it (the resynchronisation).
        for cluster in CLUSTERS:
            after = written.split(cluster.encode(), 1)[1]
            assert after.startswith(b"\x1b[0m\x1b["), f"{cluster!r}: {after[:20]!r}"
        os.write(master, b"/quit\r")
        read_until(master, [b"\x00never"], timeout=3)
    finally:
        if bob:
            bob.close()
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
        os.close(master)


def tmux(*args):
    return subprocess.run(["tmux", "-L", SOCKET, *args], capture_output=True, text=True, timeout=20)


def end_tmux_and(client):
    """The client's socket closed and the tmux server ended, its socket file too (tmux leaves it
    behind), so nothing of the test stays."""
    if client:
        client.close()
    tmux("kill-server")
    socket_path = os.path.join(os.environ.get("TMUX_TMPDIR", "/tmp"), f"tmux-{os.getuid()}", SOCKET)
    if os.path.exists(socket_path):
        os.remove(socket_path)


@pytest.mark.parametrize("columns", [60, 100, 200])
def test_the_sidebar_stays_in_its_column_in_tmux(server, columns):
    if not shutil.which("tmux"):
        pytest.fail("tmux is missing: make deps installs it")
    home = tempfile.mkdtemp(prefix="chat-tui-clusters-home-")
    command = f"HOME={home} LANG=C.UTF-8 TERM=xterm-256color {BINARY} --host 127.0.0.1 --port {server.port} --nick viewer; sleep 30"
    tmux("new-session", "-d", "-s", "v", "-x", str(columns), "-y", "20", command)
    bob = None
    try:
        def screen():
            return tmux("capture-pane", "-p", "-t", "v").stdout.split("\n")

        def wait(predicate):
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                rows = screen()
                if predicate(rows):
                    return rows
                time.sleep(0.1)
            raise AssertionError("timed out; the screen:\n" + "\n".join(screen()))
        wait(lambda rows: any("connected" in r for r in rows))
        bob = RawClient(server.port)
        bob.register("bob")
        bob.send("PRIVMSG #lobby :" + " ".join(CLUSTERS) + " end")
        rows = wait(lambda rows: any("<bob>" in r and " end" in r for r in rows))
        row = next(r for r in rows if "<bob>" in r)
        # tmux 3.3 keeps its own idea of some clusters (it splits the family and drops the skin
        # tone), but the columns after them are ours: the client set the cursor after each, so
        # " end" is followed by exactly the spaces our layout gives and the border, no stray
        # character and no shift (the pane is BORDER columns wide; the message takes 30).
        for cluster in ("🇯🇵", "1\ufe0f\u20e3", "\u2764\ufe0f"):
            assert cluster in row, f"{cluster!r} not whole in tmux's row: {row!r}"
        tail = row.split(" end", 1)[1]
        assert tail == " " * (BORDER[columns] - 30) + "│", f"after the message: {tail!r} in {row!r}"
        aligned = [r for r in rows if "│" in r and "<bob>" not in r and not r.startswith(" alice") and "Enter sends" not in r]
        assert aligned and all(len(r) >= BORDER[columns] and r[BORDER[columns]] == "│" for r in aligned if r.isascii()), rows
    finally:
        end_tmux_and(bob)


INDIC = ["हिन्दी में नमस्ते दोस्त क्षमा", "বাংলা ভাষা শিক্ষা", "தமிழ் மொழி கொண்டு", "ภาษาไทย สวัสดี ที่นี่", "ភាសាខ្មែរ សួស្ដី"]


def terminal_columns(text):
    """The columns a terminal gives `text`: the C library's wcwidth of each code point."""
    import ctypes
    libc = ctypes.CDLL("libc.so.6")
    libc.wcwidth.argtypes = [ctypes.c_wchar]
    return sum(max(libc.wcwidth(ch), 0) for ch in text)


def test_indic_scripts_keep_every_letter_in_tmux(server):
    """Issue 42, item 5: Devanagari, Bengali, Tamil, Thai and Khmer lines reach tmux whole (vowel
    signs and conjuncts were lost: `हिन्दी में नमस्ते` showed as `हन् में नमस्`), and the sidebar's border stays
    in its column on each of their rows."""
    import locale
    locale.setlocale(locale.LC_ALL, "C.UTF-8")
    home = tempfile.mkdtemp(prefix="chat-tui-clusters-home-")
    command = f"HOME={home} LANG=C.UTF-8 TERM=xterm-256color {BINARY} --host 127.0.0.1 --port {server.port} --nick viewer; sleep 30"
    tmux("new-session", "-d", "-s", "v", "-x", "100", "-y", "20", command)
    bob = None
    try:
        def screen():
            return tmux("capture-pane", "-p", "-t", "v").stdout.split("\n")
        deadline = time.monotonic() + 20
        while not any("connected" in r for r in screen()) and time.monotonic() < deadline:
            time.sleep(0.1)
        bob = RawClient(server.port)
        bob.register("bob")
        for line in INDIC:
            bob.send(f"PRIVMSG #lobby :{line} end")
        deadline = time.monotonic() + 20
        rows = screen()
        while sum("<bob>" in r for r in rows) < len(INDIC) and time.monotonic() < deadline:
            time.sleep(0.1)
            rows = screen()
        for line in INDIC:
            row = next((r for r in rows if "<bob>" in r and line in r), None)
            assert row is not None, f"{line!r} not whole on the screen:\n" + "\n".join(rows)
            assert terminal_columns(row.split("│", 1)[0]) == BORDER[100], f"the border moved on {row!r}"
    finally:
        end_tmux_and(bob)
