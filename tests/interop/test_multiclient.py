"""One person on every device (issue 45) with real clients: irssi and WeeChat log in to the same
account, each naming its device in the SASL user name (`alice@irssi`, `alice@weechat`). Others see
one alice; what one says shows on the other; when both have quit, alice stays in her room, away
"not connected", and a client that comes back is put back in it."""
import os
import shutil
import subprocess

import pytest

from conftest import irssi_sasl_home, weechat_sasl_command, BINARY, RawClient, Server, Tmux, end_tmux, wait_for

SOCKET = f"chat-tui-multiclient-{os.getpid()}"
PASSWORD = "correct-horse-battery"


def account(data, *words):
    done = subprocess.run([BINARY, "account", *words, "--data-dir", str(data)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


@pytest.fixture
def multiclient_server(tmp_path):
    for tool in ("tmux", "irssi", "weechat-curses"):
        if not shutil.which(tool):
            pytest.fail(f"{tool} is needed: make deps installs it")
    data = tmp_path / "data"
    account(data, "add", "alice", "--password", PASSWORD)
    tls_port = __import__("conftest").free_port()
    server = Server("--tls-port", str(tls_port), "--data-dir", str(data))
    server.tls_port = tls_port
    try:
        yield server
    finally:
        end_tmux(SOCKET)
        server.stop()


def peer_client(port):
    peer = RawClient(port)
    peer.send("CAP REQ :away-notify")
    peer.send("NICK peer")
    peer.send("USER peer 0 * :peer")
    peer.send("CAP END")
    peer.wait_for(lambda l: " 366 " in l, timeout=15)
    return peer


def names(peer):
    peer.send("NAMES #lobby")
    line = peer.wait_for(lambda l: " 353 " in l, timeout=10)
    return line.split(" :", 1)[1].split()


def test_irssi_and_weechat_are_one_person(multiclient_server, tmp_path):
    server = multiclient_server
    peer = peer_client(server.port)

    irssi_home = irssi_sasl_home(tmp_path / "irssi", server.tls_port, "alice@irssi", PASSWORD, "alice")
    tmux = Tmux(SOCKET, "irssi")
    # A session that outlives the clients: the tmux server stays up for irssi's second start.
    tmux.run("new-session", "-d", "-s", "keep", "sleep 3600")
    tmux.run("new-session", "-d", "-s", "irssi", "-x", "120", "-y", "40", f"LANG=C.UTF-8 irssi --home={irssi_home}")
    wait_for(lambda: "registered as alice" in server.log_text(), 30, "irssi to register", server.log_text)

    wee = Tmux(SOCKET, "weechat")
    wee.run("new-session", "-d", "-s", "weechat", "-x", "120", "-y", "40",
            weechat_sasl_command(tmp_path / "weechat", server.tls_port, "alice_wee", "alice", "alice@weechat", PASSWORD))
    wait_for(lambda: "registered as a session of alice" in server.log_text(), 30, "WeeChat to join alice", server.log_text)

    # Others see one alice, whatever nickname WeeChat asked for.
    listed = names(peer)
    assert [n for n in listed if n.lstrip("@+").startswith("alice")] == ["alice"], listed

    # A line to the room shows in both; what irssi says shows in WeeChat, as alice's own.
    peer.send("PRIVMSG #lobby :hello to both of you")
    tmux.type("/window goto #lobby")
    tmux.wait(lambda s: "hello to both of you" in s, "irssi to show the peer's line")
    wee.wait(lambda s: "hello to both of you" in s, "WeeChat to show the peer's line")
    tmux.type("said in irssi")
    peer.wait_for(lambda l: "PRIVMSG #lobby :said in irssi" in l, timeout=10)
    wee.wait(lambda s: "said in irssi" in s, "WeeChat to show what irssi said")

    # Both quit: alice stays, away "not connected", and is still listed.
    tmux.type("/quit")
    wee.type("/quit")
    peer.wait_for(lambda l: l.startswith(":alice!") and "AWAY :not connected" in l, timeout=20)
    assert "alice" in [n.lstrip("@+") for n in names(peer)]

    # irssi comes back: put back in #lobby by the server, with what was said meanwhile.
    peer.send("PRIVMSG #lobby :while nobody was there")
    tmux.run("new-session", "-d", "-s", "irssi2", "-x", "120", "-y", "40", f"LANG=C.UTF-8 irssi --home={irssi_home}")
    again = Tmux(SOCKET, "irssi2")
    wait_for(lambda: server.log_text().count("registered as a session of alice") >= 2, 30, "irssi to come back", server.log_text)
    peer.wait_for(lambda l: l.startswith(":alice!") and l.rstrip().endswith("AWAY"), timeout=20)
    again.type("/window goto #lobby")
    again.wait(lambda s: "while nobody was there" in s, "irssi to show what it missed")
    peer.close()
