"""irssi (in tmux, its own HOME) against our server: a room syncs at once, and the host screen's
irssi line for TLS works as printed.

Issue 24 saw irssi print `Join to #lobby was synced in 10 secs`. irssi calls a room synced when
its MODE, WHO (WHOX) and `MODE b` queries after the JOIN have their 324, 315 and 368; we answer
each at once (tests/ChatServerKitTests/IrssiSyncTests.swift has the exact lines, the same
numerics and parameters as InspIRCd 3.15). The seconds were irssi's own flood queue: it sends
queued commands 2.2 s apart (`cmd_queue_speed`), and its sync queries always go through that
queue; InspIRCd 3.15 gets "synced in 8 secs" from irssi 1.4.3 for a plain /join too. With the
queue off, irssi's sync takes its timer's ticks only (500 ms each, three queries): under 2 s,
which is what a missing or mismatched reply would break (irssi would wait for it).
"""
import os
import re
import shutil
import subprocess
import time

import pytest

from conftest import BINARY, free_port, wait_for_port, end_tmux

SOCKET = f"chat-tui-irssi-sync-{os.getpid()}"


def tmux(*args):
    return subprocess.run(["tmux", "-u", "-L", SOCKET, *args], check=True, capture_output=True, text=True).stdout


def screen(session):
    return tmux("capture-pane", "-p", "-J", "-t", session)


def wait_until(predicate, what, shows, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}:\n{shows()}")


def type_line(session, line):
    tmux("send-keys", "-t", session, "-l", line)
    tmux("send-keys", "-t", session, "Enter")


@pytest.fixture
def world(tmp_path):
    """A tmux server of our own; every session in it (irssi, a host) ends with the test."""
    if not shutil.which("irssi") or not shutil.which("tmux"):
        pytest.fail("irssi and tmux are needed: make deps installs them")
    sessions = []

    def start_irssi(name, *settings):
        home = tmp_path / f"{name}-home"
        logs = tmp_path / f"{name}-logs"
        home.mkdir()
        tmux("new-session", "-d", "-s", name, "-x", "220", "-y", "50",
             f"LANG=C.UTF-8 TERM=xterm-256color irssi --home={home} -n {name}")
        sessions.append(name)
        wait_until(lambda: "[(status)]" in screen(name), "irssi to start", lambda: screen(name))
        # Every window logged to a file: the "synced" line goes to the room's window, which the
        # test reads without switching windows.
        for setting in (*settings, "autolog on", f"autolog_path {logs}/$0.log"):
            type_line(name, f"/set {setting}")
        return logs

    try:
        yield start_irssi
    finally:
        end_tmux(SOCKET)
        socket_path = os.path.join(os.environ.get("TMUX_TMPDIR", "/tmp"), f"tmux-{os.getuid()}", SOCKET)
        if os.path.exists(socket_path):
            os.unlink(socket_path)


def synced_seconds(logs, room):
    """The seconds in irssi's `Join to ROOM was synced in N secs`, once it has printed it."""
    path = logs / f"{room}.log"
    if not path.exists():
        return None
    match = re.search(rf"Join to {re.escape(room)} was synced in (\d+) secs", path.read_text(errors="replace"))
    return int(match.group(1)) if match else None


def test_irssi_syncs_the_lobby_and_a_joined_room_at_once(server, world):
    # irssi's flood queue off (read when it connects): what is left is our replies' timing.
    logs = world("irs", "cmd_queue_speed 0", "cmds_max_at_once 100")
    type_line("irs", f"/connect 127.0.0.1 {server.port}")
    # The server joins everybody to #lobby with the welcome.
    seconds = wait_until(lambda: synced_seconds(logs, "#lobby"), "irssi to sync #lobby",
                         lambda: server.log_text() + screen("irs"))
    assert seconds <= 2, f"#lobby synced in {seconds} secs"
    type_line("irs", "/join #later")
    seconds = wait_until(lambda: synced_seconds(logs, "#later"), "irssi to sync #later", lambda: screen("irs"))
    assert seconds <= 2, f"#later synced in {seconds} secs"


def test_the_host_screens_irssi_tls_line_connects(tmp_path, world):
    port, tls_port = free_port(), free_port()
    log = tmp_path / "host.log"
    # The host with its chat screen, as a user starts it; its HOME is the session's (conftest).
    tmux("new-session", "-d", "-s", "host", "-x", "220", "-y", "50",
         f"LANG=C.UTF-8 TERM=xterm-256color {BINARY} --serve --bind 127.0.0.1 --port {port} "
         f"--tls-port {tls_port} --web-port 0 --data-dir {tmp_path / 'data'} --nick hostess --log {log}")
    wait_for_port(tls_port)
    found = wait_until(lambda: re.search(r"(/connect -tls [^│\n]*[^│\s])", screen("host"), re.M),
                       "the host's irssi line", lambda: screen("host"))
    line = found.group(1)  # the room pane's text, without the sidebar beside it
    fingerprint = re.search(r"SHA-256 ([0-9A-F:]{95})", log.read_text()).group(1)
    assert line == f"/connect -tls -notls_verify -tls_pinned_cert {fingerprint} 127.0.0.1 {tls_port}", line

    # Exactly that line, typed into irssi 1.4: it registers over TLS (001 in its status window).
    world("irs")
    type_line("irs", line)
    wait_until(lambda: "Welcome to the chat-tui IRC network" in screen("irs"), "irssi's 001 over TLS",
               lambda: screen("irs") + log.read_text())
    assert "registered as irs" in log.read_text()

    # The pin is what makes it safe: another fingerprint is refused by irssi itself.
    world("other")
    wrong = fingerprint.replace(fingerprint[:2], "00" if fingerprint[:2] != "00" else "11", 1)
    type_line("other", line.replace(fingerprint, wrong))
    wait_until(lambda: "Pinned certificate mismatch" in screen("other"), "irssi to refuse another pin", lambda: screen("other"))
