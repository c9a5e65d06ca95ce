"""A server that floods the client: 150,000 short lines, and the client's memory stays bounded.

Before the client read with a bound, a million lines took `chat-tui --lines` to 598 MiB; now
the connection stops reading at 2,048 waiting lines and TCP pushes back on the server. The
fake server below sends as fast as the socket takes, then a PING: the client must answer it
(it is still serving its connection) and its peak RSS, sampled throughout, must stay under a
bound far below the old figure and far above what it needs (the bound is a generous ceiling,
not a measurement)."""
import os
import socket
import subprocess
import threading
import time

from conftest import BINARY, free_port

# 150,000 lines (a million took the debug build three minutes, a third of make test): the
# client without its bound held about 600 bytes a line, so these would take it 86 MiB past
# its start's 30, well over the ceiling; bounded, it stays where the first few thousand lines
# put it (27 MiB measured).
LINES = 150_000
CEILING_KIB = 80 * 1024


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return 0
    return 0


class FloodServer:
    def __init__(self):
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", free_port()))
        self.listener.listen(1)
        self.port = self.listener.getsockname()[1]
        self.sent = 0
        self.ponged = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        conn, _ = self.listener.accept()
        reader = conn.makefile("rb")
        nick = "flooded"
        # Registration: wait for NICK and USER, then welcome and a room.
        seen = set()
        while len(seen) < 2:
            line = reader.readline()
            if not line:
                return
            words = line.decode(errors="replace").split()
            if words and words[0] in ("NICK", "USER"):
                seen.add(words[0])
                if words[0] == "NICK":
                    nick = words[1]
        conn.sendall((f":srv 001 {nick} :Welcome\r\n:{nick}!u@h JOIN #flood\r\n"
                      f":srv 353 {nick} = #flood :{nick} flooder\r\n:srv 366 {nick} #flood :End\r\n").encode())
        threading.Thread(target=self.answer, args=(reader,), daemon=True).start()
        chunk = b"".join(b":flooder!f@h PRIVMSG #flood :line %d of the flood\r\n" % i for i in range(1000))
        for _ in range(LINES // 1000):
            conn.sendall(chunk)
            self.sent += 1000
        conn.sendall(b"PING :after-the-flood\r\n")
        self.ponged.wait(600)
        conn.close()

    def answer(self, reader):
        for line in reader:
            if line.startswith(b"PONG") and b"after-the-flood" in line:
                self.ponged.set()
                return


def test_a_flood_of_lines_keeps_the_client_bounded(tmp_path):
    server = FloodServer()
    # A HOME of its own: the client's log (kept, as users run it) goes there.
    client = subprocess.Popen([BINARY, "--host", "127.0.0.1", "--port", str(server.port), "--nick", "flooded", "--lines"],
                              stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env=dict(os.environ, HOME=str(tmp_path)))
    peak = 0
    try:
        # Sample until the client has answered the PING sent after the last line.
        while not server.ponged.is_set():
            assert client.poll() is None, "the client exited during the flood"
            peak = max(peak, rss_kib(client.pid))
            server.ponged.wait(0.2)
        peak = max(peak, rss_kib(client.pid))
    finally:
        client.kill()
        client.wait()
    print(f"peak RSS {peak} KiB over {server.sent} lines")
    assert server.sent == LINES
    assert 0 < peak < CEILING_KIB, f"the client grew to {peak} KiB under the flood"
