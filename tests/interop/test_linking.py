"""Rooms that span machines (issue 25): chat-tui servers linked into a real InspIRCd 3.15 network
and with each other over the spanning-tree protocol (1205). Every server and client here is a
real process on 127.0.0.1 with ports of its own, ended by the test."""
import os
import subprocess
import tempfile
import time

import pytest

from conftest import RawClient, Server, free_port
from inspircd import InspIRCd

PASSWORD = "link-secret"


def node(name, sid, *links, link_port=None, tls=False, extra=()):
    """A chat-tui server linking as `name` [`sid`], dialling each `links` entry (NAME=HOST:PORT)."""
    argv = ["--name", name, "--sid", sid, "--link-password", PASSWORD]
    for link in links:
        argv += ["--link", link]
    if link_port is not None:
        argv += ["--link-port", str(link_port)]
    if not tls:
        argv += ["--link-tls", "off"]
    return Server(*argv, *extra)


def plain(line):
    """A line with its trailing parameter's colon dropped (`MODE #r +o :ivy` and `+o ivy` are one line)."""
    return line.replace(" :", " ")


def client(port, nick):
    c = RawClient(port)
    c.register(nick)
    return c


def names(c, room="#lobby"):
    """The room's members as `c` sees them (NAMES), without status prefixes."""
    c.send(f"NAMES {room}")
    seen = set()
    for line in c.lines(5):
        if " 353 " in line:
            seen |= {n.lstrip("@+") for n in line.split(" :", 1)[1].split()}
        if " 366 " in line:
            return seen
    raise AssertionError("no end of NAMES")


def wait_members(c, expected, room="#lobby", timeout=20):
    """Asks NAMES until the room holds exactly `expected` (links come up in the background)."""
    deadline = time.monotonic() + timeout
    seen = set()
    while time.monotonic() < deadline:
        seen = names(c, room)
        if seen == set(expected):
            return
        time.sleep(0.2)
    raise AssertionError(f"{room} holds {sorted(seen)}, not {sorted(expected)}")


@pytest.fixture
def hub():
    """InspIRCd as the hub, taking links from a.chat and b.chat."""
    h = InspIRCd(name="hub.test", sid="1HB", link_port=free_port(), links=[("a.chat", PASSWORD), ("b.chat", PASSWORD)])
    yield h
    h.stop()


