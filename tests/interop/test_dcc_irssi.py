"""DCC SEND with irssi, both ways: files arrive byte-identical (SHA-256)."""
import hashlib
import os
import shutil
import subprocess
import time

import pytest

from conftest import sha256, wait_for, end_tmux
from test_lines_mode import LinesClient

SOCKET = f"chat-tui-dcc-{os.getpid()}"


def tmux(*args):
    return subprocess.run(["tmux", "-u", "-L", SOCKET, *args], check=True, capture_output=True, text=True).stdout




def wait_until(predicate, timeout=20, what="condition"):
    wait_for(predicate, timeout, what, lambda: tmux("capture-pane", "-p", "-t", "irssi"))


def irssi_command(line):
    tmux("send-keys", "-t", "irssi", "-l", line)
    tmux("send-keys", "-t", "irssi", "Enter")


@pytest.fixture
def irssi(server, tmp_path):
    if not shutil.which("irssi") or not shutil.which("tmux"):
        pytest.fail("irssi and tmux are needed: make deps installs them")
    home = tmp_path / "irssi-home"
    downloads = tmp_path / "irssi-downloads"
    home.mkdir()
    downloads.mkdir()
    tmux("new-session", "-d", "-s", "irssi", "-x", "120", "-y", "40",
         f"LANG=C.UTF-8 irssi --home={home} -c 127.0.0.1 -p {server.port} -n irssiuser")
    wait_until(lambda: "irssiuser" in server.log_text(), what="irssi to register")
    irssi_command(f"/set dcc_download_path {downloads}")
    irssi_command("/set dcc_autoget off")
    yield downloads
    end_tmux(SOCKET)


def test_chat_tui_sends_to_irssi_and_irssi_sends_to_chat_tui(server, irssi, tmp_path):
    ours_downloads = tmp_path / "ours"
    client = LinesClient(server.port, "ours", "--download-dir", str(ours_downloads))
    client.wait_for("registered as ours")

    # chat-tui -> irssi
    outgoing = tmp_path / "from chat-tui.bin"
    outgoing.write_bytes(os.urandom(3 << 20))
    client.type(f"/send irssiuser {outgoing}")
    client.wait_for("Offered from chat-tui.bin")
    wait_until(lambda: "DCC SEND from ours" in tmux("capture-pane", "-p", "-t", "irssi"), what="irssi to see the offer")
    irssi_command("/dcc get ours")
    received = irssi / "from chat-tui.bin"
    client.wait_for("Sent from chat-tui.bin")
    wait_until(lambda: received.exists() and received.stat().st_size == outgoing.stat().st_size, what="irssi's file")
    assert sha256(received) == sha256(outgoing)

    # irssi -> chat-tui
    incoming = tmp_path / "from-irssi.bin"
    incoming.write_bytes(os.urandom(2 << 20))
    irssi_command(f"/dcc send ours {incoming}")
    client.wait_for("irssiuser offers from-irssi.bin")
    client.type("/accept")
    line = client.wait_for("Received from-irssi.bin")
    saved = ours_downloads / "from-irssi.bin"
    assert sha256(saved) == sha256(incoming)
    assert sha256(incoming) in line
    client.type("/quit")
    assert client.process.wait(timeout=10) == 0
