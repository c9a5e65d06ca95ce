"""Interop: the `irc` library from PyPI, a third-party client, on our server."""
import threading
import time

import irc.client

from conftest import RawClient


class LibraryClient:
    """jaraco's irc client driven on its own thread, recording what it sees."""

    def __init__(self, port, nick):
        self.reactor = irc.client.Reactor()
        self.names = []
        self.privmsgs = []
        self.joins = []
        self.welcomed = threading.Event()
        self.named = threading.Event()
        self.connection = self.reactor.server().connect("127.0.0.1", port, nick, username="py", ircname="Python irc")
        self.connection.add_global_handler("welcome", lambda c, e: self.welcomed.set())
        self.connection.add_global_handler("namreply", self.on_names)
        self.connection.add_global_handler("endofnames", lambda c, e: self.named.set())
        self.connection.add_global_handler("privmsg", lambda c, e: self.privmsgs.append((e.source.nick, e.arguments[0])))
        self.connection.add_global_handler("join", lambda c, e: self.joins.append((e.source.nick, e.target)))
        self.running = True
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def on_names(self, connection, event):
        self.names.extend(event.arguments[2].split())

    def loop(self):
        while self.running:
            self.reactor.process_once(0.05)

    def wait(self, predicate, timeout=5.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(0.02)
        return False

    def stop(self):
        self.connection.quit("bye")
        time.sleep(0.1)
        self.running = False
        self.thread.join(timeout=2)


def test_library_client_registers_sees_members_and_exchanges_direct_messages(server):
    ours = RawClient(server.port)
    ours.register("ours")

    theirs = LibraryClient(server.port, "theirs")
    try:
        assert theirs.welcomed.wait(5), "the irc library never saw 001"
        assert theirs.named.wait(5), "the irc library never saw the end of NAMES"
        assert sorted(n.lstrip("@+") for n in theirs.names) == ["ours", "theirs"]

        ours.wait_for(lambda l: l.startswith(":theirs!") and " JOIN #lobby" in l)

        ours.send("PRIVMSG theirs :hello from a raw socket ✓")
        assert theirs.wait(lambda: ("ours", "hello from a raw socket ✓") in theirs.privmsgs)

        theirs.connection.privmsg("ours", "hello back, 你好")
        line = ours.wait_for(lambda l: "PRIVMSG ours" in l)
        assert line.startswith(":theirs!py@127.0.0.1 PRIVMSG ours :hello back, 你好")

        theirs.connection.privmsg("#lobby", "to the room")
        ours.wait_for(lambda l: l.endswith("PRIVMSG #lobby :to the room"))

        theirs.connection.nick("theirs2")
        ours.wait_for(lambda l: l.startswith(":theirs!") and l.endswith("NICK theirs2"))
    finally:
        theirs.stop()
    ours.wait_for(lambda l: l.startswith(":theirs2!") and " QUIT " in l)
    log = server.log_text()
    assert "registered as theirs" in log
    assert "theirs is now known as theirs2" in log
    assert "theirs2 quit: Quit: bye" in log
    ours.close()


def test_nc_style_session_with_bare_lf(server):
    """What a user typing into `nc 127.0.0.1 6667` sends: bare LF line endings."""
    import socket
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    sock.sendall(b"NICK typist\nUSER typist 0 * :Typist\n")
    data = b""
    while b"366" not in data:
        chunk = sock.recv(4096)
        assert chunk, "server closed the connection"
        data += chunk
    assert b":chat-tui.local 001 typist :Welcome" in data
    assert b"JOIN #lobby" in data
    sock.sendall(b"QUIT :done\n")
    rest = b""
    while True:
        chunk = sock.recv(4096)
        if not chunk:
            break
        rest += chunk
    assert b"ERROR :Closing Link: 127.0.0.1 (Quit: done)" in rest
    sock.close()
