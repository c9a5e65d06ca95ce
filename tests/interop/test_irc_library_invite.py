"""Interop: invite-only rooms with the `irc` library from PyPI as all three clients.

alice creates #secret (so she is its operator) and makes it +i; bob is invited and joins; carol
is never invited and is refused with 473. The INVITE errors: 401 for a nick nobody has, 482 for
a member who is not an operator, 443 for someone already in. The server runs with `--room none`,
so nobody is in any room but the ones the test makes.
"""
import threading
import time

import irc.client
import pytest

from conftest import Server

ROOM = "#secret"
TIMEOUT = 15


@pytest.fixture
def roomless_server():
    s = Server("--room", "none")
    yield s
    s.stop()


class Recorder:
    """An `irc` library connection on its own reactor thread; every event it sees, in order."""

    def __init__(self, port, nick):
        self.nick = nick
        self.events = []
        self.lock = threading.Lock()
        self.reactor = irc.client.Reactor()
        self.connection = self.reactor.server().connect("127.0.0.1", port, nick, username=nick, ircname=f"{nick} (irc library)")
        self.connection.add_global_handler("all_events", self.record)
        self.running = True
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def record(self, connection, event):
        if event.type in ("all_raw_messages",):
            return
        with self.lock:
            self.events.append(event)

    def loop(self):
        while self.running:
            self.reactor.process_once(0.05)

    def wait_event(self, kind, where=lambda e: True, timeout=TIMEOUT, start=0):
        """The first event of type `kind` at index >= start satisfying `where`; fails after `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                for event in self.events[start:]:
                    if event.type == kind and where(event):
                        return event
                seen = list(self.events[start:])
            if time.monotonic() > deadline:
                summary = "\n".join(f"  {e.type} {e.source} {e.target} {e.arguments}" for e in seen)
                raise AssertionError(f"{self.nick} never saw {kind}; saw:\n{summary}")
            time.sleep(0.02)

    def mark(self):
        with self.lock:
            return len(self.events)

    def types_since(self, start):
        with self.lock:
            return [e.type for e in self.events[start:]]

    def stop(self):
        try:
            self.connection.quit("bye")
        except irc.client.ServerNotConnectedError:
            pass
        self.running = False
        self.thread.join(timeout=2)
        self.connection.close()


def joined(nick):
    return lambda e: e.source.nick == nick and e.target == ROOM


def test_invite_only_room_with_the_irc_library(roomless_server):
    port = roomless_server.port
    clients = []
    try:
        for nick in ("alice", "bob", "carol"):
            clients.append(Recorder(port, nick))
        alice, bob, carol = clients
        for client in clients:
            client.wait_event("welcome")

        # alice creates the room and is its operator.
        alice.connection.join(ROOM)
        alice.wait_event("join", joined("alice"))
        names = alice.wait_event("namreply", lambda e: e.arguments[1] == ROOM)
        assert names.arguments[2].split() == ["@alice"]

        alice.connection.mode(ROOM, "+i")
        mode = alice.wait_event("mode", lambda e: e.target == ROOM)
        assert mode.source.nick == "alice" and mode.arguments == ["+i"]
        alice.connection.mode(ROOM, "")
        modes = alice.wait_event("channelmodeis", lambda e: e.arguments[0] == ROOM)
        assert "i" in modes.arguments[1], modes.arguments

        # carol, not invited: 473, and she is not in.
        carol.connection.join(ROOM)
        refused = carol.wait_event("inviteonlychan")
        assert refused.target == "carol" and refused.arguments[0] == ROOM, refused.arguments

        # alice invites bob: 341 to alice, INVITE to bob naming the room; bob joins.
        alice.connection.invite("bob", ROOM)
        inviting = alice.wait_event("inviting")
        assert inviting.arguments == ["bob", ROOM], inviting.arguments
        invite = bob.wait_event("invite")
        assert invite.source.nick == "alice" and invite.target == "bob" and invite.arguments == [ROOM], \
            (invite.source, invite.target, invite.arguments)
        bob.connection.join(invite.arguments[0])
        bob.wait_event("join", joined("bob"))
        names = bob.wait_event("namreply", lambda e: e.arguments[1] == ROOM)
        assert sorted(names.arguments[2].split()) == ["@alice", "bob"]
        alice.wait_event("join", joined("bob"))

        # carol is still refused: bob's invitation was his alone.
        start = carol.mark()
        carol.connection.join(ROOM)
        refused = carol.wait_event("inviteonlychan", start=start)
        assert refused.arguments[0] == ROOM

        # INVITE to a nick nobody has: 401.
        alice.connection.invite("ghost", ROOM)
        missing = alice.wait_event("nosuchnick")
        assert missing.arguments[0] == "ghost", missing.arguments

        # A member who is not an operator may not invite into a +i room: 482, and carol hears nothing.
        bob.connection.invite("carol", ROOM)
        denied = bob.wait_event("chanoprivsneeded")
        assert denied.arguments[0] == ROOM, denied.arguments
        start = carol.mark()
        carol.connection.join(ROOM)
        carol.wait_event("inviteonlychan", start=start)
        assert "invite" not in carol.types_since(0)

        # INVITE of someone already in: 443 <nick> <channel>.
        alice.connection.invite("bob", ROOM)
        already = alice.wait_event("useronchannel")
        assert already.arguments[:2] == ["bob", ROOM], already.arguments

        # Nobody got in who should not have: alice sees exactly bob join.
        start = alice.mark()
        alice.connection.names([ROOM])
        names = alice.wait_event("namreply", lambda e: e.arguments[1] == ROOM, start=start)
        assert sorted(names.arguments[2].split()) == ["@alice", "bob"]
    finally:
        for client in clients:
            client.stop()
