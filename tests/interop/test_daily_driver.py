"""The chat screen as an irssi or WeeChat user drives it (issue 46), in tmux against our server:
Alt-3 to a room by its number, Alt-a to the one that named you, PgUp then Alt-End back down, a
click on a sidebar row (SGR mouse bytes as a terminal sends them), a setting changed, saved and
still there after a restart with the rooms joined again, and a notification run as the user's own command."""
import os
import shutil
import stat
import subprocess
import time

import pytest

from conftest import BINARY, RawClient, end_tmux

SOCKET = f"chat-tui-daily-{os.getpid()}"
SCREENS = os.environ.get("CHAT_TUI_SCREENS")


def tmux(*args):
    return subprocess.run(["tmux", "-u", "-L", SOCKET, *args], check=True, capture_output=True, text=True).stdout


def capture():
    return tmux("capture-pane", "-p", "-t", "zoe").split("\n")[:-1]


def wait_for(predicate, what, timeout=15):
    deadline = time.monotonic() + timeout
    screen = []
    while time.monotonic() < deadline:
        screen = capture()
        if predicate(screen):
            return screen
        time.sleep(0.1)
    raise AssertionError(f"zoe's screen never showed {what}:\n" + "\n".join(screen))


def save(name, screen):
    if SCREENS:
        os.makedirs(SCREENS, exist_ok=True)
        with open(os.path.join(SCREENS, name + ".txt"), "w") as f:
            f.write("\n".join(screen) + "\n")


def type_line(text):
    tmux("send-keys", "-t", "zoe", "-l", text)
    tmux("send-keys", "-t", "zoe", "Enter")


def start_zoe(home, port):
    command = (f"HOME={home} LANG=C.UTF-8 TERM=xterm-256color {BINARY} --host 127.0.0.1 --port {port} --nick zoe --no-logs; sleep 60")
    tmux("new-session", "-d", "-s", "zoe", "-x", "100", "-y", "30", command)
    wait_for(lambda s: any("connected" in r for r in s[-2:]), "connected")


@pytest.fixture
def zoe(server, tmp_path):
    if not shutil.which("tmux"):
        pytest.fail("tmux is missing: make deps installs it")
    home = tmp_path / "zoe"
    home.mkdir()
    start_zoe(home, server.port)
    yield home
    end_tmux(SOCKET)