def test_one_room_over_three_servers(hub):
    a = node("a.chat", "0AA", f"hub.test=127.0.0.1:{hub.link_port}")
    b = node("b.chat", "0BB", f"hub.test=127.0.0.1:{hub.link_port}")
    try:
        alice, bob, ivy = client(a.port, "alice"), client(b.port, "bob"), RawClient(hub.port)
        ivy.send("NICK ivy")
        ivy.send("USER ivy 0 * :ivy")
        ivy.wait_for(lambda l: " 001 " in l)
        ivy.send("JOIN #lobby")
        ivy.wait_for(lambda l: " 366 " in l)
        for c in (alice, bob, ivy):
            wait_members(c, {"alice", "bob", "ivy"})

        # Messages in the room, from each server to the other two.
        alice.send("PRIVMSG #lobby :hello from a")
        for c in (bob, ivy):
            c.wait_for(lambda l: l.startswith(":alice!") and "PRIVMSG #lobby :hello from a" in l)
        ivy.send("PRIVMSG #lobby :hello from the hub")
        for c in (alice, bob):
            c.wait_for(lambda l: l.startswith(":ivy!") and "PRIVMSG #lobby :hello from the hub" in l)
        # Direct messages in every direction.
        for sender, name, receivers in ((alice, "alice", [("bob", bob), ("ivy", ivy)]), (bob, "bob", [("alice", alice), ("ivy", ivy)]),
                                        (ivy, "ivy", [("alice", alice), ("bob", bob)])):
            for target, c in receivers:
                sender.send(f"PRIVMSG {target} :psst {target}, {name} here")
                c.wait_for(lambda l, n=name, t=target: l.startswith(f":{n}!") and f"PRIVMSG {t} :psst {t}, {n} here" in l)

        # WHOIS of a remote user names its server.
        alice.send("WHOIS bob")
        alice.wait_for(lambda l: " 312 alice bob b.chat " in l)
        alice.send("WHOIS ivy")
        alice.wait_for(lambda l: " 312 alice ivy hub.test " in l)
        # LUSERS counts the network: three users on three servers.
        alice.send("LUSERS")
        alice.wait_for(lambda l: " 251 " in l and "on 3 servers" in l and "There are 3 users" in l)

        # alice made #lobby first (she registered first): she runs it everywhere. (bob may run
        # it too: a room made in the same second on two servers merges both sides' operators.)
        alice.send("MODE #lobby +o ivy")
        for c in (bob, ivy):
            c.wait_for(lambda l: l.startswith(":alice!") and " MODE #lobby +o ivy" in plain(l))
        ivy.send("TOPIC #lobby :a topic from the hub")
        for c in (alice, bob):
            c.wait_for(lambda l: l.startswith(":ivy!") and "TOPIC #lobby :a topic from the hub" in l)
        ivy.send("MODE #lobby +k sesame")
        for c in (alice, bob):
            c.wait_for(lambda l: " MODE #lobby +k sesame" in plain(l))
        alice.send("MODE #lobby +b troll!*@*")
        for c in (bob, ivy):
            c.wait_for(lambda l: " MODE #lobby +b troll!*@*" in plain(l))
        # A nick change on one server is seen on the others.
        bob.send("NICK bob2")
        for c in (alice, ivy):
            c.wait_for(lambda l: l.startswith(":bob!") and " NICK " in l and "bob2" in l)
        # A KICK from one server removes the member everywhere.
        ivy.send("KICK #lobby bob2 :out you go")
        for c in (alice, bob):
            c.wait_for(lambda l: l.startswith(":ivy!") and "KICK #lobby bob2 :out you go" in l)
        for c in (alice, ivy):
            wait_members(c, {"alice", "ivy"})
        # The key set on the hub keeps bob out on b.chat.
        bob.send("JOIN #lobby")
        bob.wait_for(lambda l: " 475 " in l)
        alice.send("KICK #lobby ivy :and you")
        ivy.wait_for(lambda l: l.startswith(":alice!") and "KICK #lobby ivy :and you" in l)
        wait_members(alice, {"alice"})
    finally:
        a.stop()
        b.stop()


def test_netsplit_and_heal(hub):
    a = node("a.chat", "0AA", f"hub.test=127.0.0.1:{hub.link_port}")
    b = node("b.chat", "0BB", f"hub.test=127.0.0.1:{hub.link_port}")
    try:
        alice, bob = client(a.port, "alice"), client(b.port, "bob")
        wait_members(alice, {"alice", "bob"})
        hub.kill()
        # bob leaves a.chat's room with the netsplit form: the two servers at the break.
        alice.wait_for(lambda l: l.startswith(":bob!") and " QUIT :a.chat hub.test" in l)
        bob.wait_for(lambda l: l.startswith(":alice!") and " QUIT :b.chat hub.test" in l)
        assert names(alice) == {"alice"}
        hub.restart()
        # Both servers dial it again; the burst brings everyone back, once.
        alice.wait_for(lambda l: l.startswith(":bob!") and " JOIN #lobby" in l, timeout=30)
        wait_members(alice, {"alice", "bob"})
        wait_members(bob, {"alice", "bob"})
        bob.send("PRIVMSG #lobby :back")
        line = alice.wait_for(lambda l: "PRIVMSG #lobby :back" in l)
        assert line.startswith(":bob!")
        # Nothing arrives twice.
        alice.send("PING :done")
        rest = []
        alice.wait_for(lambda l: rest.append(l) or "PONG" in l)
        assert not any("PRIVMSG #lobby :back" in l or " JOIN " in l for l in rest), rest
    finally:
        a.stop()
        b.stop()
