"""SASL on our server with real clients over TLS: irssi and WeeChat log in with PLAIN,
catgirl with PLAIN and with EXTERNAL (a client certificate registered to the account). Each
login shows in the server's log and in another user's WHOIS (330)."""
import os
import shutil
import subprocess
import time

import pytest

from conftest import irssi_sasl_home, weechat_sasl_command, BINARY, RawClient, Server, free_port, wait_for, end_tmux

SOCKET = f"chat-tui-sasl-{os.getpid()}"
PASSWORD = "correct-horse-battery"


def tmux(*args):
    return subprocess.run(["tmux", "-u", "-L", SOCKET, *args], check=True, capture_output=True, text=True).stdout


def screen(session):
    return tmux("capture-pane", "-p", "-t", session)


def account(data, *words):
    done = subprocess.run([BINARY, "account", *words, "--data-dir", str(data)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


@pytest.fixture
def sasl_server(tmp_path):
    for tool in ("tmux", "irssi", "weechat-curses", "catgirl", "openssl"):
        if not shutil.which(tool):
            pytest.fail(f"{tool} is needed: make deps installs it")
    data = tmp_path / "data"
    for name in ("alice", "wee", "kitty"):
        account(data, "add", name, "--password", PASSWORD)
    tls_port = free_port()
    server = Server("--tls-port", str(tls_port), "--data-dir", str(data))
    server.tls_port = tls_port
    server.data = data
    try:
        yield server
    finally:
        end_tmux(SOCKET)
        server.stop()


def logged_in(server, nick, account):
    """The server says so, and another user's WHOIS shows the account (330)."""
    wait_for(lambda: f"logged in as {account}" in server.log_text(), 30, f"{nick} to log in", server.log_text)
    wait_for(lambda: f"registered as {nick}" in server.log_text(), 30, f"{nick} to register", server.log_text)
    peer = RawClient(server.port)
    peer.register(f"peer{free_port() % 1000}")
    peer.send(f"WHOIS {nick}")
    line = peer.wait_for(lambda l: " 330 " in l or " 318 " in l, timeout=10)
    assert f" 330 " in line and f" {nick} {account} :is logged in as" in line, line


def test_irssi_logs_in_with_sasl_plain_over_tls(sasl_server, tmp_path):
    home = irssi_sasl_home(tmp_path / "irssi", sasl_server.tls_port, "alice", PASSWORD, "alice")
    tmux("new-session", "-d", "-s", "irssi", "-x", "120", "-y", "40", f"LANG=C.UTF-8 irssi --home={home}")
    logged_in(sasl_server, "alice", "alice")
    wait_for(lambda: "SASL authentication succeeded" in screen("irssi"), 20, "irssi to say it logged in", lambda: screen("irssi"))


def test_weechat_logs_in_with_sasl_plain_over_tls(sasl_server, tmp_path):
    tmux("new-session", "-d", "-s", "weechat", "-x", "120", "-y", "40",
         weechat_sasl_command(tmp_path / "weechat", sasl_server.tls_port, "wee", "wee", "wee", PASSWORD))
    logged_in(sasl_server, "wee", "wee")


def test_catgirl_logs_in_with_plain_and_with_a_client_certificate(sasl_server, tmp_path):
    # PLAIN: catgirl -a USER:PASS, trusting our self-signed certificate (-t).
    printed = subprocess.run(["catgirl", "-o", "-h", "127.0.0.1", "-p", str(sasl_server.tls_port)],
                             capture_output=True, text=True, timeout=20)
    trusted = tmp_path / "server.pem"
    trusted.write_text(printed.stdout)
    home = tmp_path / "home"
    home.mkdir()
    tmux("new-session", "-d", "-s", "plain", "-x", "100", "-y", "30",
         f"HOME={home} LANG=C.UTF-8 TERM=xterm-256color catgirl -h 127.0.0.1 -p {sasl_server.tls_port} "
         f"-t {trusted} -n alice -a alice:{PASSWORD}")
    logged_in(sasl_server, "alice", "alice")

    # EXTERNAL: a client certificate made with the openssl tool, its SHA-256 registered to kitty.
    certificate, key = tmp_path / "kitty.pem", tmp_path / "kitty.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", str(key), "-out", str(certificate), "-days", "2", "-subj", "/CN=kitty"],
                   check=True, capture_output=True, timeout=30)
    fingerprint = subprocess.run(["openssl", "x509", "-in", str(certificate), "-noout", "-fingerprint", "-sha256"],
                                 check=True, capture_output=True, text=True).stdout.strip().split("=", 1)[1]
    reloads = sasl_server.log_text().count("(reloaded: changed on disk)")
    account(sasl_server.data, "cert", "add", "kitty", fingerprint)
    # The running server sees the change at its next reload (once a second): waited for in its log.
    deadline = time.monotonic() + 30
    while sasl_server.log_text().count("(reloaded: changed on disk)") == reloads:
        assert time.monotonic() < deadline, "the server never reloaded its accounts"
        time.sleep(0.05)
    tmux("new-session", "-d", "-s", "external", "-x", "100", "-y", "30",
         f"HOME={home} LANG=C.UTF-8 TERM=xterm-256color catgirl -h 127.0.0.1 -p {sasl_server.tls_port} "
         f"-t {trusted} -n kitty -c {certificate} -k {key} -e")
    logged_in(sasl_server, "kitty", "kitty")


def test_our_client_logs_in_with_scram_and_a_wrong_password_stops(sasl_server):
    from test_lines_mode import LinesClient
    client = LinesClient(sasl_server.port, "alice", "--sasl-user", "alice", "--sasl-password", PASSWORD)
    try:
        client.wait_for("Logged in as alice")
        logged_in(sasl_server, "alice", "alice")
    finally:
        client.process.terminate()
        client.process.wait(timeout=10)
    # Standard input stays open (at its end the line mode quits): the stop is the login's.
    wrong = subprocess.Popen([BINARY, "--host", "127.0.0.1", "--port", str(sasl_server.port), "--nick", "alice", "--lines",
                              "--sasl-user", "alice", "--sasl-password", "nope"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wrong.wait(timeout=30)
    output = wrong.stdout.read()
    wrong.stdin.close()
    assert "stopped: login failed for alice: wrong account name or password" in output, output
    assert wrong.returncode != 0, output
    assert output.count("connecting to") == 1, "no reconnect"