def test_numbers_activity_scrolling_mouse_settings_and_notifications(server, zoe, tmp_path):
    bob = RawClient(server.port)
    bob.register("bob")
    for room in ("#dev", "#ops"):
        bob.send(f"JOIN {room}")
        type_line(f"/join {room}")
        wait_for(lambda s: s[0].startswith(f" {room} "), f"{room} in the title")
    screen = wait_for(lambda s: any("│4 #ops" in r for r in s), "the numbered sidebar")
    assert any("│1 (server)" in r for r in screen) and any("│2 #lobby" in r for r in screen) and any("│3 #dev" in r for r in screen)
    save("numbered", screen)

    # Alt-3: #dev, without walking the sidebar (1 is the server window, as irssi's status window).
    tmux("send-keys", "-t", "zoe", "M-3")
    wait_for(lambda s: s[0].startswith(" #dev "), "#dev after Alt-3")

    # A mention in #ops while zoe reads #dev: the hotlist says 3!, and Alt-a goes there.
    bob.send("PRIVMSG #ops :zoe: the deploy is stuck")
    screen = wait_for(lambda s: "[4!]" in s[-2], "the hotlist")
    save("hotlist", screen)
    tmux("send-keys", "-t", "zoe", "M-a")
    wait_for(lambda s: s[0].startswith(" #ops ") and any("<bob> zoe: the deploy is stuck" in r for r in s), "#ops after Alt-a")

    # PgUp into what bob said, then Alt-End back to the newest line.
    for n in range(60):
        bob.send(f"PRIVMSG #ops :line {n}")
    wait_for(lambda s: any("<bob> line 59" in r for r in s), "the last line")
    tmux("send-keys", "-t", "zoe", "PageUp")
    wait_for(lambda s: any("more rows below (PgDn)" in r for r in s), "scrolled up")
    tmux("send-keys", "-t", "zoe", "M-End")
    screen = wait_for(lambda s: not any("more rows below" in r for r in s) and any("<bob> line 59" in r for r in s), "back at the bottom")

    # A click on a message (press and release, as tmux sends them) opens the message cursor there.
    row = next(i for i, r in enumerate(screen) if "<bob> line 59" in r)
    tmux("send-keys", "-t", "zoe", "-l", f"\x1b[<0;20;{row + 1}M\x1b[<0;20;{row + 1}m")
    wait_for(lambda s: "r reply" in s[-2], "the message cursor's hints after a click on a message")
    tmux("send-keys", "-t", "zoe", "Escape")

    # A click on the #lobby row of the sidebar (SGR: ESC [ < 0 ; column ; row M, 1-based).
    row = next(i for i, r in enumerate(screen) if "│2 #lobby" in r)
    column = screen[row].index("│2 #lobby") + 2
    tmux("send-keys", "-t", "zoe", "-l", f"\x1b[<0;{column + 1};{row + 1}M\x1b[<0;{column + 1};{row + 1}m")
    wait_for(lambda s: s[0].startswith(" #lobby "), "#lobby after the click")

    # A setting changed at once, saved, and read back after a restart.
    type_line("/set timestamps HH:MM:SS")
    wait_for(lambda s: any("timestamps = HH:MM:SS" in r for r in s), "the setting's answer")
    type_line("/save")
    config = zoe / ".config" / "chat-tui" / "config"
    wait_for(lambda s: config.exists() and "timestamps = HH:MM:SS" in config.read_text(), "the config file written")
    # Changed and not saved: kept on quitting all the same (autosave, as irssi does).
    type_line("/set smart-filter off")
    wait_for(lambda s: any("smart-filter = off" in r for r in s), "the second setting's answer")
    type_line("/quit")
    wait_for(lambda s: not any("connected" in r for r in s[-2:]), "zoe gone")
    assert "smart-filter = off" in config.read_text(), config.read_text()
    assert stat.S_IMODE(config.stat().st_mode) == 0o600, "the config file may hold a password: only its owner reads it"
    end_tmux(SOCKET)
    start_zoe(zoe, server.port)
    bob.send("PRIVMSG #lobby :hello again")
    screen = wait_for(lambda s: any(r[:9].count(":") == 2 and "<bob> hello again" in r for r in s), "seconds in the timestamps after the restart")
    save("restarted", screen)
    # The rooms zoe was in are joined again, keeping their numbers (the rejoin setting).
    kept = (zoe / ".local" / "state" / "chat-tui" / "rooms" / f"127.0.0.1:{server.port}").read_text().split()
    assert "#dev" in kept and "#ops" in kept, kept
    wait_for(lambda s: any("│3 #dev" in r and "(left)" not in r for r in s) and any("│4 #ops" in r and "(left)" not in r for r in s),
             "#dev and #ops joined again after the restart")
    bob.send("PRIVMSG #dev :welcome back")
    wait_for(lambda s: "[3]" in s[-2], "a line in #dev after the restart")

    # notify = command: a direct message out of sight runs the user's program with the title
    # and the text as its arguments (no shell).
    record = tmp_path / "notified.txt"
    script = tmp_path / "notify.sh"
    script.write_text(f"#!/bin/sh\nprintf '%s|' \"$@\" > {record}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    type_line("/set notify command")
    type_line(f"/set notify-command {script} --from chat-tui")
    wait_for(lambda s: any("notify-command = " in r for r in s), "the command set")
    bob.send("PRIVMSG zoe :are you there? $(touch /tmp/never)")
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and not (record.exists() and record.read_text()):
        time.sleep(0.1)
    assert record.read_text() == "--from|chat-tui|bob|are you there? $(touch /tmp/never)|"
    # The direct conversation has its own number, after the conversations numbered before it.
    wait_for(lambda s: any("│5 bob" in r for r in s) and any("│2 #lobby" in r for r in s), "bob's direct conversation numbered")
    bob.close()
