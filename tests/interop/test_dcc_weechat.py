"""DCC SEND with WeeChat, both ways: files arrive byte-identical (SHA-256)."""
import hashlib
import os
import shlex
import shutil
import subprocess
import time

import pytest

from conftest import sha256, wait_for, end_tmux
from test_lines_mode import LinesClient

SOCKET = f"chat-tui-dcc-weechat-{os.getpid()}"
SESSION = "weechat-dcc"


def tmux(*args):
    return subprocess.run(["tmux", "-u", "-L", SOCKET, *args], check=True, capture_output=True, text=True).stdout


def screen():
    return tmux("capture-pane", "-p", "-t", SESSION)




def wait_until(predicate, timeout=20, what="condition"):
    wait_for(predicate, timeout, what, screen)


def weechat_command(line):
    tmux("send-keys", "-t", SESSION, "-l", line)
    tmux("send-keys", "-t", SESSION, "Enter")


@pytest.fixture
def weechat(server, tmp_path):
    if not shutil.which("weechat-curses") or not shutil.which("tmux"):
        pytest.fail("weechat-curses and tmux are needed: make deps installs them")
    home = tmp_path / "weechat-home"
    downloads = tmp_path / "weechat-downloads"
    home.mkdir()
    downloads.mkdir()
    # WeeChat 3.8 defaults new servers to TLS: -notls. Offers wait for a key in the xfer
    # buffer (auto_accept_files off), and are saved under their own name (no "nick." prefix,
    # spaces kept). The xfer list buffer is opened last and stays the current one.
    startup = ";".join([
        f"/set xfer.file.download_path {downloads}",
        "/set xfer.file.auto_accept_files off",
        "/set xfer.file.use_nick_in_filename off",
        "/set xfer.file.convert_spaces off",
        "/set irc.look.buffer_switch_join off",
        "/set irc.look.buffer_switch_autojoin off",
        f"/server add test 127.0.0.1/{server.port} -notls -nicks=weechatuser -username=weechatuser",
        "/connect test",
        "/xfer",
    ])
    tmux("new-session", "-d", "-s", SESSION, "-x", "120", "-y", "40",
         f"LANG=C.UTF-8 weechat-curses --dir {shlex.quote(str(home))} -r {shlex.quote(startup)}")
    try:
        wait_until(lambda: "registered as weechatuser" in server.log_text(), what="weechat to register")
        wait_until(lambda: "Xfer list" in screen(), what="weechat's xfer list buffer")
        yield downloads
    finally:
        end_tmux(SOCKET)


@pytest.fixture
def ours(server, tmp_path):
    downloads = tmp_path / "ours"
    client = LinesClient(server.port, "ours", "--download-dir", str(downloads))
    client.downloads = downloads
    yield client
    if client.process.poll() is None:
        client.process.kill()
        client.process.wait(timeout=5)


def test_chat_tui_sends_to_weechat_and_weechat_sends_to_chat_tui(server, weechat, ours, tmp_path):
    client = ours
    client.wait_for("registered as ours")

    # chat-tui -> weechat
    outgoing = tmp_path / "from chat-tui.bin"
    outgoing.write_bytes(os.urandom(300 << 10))
    client.type(f"/send weechatuser {outgoing}")
    client.wait_for("Offered from chat-tui.bin")
    wait_until(lambda: '"from chat-tui.bin"' in screen() and "waiting" in screen(), what="weechat to see the offer")
    weechat_command("a")  # [A] Accept, on the selected (the only) line of the xfer list
    received = weechat / "from chat-tui.bin"
    client.wait_for("Sent from chat-tui.bin", timeout=30)
    wait_until(lambda: received.exists() and received.stat().st_size == outgoing.stat().st_size, what="weechat's file")
    wait_until(lambda: "-->> done" in screen(), what="weechat to finish receiving")
    assert sha256(received) == sha256(outgoing)

    # weechat -> chat-tui (/dcc wants an irc buffer; the xfer list stays on screen)
    incoming = tmp_path / "from weechat.bin"
    incoming.write_bytes(os.urandom(200 << 10))
    weechat_command(f"/command -buffer irc.server.test irc /dcc send ours {incoming}")
    client.wait_for("weechatuser offers from weechat.bin")
    client.type("/accept")
    line = client.wait_for("Received from weechat.bin", timeout=30)
    saved = client.downloads / "from weechat.bin"
    assert sha256(saved) == sha256(incoming)
    assert sha256(incoming) in line
    wait_until(lambda: "<<-- done" in screen(), what="weechat to finish sending")
    client.type("/quit")
    assert client.process.wait(timeout=10) == 0
