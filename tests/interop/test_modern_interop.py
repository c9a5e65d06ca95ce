"""Clients that know none of it see modern messages as plain lines: irssi, WeeChat and catgirl
in the room while a modern client sends a reply, a reaction, typing and a multiline message."""
import os
import shlex
import shutil
import time

import pytest

import subprocess

from conftest import RawClient, Server, Tmux, end_tmux, free_port

SOCKET = f"chat-tui-modern-interop-{os.getpid()}"
TMUX = Tmux(SOCKET, "irssi")
tmux = TMUX.run


def screen(session):
    return tmux("capture-pane", "-p", "-J", "-t", session)


def wait_screen(session, predicate, what, timeout=20):
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline:
        text = screen(session)
        if predicate(text):
            return text
        time.sleep(0.1)
    raise AssertionError(f"{session} never showed {what}:\n{text}")


@pytest.fixture
def server():
    # catgirl speaks only TLS: a TLS port beside the plain one.
    tls_port = free_port()
    s = Server("--tls-port", str(tls_port))
    s.tls_port = tls_port
    yield s
    s.stop()


@pytest.fixture
def clients(server, tmp_path):
    for tool in ("tmux", "irssi", "weechat-curses", "catgirl"):
        if not shutil.which(tool):
            pytest.fail(f"{tool} is needed: make deps installs it")
    env = "LANG=C.UTF-8 TERM=xterm-256color"
    try:
        home = tmp_path / "irssi"
        home.mkdir()
        tmux("new-session", "-d", "-s", "irssi", "-x", "140", "-y", "40", f"{env} irssi --home={home} -n oldirssi")
        wait_screen("irssi", lambda s: "[(status)]" in s, "irssi to start")
        TMUX.type(f"/connect 127.0.0.1 {server.port}")
        weechat = tmp_path / "weechat"
        weechat.mkdir()
        startup = ";".join([f"/server add room 127.0.0.1/{server.port} -notls -nicks=oldwee", "/connect room"])
        tmux("new-session", "-d", "-s", "weechat", "-x", "140", "-y", "40",
             f"{env} weechat-curses --dir {shlex.quote(str(weechat))} -r {shlex.quote(startup)}")
        cat = tmp_path / "catgirl"
        cat.mkdir()
        # Our self-signed certificate, as catgirl -o prints it, trusted with -t.
        printed = subprocess.run(["catgirl", "-o", "-h", "127.0.0.1", "-p", str(server.tls_port)], capture_output=True, text=True, timeout=20)
        trusted = tmp_path / "server.pem"
        trusted.write_text(printed.stdout)
        tmux("new-session", "-d", "-s", "catgirl", "-x", "140", "-y", "40",
             f"HOME={cat} {env} catgirl -h 127.0.0.1 -p {server.tls_port} -t {trusted} -n oldcat -j '#lobby'")
        deadline = time.monotonic() + 30
        while not all(f"registered as {n}" in server.log_text() for n in ("oldirssi", "oldwee", "oldcat")):
            assert time.monotonic() < deadline, "the three clients never registered:\n" + server.log_text()
            time.sleep(0.1)
        yield
    finally:
        end_tmux(SOCKET)


def test_irssi_weechat_and_catgirl_see_a_reply_and_a_multiline_message_as_plain_lines(server, clients):
    modern = RawClient(server.port)
    modern.send("CAP REQ :message-tags batch draft/multiline echo-message server-time")
    modern.send("CAP END")
    modern.register("modern")
    modern.send("PRIVMSG #lobby :the question")
    echo = modern.wait_for(lambda l: "PRIVMSG #lobby :the question" in l)
    parent = next(t.split("=", 1)[1] for t in echo[1:].split(" ", 1)[0].split(";") if t.startswith("msgid="))
    modern.send(f"@+draft/reply={parent} PRIVMSG #lobby :the answer to it")
    modern.send(f"@+draft/react=👍;+draft/reply={parent} TAGMSG #lobby")
    modern.send("@+typing=active TAGMSG #lobby")
    modern.send("BATCH +m draft/multiline #lobby")
    modern.send("@batch=m PRIVMSG #lobby :first of the paste")
    modern.send("@batch=m PRIVMSG #lobby :")
    modern.send("@batch=m PRIVMSG #lobby :last of the paste")
    modern.send("BATCH -m")
    modern.wait_for(lambda l: "BATCH -" in l)
    modern.send("PRIVMSG #lobby :the end")
    # irssi shows the room in window 2; WeeChat's buffer 3 and catgirl's #lobby are switched to.
    TMUX.type("/window 2")
    tmux("send-keys", "-t", "weechat", "M-3")
    tmux("send-keys", "-t", "catgirl", "M-2")
    for session in ("irssi", "weechat", "catgirl"):
        shown = wait_screen(session, lambda s: "the end" in s, f"the last line in {session}")
        rows = shown.splitlines()
        order = [next((i for i, r in enumerate(rows) if text in r), None)
                 for text in ("the question", "the answer to it", "first of the paste", "last of the paste", "the end")]
        assert None not in order and order == sorted(order), f"{session}: every line, in order:\n{shown}"
        assert order[3] - order[2] == 1, f"{session}: the blank line of the paste is not a message of its own:\n{shown}"
        if os.environ.get("CHAT_TUI_SCREENS"):
            with open(os.path.join(os.environ["CHAT_TUI_SCREENS"], f"interop-{session}.txt"), "w") as f:
                f.write(shown)
        for garbage in ("BATCH", "draft/", "+typing", "TAGMSG", "👍"):
            assert garbage not in shown, f"{session} shows {garbage!r}:\n{shown}"
    modern.close()
