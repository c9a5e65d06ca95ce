"""Strangers flood the client with direct messages through a real server, and its memory stays
bounded while every line still reaches its log.

Before the bounds, 200,000 direct messages from distinct nicknames left the client at 255-301 MiB:
each stranger left a conversation behind, and the log's queue grew while its writer (the trigram
index costs tens of microseconds a line) fell behind. Now the client keeps its 200 most recently
active direct conversations (strangers' closed first) and stops reading from the server while
10,000 lines wait for the log, so TCP slows the sender.

The attacker speaks from 127.0.0.2. The server runs with `--limits off` (the flood is the
client's problem here, not the server's pacing) and a send queue large enough to hold the flood
while the client reads at its log's pace. The client is the line mode with its own HOME, so its
log is its own; its peak RSS is sampled until it has shown the last message, then it quits and
the log must hold every line."""
import os
import socket
import sqlite3
import subprocess
import threading


from conftest import BINARY, Server
from load_attacks import rss_kib

STRANGERS = 30_000
CEILING_KIB = 40 * 1024
MARKER = "end-of-the-flood"


class Attacker:
    """Registers from 127.0.0.2 and reads (and drops) whatever the server sends it."""

    def __init__(self, port):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.2", 0))
        self.sock.connect(("127.0.0.1", port))
        self.sock.sendall(b"NICK attacker\r\nUSER attacker 0 * :attacker\r\n")
        received = b""
        while b" 001 " not in received:
            data = self.sock.recv(65536)
            assert data, "the server closed the attacker's connection before welcoming it"
            received += data
        threading.Thread(target=self.drain, daemon=True).start()

    def drain(self):
        try:
            while self.sock.recv(65536):
                pass
        except OSError:
            pass

    def flood(self, victim, count):
        for base in range(0, count, 1000):
            self.sock.sendall(b"".join(b"NICK stranger%d\r\nPRIVMSG %s :hello from stranger %d\r\n" % (i, victim, i)
                                       for i in range(base, min(count, base + 1000))))
        self.sock.sendall(f"NICK finisher\r\nPRIVMSG {victim.decode()} :{MARKER}\r\n".encode())


def test_strangers_direct_messages_keep_the_client_bounded_and_logged(tmp_path):
    server = Server("--limits", "off", "--room", "none", "--history-days", "0", "--sendq", "200000000")
    home = tmp_path / "client-home"
    home.mkdir()
    client = subprocess.Popen([BINARY, "--host", "127.0.0.1", "--port", str(server.port), "--nick", "victim", "--lines"],
                              env=dict(os.environ, HOME=str(home)), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT)
    registered, shown = threading.Event(), threading.Event()
    notices = []

    def read():
        for raw in client.stdout:
            line = raw.decode(errors="replace")
            if "registered as victim" in line:
                registered.set()
            if "More than 200 direct conversations" in line:
                notices.append(line)
            if MARKER in line:
                shown.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    peak = 0
    try:
        assert registered.wait(30), "the client did not register"
        attacker = Attacker(server.port)
        sender = threading.Thread(target=attacker.flood, args=(b"victim", STRANGERS), daemon=True)
        sender.start()
        # Sample until the client has shown the last message.
        while not shown.is_set():
            assert client.poll() is None, "the client exited during the flood"
            peak = max(peak, rss_kib(client.pid))
            shown.wait(0.05)
        peak = max(peak, rss_kib(client.pid))
        client.stdin.write(b"/quit\n")
        client.stdin.flush()
        assert client.wait(30) == 0
        reader.join(10)
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()
        server.stop()
    print(f"peak RSS {peak} KiB over {STRANGERS:,} direct messages from distinct nicknames")
    assert len(notices) == 1, "the limit on direct conversations is said once"
    database = sqlite3.connect(home / ".local/share/chat-tui/client/history.db")
    try:
        logged = database.execute("SELECT COUNT(*), COUNT(DISTINCT conversation) FROM lines WHERE kind = 'message'").fetchone()
    finally:
        database.close()
    assert logged == (STRANGERS + 1, STRANGERS + 1), f"the log holds {logged}, not every stranger's line"
    assert 0 < peak < CEILING_KIB, f"the client grew to {peak} KiB under the flood"
