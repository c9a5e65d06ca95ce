"""Room modes with irssi as a real user: +k and +i set with irssi's own /mode, then /invite.

irssi (in tmux) creates #vault, so it is its operator, locks it with a key and makes it invite
only; a raw-socket client is refused with 475 (no key), then 473 (key but no invitation), gets
irssi's INVITE and then joins without the key (an invitation passes +i and +k, as in ergo).
"""
import os
import re
import shutil
import subprocess
import time

import pytest

from conftest import RawClient, Tmux, end_tmux

SOCKET = f"chat-tui-modes-{os.getpid()}"
ROOM = "#vault"
KEY = "sesame"


TMUX = Tmux(SOCKET, "irssi")
tmux = TMUX.run
screen = TMUX.screen
wait_for_screen = TMUX.wait
irssi_command = TMUX.type


def reply_to(client, command, numerics, timeout=15):
    """Sends `command` and returns the first reply whose numeric is in `numerics`."""
    client.send(command)
    pattern = re.compile(r"^:\S+ (\d{3}) ")
    return client.wait_for(lambda l: (m := pattern.match(l)) is not None and m.group(1) in numerics, timeout)


def params(line):
    """The parameters of a server line, the trailing one included, without the source and command."""
    head, _, trailing = line.partition(" :")
    words = head.split()[2:]
    return words + ([trailing] if _ else [])


@pytest.fixture
def irssi(server, tmp_path):
    if not shutil.which("irssi") or not shutil.which("tmux"):
        pytest.fail("irssi and tmux are needed: make deps installs them")
    home = tmp_path / "irssi-home"
    home.mkdir()
    try:
        tmux("new-session", "-d", "-s", "irssi", "-x", "140", "-y", "45",
             f"LANG=C.UTF-8 TERM=xterm-256color irssi --home={home} -n irssiop")
        wait_for_screen(lambda s: "[(status)]" in s, "irssi to start")
        # irssi's flood queue spaces commands 2.2 s apart after a burst of 5; that would only
        # make the test slow, so it is turned off before connecting (it is read at connect time).
        irssi_command("/set cmd_queue_speed 0")
        irssi_command("/set cmds_max_at_once 100")
        irssi_command(f"/connect 127.0.0.1 {server.port}")
        deadline = time.monotonic() + 20
        while "registered as irssiop" not in server.log_text():
            if time.monotonic() > deadline:
                raise AssertionError("irssi never registered; server log:\n" + server.log_text() + "\nirssi shows:\n" + screen())
            time.sleep(0.1)
        yield
    finally:
        end_tmux(SOCKET)


def test_irssi_operator_sets_key_and_invite_only_then_invites(server, irssi):
    guest = RawClient(server.port)
    try:
        guest.register("guest")

        # irssi creates the room: it is alone in it, so its operator.
        irssi_command(f"/join {ROOM}")
        wait_for_screen(lambda s: f"has joined {ROOM}" in s, "irssi's own join")
        # irssi's own names list on joining shows it with @ (from our 353).
        wait_for_screen(lambda s: "[@irssiop]" in s, "irssi to list itself as operator")

        # irssi's own commands, as a user types them.
        irssi_command(f"/mode {ROOM} +k {KEY}")
        wait_for_screen(lambda s: re.search(rf"mode/{ROOM} \[\+k {KEY}\] by irssiop", s), "irssi to show +k")
        irssi_command(f"/mode {ROOM} +i")
        wait_for_screen(lambda s: re.search(rf"mode/{ROOM} \[\+i\] by irssiop", s), "irssi to show +i")

        # No key: 475, even though +i is set too (the key is checked first).
        refused = reply_to(guest, f"JOIN {ROOM}", {"475", "473", "471", "474", "366"})
        assert refused.split(" ")[1] == "475", refused
        assert params(refused)[:2] == ["guest", ROOM]
        # A wrong key: 475 again.
        refused = reply_to(guest, f"JOIN {ROOM} not{KEY}", {"475", "473", "471", "474", "366"})
        assert refused.split(" ")[1] == "475", refused
        # The right key, but no invitation: 473.
        refused = reply_to(guest, f"JOIN {ROOM} {KEY}", {"475", "473", "471", "474", "366"})
        assert refused.split(" ")[1] == "473", refused
        assert params(refused)[:2] == ["guest", ROOM]

        # irssi invites: the guest gets the INVITE line from irssi, irssi shows the 341.
        irssi_command(f"/invite guest {ROOM}")
        invite = guest.wait_for(lambda l: " INVITE " in l, timeout=15)
        assert invite.startswith(":irssiop!"), invite
        assert invite.split(" ", 1)[1] in (f"INVITE guest {ROOM}", f"INVITE guest :{ROOM}"), invite
        # irssi prints the 341 in its status window.
        irssi_command("/window 1")
        wait_for_screen(lambda s: f"Inviting guest to {ROOM}" in s, "irssi to show the 341")
        irssi_command(f"/window goto {ROOM}")
        wait_for_screen(lambda s: f"[{ROOM}]" in s, f"irssi back in {ROOM}")

        # The invitation lets the guest in, without the key.
        guest.send(f"JOIN {ROOM}")
        joined = guest.wait_for(lambda l: re.match(r"^:\S+ 4\d\d ", l) or (l.startswith(":guest!") and " JOIN " in l), 15)
        assert joined.startswith(":guest!") and params(joined)[0] == ROOM, joined
        names = guest.wait_for(lambda l: re.match(r"^:\S+ 353 ", l), 15)
        assert sorted(params(names)[-1].split()) == ["@irssiop", "guest"], names
        wait_for_screen(lambda s: f"guest [" in s and f"has joined {ROOM}" in s.split("guest [", 1)[1], "irssi to see the guest join")

        # A member asking MODE sees every flag and the key itself.
        modes = reply_to(guest, f"MODE {ROOM}", {"324", "442", "403"})
        assert modes.split(" ")[1] == "324", modes
        fields = params(modes)
        assert fields[:2] == ["guest", ROOM], modes
        assert fields[2].startswith("+") and set(fields[2][1:]) == set("iknt"), modes
        assert fields[3:] == [KEY], modes

        # Once in, the invitation is used up: after leaving, the guest is refused again.
        guest.send(f"PART {ROOM}")
        guest.wait_for(lambda l: l.startswith(":guest!") and " PART " in l, 15)
        refused = reply_to(guest, f"JOIN {ROOM} {KEY}", {"475", "473", "471", "474", "366"})
        assert refused.split(" ")[1] == "473", refused
    finally:
        guest.close()
