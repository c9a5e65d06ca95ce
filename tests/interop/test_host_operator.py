"""The host's own user on the `--serve` chat screen is an IRC operator and runs the room."""
import os
import shutil
import subprocess
import time

import pytest

from conftest import BINARY, RawClient, free_port, wait_for_port, end_tmux

SOCKET = "chat-tui-host-oper"


def test_host_user_is_operator_and_room_operator(tmp_path):
    if not shutil.which("tmux"):
        pytest.fail("tmux is missing: make deps installs it")
    port = free_port()
    log = tmp_path / "server.log"
    command = (f"LANG=C.UTF-8 TERM=xterm-256color {BINARY} --serve --bind 127.0.0.1 --port {port} "
               f"--tls-port {free_port()} --web-port 0 --data-dir {tmp_path / 'data'} --nick hostess --log {log}; sleep 30")
    subprocess.run(["tmux", "-L", SOCKET, "new-session", "-d", "-s", "host", "-x", "100", "-y", "30", command], check=True)
    guest = None
    try:
        wait_for_port(port)
        # The host's client registers and sends OPER on its own; wait for the log to say so.
        deadline = time.monotonic() + 20
        while "hostess is now an operator" not in (log.read_text() if log.exists() else ""):
            assert time.monotonic() < deadline, "the host's user never became an operator:\n" + (log.read_text() if log.exists() else "")
            time.sleep(0.1)
        guest = RawClient(port)
        guest.register("guest")
        guest.send("WHOIS hostess")
        assert guest.wait_for(lambda l: " 313 " in l or " 318 " in l).split(" ")[1] == "313", "WHOIS must say the host is an operator"
        guest.send("NAMES #lobby")
        names = guest.wait_for(lambda l: " 353 " in l)
        assert "@hostess" in names.split(":", 2)[2].split(), names
        # The host's screen says how others join: its addresses with the port.
        deadline = time.monotonic() + 10
        while True:
            screen = subprocess.run(["tmux", "-L", SOCKET, "capture-pane", "-p", "-t", "host"], capture_output=True, text=True).stdout
            if "Others join with:" in screen or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert "Others join with:" in screen and f"chat-tui --host 127.0.0.1 --port {port}" in screen, screen
        guest.send("OPER host guessing")
        assert guest.wait_for(lambda l: " 464 " in l or " 381 " in l).split(" ")[1] == "464", "the host block's password is not guessable"
    finally:
        if guest:
            guest.close()
        end_tmux(SOCKET)
