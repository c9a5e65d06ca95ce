"""History on the real server: every message a sender saw echoed survives `kill -9` and a
restart, with the same msgids, times and order; a client without chathistory (irssi-like)
gets the room's last lines on joining."""
import os
import signal
import time

from conftest import RawClient, Server, free_port, wait_for_port
import subprocess
from conftest import BINARY


def batch_lines(client):
    """The (msgid, time, text) of the messages in the next chathistory batch."""
    found = []
    for line in client.lines(timeout=10):
        if " BATCH -" in line:
            break
        if "PRIVMSG #lobby :message " in line:
            tags = dict(t.split("=", 1) for t in line[1:].split(" ", 1)[0].split(";") if "=" in t)
            found.append((tags["msgid"], tags["time"], line.rsplit(":", 1)[1]))
    return found


def history_client(port, nick):
    c = RawClient(port)
    c.send("CAP REQ :draft/chathistory batch server-time message-tags echo-message")
    c.send("CAP END")
    c.register(nick)
    return c


def test_kill_9_and_restart_lose_nothing_echoed(tmp_path):
    data = tmp_path / "data"
    server = Server("--data-dir", str(data))
    try:
        alice = history_client(server.port, "alice")
        echoed = []
        for n in range(200):
            alice.send(f"PRIVMSG #lobby :message {n}")
        # Echoes come only after the commit: each one seen is on disk.
        for line in alice.lines(timeout=20):
            if "PRIVMSG #lobby :message " in line:
                tags = dict(t.split("=", 1) for t in line[1:].split(" ", 1)[0].split(";") if "=" in t)
                echoed.append((tags["msgid"], tags["time"], line.rsplit(":", 1)[1]))
                if len(echoed) == 200:
                    break
        assert len(echoed) == 200
        os.kill(server.process.pid, signal.SIGKILL)
        server.process.wait(timeout=10)
    finally:
        server.log.close()
    restarted = Server("--data-dir", str(data))
    try:
        bob = history_client(restarted.port, "bob")
        bob.send("CHATHISTORY LATEST #lobby * 100")
        got = batch_lines(bob)
        # The newest 100, then the 100 before them by msgid.
        bob.send(f"CHATHISTORY BEFORE #lobby msgid={got[0][0]} 100")
        before = batch_lines(bob)
        assert before + got == echoed, "the same messages, msgids and times, in order"
    finally:
        restarted.stop()


def test_a_client_without_chathistory_gets_context_on_joining():
    server = Server("--replay-on-join", "3")
    try:
        alice = RawClient(server.port)
        alice.register("alice")
        for n in range(5):
            alice.send(f"PRIVMSG #lobby :context {n}")
        alice.send("PING :sent")
        alice.wait_for(lambda l: "PONG" in l and "sent" in l)
        newcomer = RawClient(server.port)
        newcomer.send("NICK newcomer")
        newcomer.send("USER n 0 * :n")
        seen = []
        for line in newcomer.lines(timeout=10):
            if "PRIVMSG #lobby :context" in line:
                seen.append(line.rsplit(":", 1)[1])
                if len(seen) == 3:
                    break
        assert seen == ["context 2", "context 3", "context 4"]
    finally:
        server.stop()


def test_a_deleted_line_leaves_no_bytes_in_the_database_files(tmp_path):
    """Issue 43, item 10: REDACT forgets the row, and its text is overwritten (secure_delete),
    the WAL truncated by a checkpoint: nothing of it in server.db or its WAL."""
    import time
    from conftest import RawClient, Server
    data = tmp_path / "data"
    server = Server("--data-dir", str(data))
    try:
        alice = RawClient(server.port)
        alice.send("CAP REQ :draft/chathistory batch server-time message-tags echo-message draft/message-redaction")
        alice.send("CAP END")
        alice.register("alice")
        secret = "the-vault-code-is-7391-8842"
        alice.send(f"PRIVMSG #lobby :{secret}")
        echo = alice.wait_for(lambda l: secret in l)
        msgid = next(t.split("=", 1)[1] for t in echo[1:].split(" ", 1)[0].split(";") if t.startswith("msgid="))

        def on_disk():
            found = []
            for name in os.listdir(data):
                if name.startswith("server.db"):
                    with open(data / name, "rb") as f:
                        if secret.encode() in f.read():
                            found.append(name)
            return found
        deadline = time.monotonic() + 10
        while not on_disk() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert on_disk(), "the line was stored"
        alice.send(f"REDACT #lobby {msgid} :oops")
        alice.wait_for(lambda l: " REDACT #lobby " in l)
        deadline = time.monotonic() + 20
        while on_disk() and time.monotonic() < deadline:
            time.sleep(0.1)
        print(f"\nafter the deletion, the text is in: {on_disk() or 'no file'}")
        assert on_disk() == [], "the deleted text is still in " + ", ".join(on_disk())
    finally:
        server.stop()
