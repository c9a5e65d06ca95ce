"""Rooms that span machines (issue 25): chat-tui servers linked into a real InspIRCd 3.15 network
and with each other over the spanning-tree protocol (1205). Every server and client here is a
real process on 127.0.0.1 with ports of its own, ended by the test."""
import os
import socket
import subprocess
import threading
import time

import pytest

from conftest import RawClient, Server, Tmux, end_tmux, free_port
from inspircd import InspIRCd
from test_networks import MultiClient

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


def oper_hash(password, salt="linktest", iterations=1000):
    """An --oper hash as `chat-tui --hash-password` makes one (PBKDF2-HMAC-SHA-256)."""
    import hashlib
    return f"pbkdf2-sha256:{iterations}:{salt}:" + hashlib.pbkdf2_hmac("sha256", password.encode(), salt.encode(), iterations).hex()


def plain(line):
    """A line with its trailing parameter's colon dropped (`MODE #r +o :ivy` and `+o ivy` are one line)."""
    return line.replace(" :", " ")


def client(port, nick, ident=None):
    c = RawClient(port)
    if ident is None:
        c.register(nick)
    else:
        c.send(f"NICK {nick}")
        c.send(f"USER {ident} 0 * :{nick}")
        c.wait_for(lambda l: " 366 " in l)
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


def test_one_room_over_three_servers(tmp_path):
    """a.chat links to the InspIRCd hub over TLS, each pinning the other's certificate; b.chat
    over a plain link (as on a trusted network)."""
    hub_cert, hub_key, hub_print = certificate(tmp_path, "hub.test")
    a_cert, a_key, a_print = certificate(tmp_path, "a.chat")
    hub = InspIRCd(name="hub.test", sid="1HB", link_port=free_port(), tls=(hub_cert, hub_key),
                   links=[("a.chat", PASSWORD, a_print), ("b.chat", PASSWORD)])
    a = node("a.chat", "0AA", f"hub.test=127.0.0.1:{hub.tls_link_port}", tls=True,
             extra=("--tls-port", str(free_port()), "--tls-cert", a_cert, "--tls-key", a_key, "--link-fingerprint", f"hub.test={hub_print}",
                    "--oper", "admin:" + oper_hash("operator-secret")))
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
        # WHO names each member's server and its distance in hops.
        alice.send("WHO #lobby")
        who = [alice.wait_for(lambda l: " 352 " in l) for _ in range(3)]
        assert {l.split()[7]: (l.split()[6], l.split(" :", 1)[1].split()[0]) for l in who} == {
            "alice": ("a.chat", "0"), "ivy": ("hub.test", "1"), "bob": ("b.chat", "2")}, who
        # LUSERS counts the network: three users on three servers.
        alice.send("LUSERS")
        alice.wait_for(lambda l: " 251 " in l and "on 3 servers" in l and "There are 3 users" in l)

        # Away, accounts and MONITOR travel too.
        alice.send("CAP REQ :away-notify account-notify")
        alice.wait_for(lambda l: " ACK " in l)
        alice.send("MONITOR + ivy,nobody")
        alice.wait_for(lambda l: " 730 " in l and "ivy!" in l)
        bob.send("AWAY :at lunch")
        alice.wait_for(lambda l: l.startswith(":bob!") and " AWAY :at lunch" in l)
        # (dora, not bob: an account that ran #lobby would pass its key later, as saved rooms let it.)
        dora = client(b.port, "dora")
        dora.send("REGISTER * * correct-horse-battery")
        dora.wait_for(lambda l: "REGISTER SUCCESS" in l)
        alice.wait_for(lambda l: l.startswith(":dora!") and " ACCOUNT dora" in l)
        alice.send("WHOIS dora")
        alice.wait_for(lambda l: " 330 alice dora dora " in l)
        dora.close()
        # An account stays present when its last device goes (always-on): the other servers see
        # it away, not gone.
        alice.wait_for(lambda l: l.startswith(":dora!") and " AWAY :not connected" in l)
        # dora comes back through NickServ on another connection, turns always-on off and quits: gone everywhere.
        again = client(b.port, "dora_again")
        again.send("PRIVMSG NickServ :IDENTIFY dora correct-horse-battery")
        again.wait_for(lambda l: "You are now logged in as dora" in l)
        again.wait_for(lambda l: " NICK " in l and "dora" in l.split(" NICK ", 1)[1])
        again.send("PRIVMSG NickServ :SET ALWAYS-ON OFF")
        again.wait_for(lambda l: "Always-on is off for dora" in l)
        again.send("QUIT :done")
        alice.wait_for(lambda l: l.startswith(":dora!") and " QUIT " in l)
        # An invitation from one server lets a remote user into a +i room on its own.
        alice.send("JOIN #private")
        alice.wait_for(lambda l: " 366 " in l and "#private" in l)
        alice.send("MODE #private +i")
        alice.wait_for(lambda l: " MODE #private +i" in plain(l))
        # b.chat has it once its MODE #private says so.
        deadline = time.monotonic() + 10
        while True:
            bob.send("MODE #private")
            answer = bob.wait_for(lambda l: " 324 " in l or " 403 " in l)
            if " 324 " in answer and "i" in plain(answer).split(" #private ")[1]:
                break
            assert time.monotonic() < deadline, "b.chat never heard #private is +i"
        bob.send("JOIN #private")
        bob.wait_for(lambda l: " 473 " in l)
        alice.send("INVITE bob #private")
        alice.wait_for(lambda l: " 341 " in l)
        bob.wait_for(lambda l: l.startswith(":alice!") and " INVITE bob #private" in plain(l))
        bob.send("JOIN #private")
        bob.wait_for(lambda l: l.startswith(":bob!") and " JOIN #private" in plain(l))
        alice.wait_for(lambda l: l.startswith(":bob!") and " JOIN #private" in plain(l))

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
        # An operator on a.chat kills a user on the hub: gone from every server.
        alice.send("OPER admin operator-secret")
        alice.wait_for(lambda l: " 381 " in l)
        alice.send("KILL ivy :spam")
        ivy.wait_for(lambda l: l.startswith("ERROR"))
        alice.wait_for(lambda l: " 731 " in l and "ivy" in l)
        # b.chat hears of it through the hub, a moment later.
        deadline = time.monotonic() + 10
        while True:
            bob.send("WHOIS ivy")
            if " 401 " in bob.wait_for(lambda l: " 401 " in l or " 318 " in l):
                break
            assert time.monotonic() < deadline, "ivy is still on b.chat"
        assert "link hub.test [1HB]: authenticated over TLS" in a.log_text()
        assert "Authentication: SSL certificate fingerprint" in hub.log()
    finally:
        a.stop()
        b.stop()
        hub.stop()


def test_netsplit_and_heal(hub, tmp_path):
    a = node("a.chat", "0AA", f"hub.test=127.0.0.1:{hub.link_port}")
    b = node("b.chat", "0BB", f"hub.test=127.0.0.1:{hub.link_port}")
    carol = None
    try:
        alice, bob = client(a.port, "alice"), client(b.port, "bob")
        # Our own client on a.chat, in the line mode: what a user sees of the split.
        carol = MultiClient(str(tmp_path), [f"127.0.0.1:{a.port}"], "carol")
        wait_members(alice, {"alice", "bob", "carol"})
        carol.wait_for(lambda l: "You joined #lobby" in l, "carol in #lobby")
        hub.kill()
        # bob leaves a.chat's room with the netsplit form: the two servers at the break.
        alice.wait_for(lambda l: l.startswith(":bob!") and " QUIT :a.chat hub.test" in l)
        bob.wait_for(lambda l: l.startswith(":alice!") and " QUIT :b.chat hub.test" in l)
        split = carol.wait_for(lambda l: "bob left in a netsplit (a.chat ⇄ hub.test)" in l, "the netsplit in carol's client")
        assert names(alice) == {"alice", "carol"}
        hub.restart()
        # Both servers dial it again; the burst brings everyone back, once.
        alice.wait_for(lambda l: l.startswith(":bob!") and " JOIN #lobby" in l, timeout=30)
        wait_members(alice, {"alice", "bob", "carol"})
        wait_members(bob, {"alice", "bob", "carol"})
        back = carol.wait_for(lambda l: "bob joined #lobby" in l, "bob back in carol's client", start=split)
        assert not any("bob joined #lobby" in l for l in carol.lines()[back + 1:]), carol.lines()[split:]
        bob.send("PRIVMSG #lobby :back")
        line = alice.wait_for(lambda l: "PRIVMSG #lobby :back" in l)
        assert line.startswith(":bob!")
        # Nothing arrives twice.
        alice.send("PING :done")
        rest = []
        alice.wait_for(lambda l: rest.append(l) or "PONG" in l)
        assert not any("PRIVMSG #lobby :back" in l or " JOIN " in l for l in rest), rest
    finally:
        if carol:
            carol.stop()
        a.stop()
        b.stop()


def shut(*sockets):
    """Shuts sockets down both ways (their pumps see the end), whatever state they are in."""
    for s in sockets:
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class CutProxy:
    """A TCP relay between two servers' link ports that a test can cut (both ways at once; new
    connections are closed as soon as they come) and mend, as a broken cable between two sites."""

    def __init__(self, target_port):
        self.target = target_port
        self.port = free_port()
        self.pairs = []
        self.open = True
        self.lock = threading.Lock()
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", self.port))
        self.listener.listen(8)
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                inner, _ = self.listener.accept()
            except OSError:
                return
            if not self.open:
                inner.close()
                continue
            try:
                outer = socket.create_connection(("127.0.0.1", self.target), timeout=5)
                outer.settimeout(None)
            except OSError:
                inner.close()
                continue
            with self.lock:
                self.pairs.append((inner, outer))
            for a, b in ((inner, outer), (outer, inner)):
                threading.Thread(target=self.pump, args=(a, b), daemon=True).start()

    @staticmethod
    def pump(source, sink):
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            pass
        shut(source, sink)

    def cut(self):
        self.open = False
        with self.lock:
            pairs, self.pairs = self.pairs, []
        for inner, outer in pairs:
            shut(inner, outer)

    def mend(self):
        self.open = True

    def close(self):
        self.cut()
        shut(self.listener)
        self.listener.close()


def cut_pair():
    """a.chat listening for b.chat, which dials it through a `CutProxy`: (a, proxy, b)."""
    link_port = free_port()
    a = node("a.chat", "0AA", "b.chat", link_port=link_port)
    proxy = CutProxy(link_port)
    return a, proxy, node("b.chat", "0BB", f"a.chat=127.0.0.1:{proxy.port}")


def certificate(directory, name):
    """A self-signed certificate and key for `name`, and its SHA-256 as the host screen shows it."""
    cert, key = os.path.join(directory, f"{name}.pem"), os.path.join(directory, f"{name}.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", key, "-out", cert, "-days", "2", "-subj", f"/CN={name}"], check=True, capture_output=True)
    out = subprocess.run(["openssl", "x509", "-in", cert, "-noout", "-fingerprint", "-sha256"], check=True,
                         capture_output=True, text=True).stdout
    return cert, key, out.strip().split("=", 1)[1]


def test_direct_tls_link_pinned_both_ways(tmp_path):
    """a.chat listens, b.chat dials; each pins the other's certificate. A msgid is minted once:
    bob's history on b.chat holds alice's line under the msgid her echo had on a.chat."""
    a_cert, a_key, a_print = certificate(tmp_path, "a.chat")
    b_cert, b_key, b_print = certificate(tmp_path, "b.chat")
    link_port = free_port()
    a = node("a.chat", "0AA", "b.chat", link_port=link_port, tls=True,
             extra=("--tls-port", str(free_port()), "--tls-cert", a_cert, "--tls-key", a_key, "--link-fingerprint", f"b.chat={b_print}"))
    b = node("b.chat", "0BB", f"a.chat=127.0.0.1:{link_port}", tls=True,
             extra=("--tls-port", str(free_port()), "--tls-cert", b_cert, "--tls-key", b_key, "--link-fingerprint", f"a.chat={a_print}"))
    try:
        alice, bob = client(a.port, "alice"), client(b.port, "bob")
        wait_members(alice, {"alice", "bob"})
        assert "link b.chat [0BB]: authenticated over TLS" in a.log_text()
        assert "link a.chat [0AA]: authenticated over TLS" in b.log_text()
        alice.send("CAP REQ :echo-message message-tags server-time")
        alice.wait_for(lambda l: " ACK " in l)
        alice.send("PRIVMSG #lobby :one msgid for every node")
        echo = alice.wait_for(lambda l: "PRIVMSG #lobby :one msgid for every node" in l)
        msgid = dict(t.split("=", 1) for t in echo[1:].split(" ", 1)[0].split(";") if "=" in t)["msgid"]
        bob.wait_for(lambda l: "one msgid for every node" in l)
        bob.send("CAP REQ :batch server-time message-tags draft/chathistory")
        bob.wait_for(lambda l: " ACK " in l)
        bob.send("CHATHISTORY LATEST #lobby * 10")
        stored = bob.wait_for(lambda l: "PRIVMSG #lobby :one msgid for every node" in l)
        assert f"msgid={msgid}" in stored, stored
    finally:
        a.stop()
        b.stop()


def test_wrong_certificate_is_refused(tmp_path):
    a_cert, a_key, _ = certificate(tmp_path, "a.chat")
    b_cert, b_key, b_print = certificate(tmp_path, "b.chat")
    link_port = free_port()
    wrong = "AB" * 32
    a = node("a.chat", "0AA", "b.chat", link_port=link_port, tls=True,
             extra=("--tls-port", str(free_port()), "--tls-cert", a_cert, "--tls-key", a_key, "--link-fingerprint", f"b.chat={b_print}"))
    b = node("b.chat", "0BB", f"a.chat=127.0.0.1:{link_port}", tls=True,
             extra=("--tls-port", str(free_port()), "--tls-cert", b_cert, "--tls-key", b_key, "--link-fingerprint", f"a.chat={wrong}"))
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and "not the pinned" not in b.log_text():
            time.sleep(0.1)
        assert f"a.chat showed certificate" in b.log_text() and f"not the pinned {wrong}" in b.log_text(), b.log_text()
        assert "authenticated" not in a.log_text() + b.log_text()
    finally:
        a.stop()
        b.stop()


def test_split_between_two_nodes_nick_collision_and_room_timestamps():
    """A direct link cut while both sides go on: the same nickname taken on both (the older
    keeps it, the newer becomes its UUID), a room made on both (the older's modes win)."""
    a, proxy, b = cut_pair()
    try:
        alice, bob = client(a.port, "alice"), client(b.port, "bob")
        wait_members(alice, {"alice", "bob"})
        proxy.cut()
        alice.wait_for(lambda l: l.startswith(":bob!") and " QUIT :a.chat b.chat" in l, timeout=10)
        # During the split: sam on a.chat, then (a second later, so the timestamps differ)
        # another sam on b.chat (another ident: two people; one person's two connections, same
        # ident and address, would keep the newer, as InspIRCd does).
        sam_a = client(a.port, "sam", ident="sama")
        alice.send("JOIN #split")
        alice.wait_for(lambda l: " 366 " in l)
        alice.send("MODE #split +m")
        started = int(time.time())
        while int(time.time()) == started:
            time.sleep(0.05)
        sam_b = client(b.port, "sam", ident="samb")
        bob.send("JOIN #split")
        bob.wait_for(lambda l: " 366 " in l)
        bob.send("MODE #split +k bobkey")
        bob.wait_for(lambda l: " MODE #split +k" in plain(l))
        proxy.mend()
        # b.chat's sam is newer: it gives up the name and is called by its UUID.
        sam_b.wait_for(lambda l: l.startswith(":sam!") and " NICK " in l and "0BB" in l, timeout=30)
        # a.chat's #split is older: its +m stays, b.chat's +k and bob's operator status go.
        bob.wait_for(lambda l: " MODE #split " in l and "-" in l and "k" in l.split(" MODE #split ")[1], timeout=10)
        bob.send("MODE #split")
        modes = bob.wait_for(lambda l: " 324 " in l)
        assert "m" in plain(modes).split(" #split ")[1] and "k" not in plain(modes).split(" #split ")[1], modes
        sam_a.send("WHOIS sam")
        sam_a.wait_for(lambda l: " 311 sam sam sama " in l)
        sam_a.wait_for(lambda l: " 312 sam sam a.chat " in l)
    finally:
        proxy.close()
        a.stop()
        b.stop()


def history(c, room="#lobby"):
    """The texts of the room's PRIVMSGs that CHATHISTORY LATEST returns to `c`, oldest first, with their msgids."""
    c.send(f"CHATHISTORY LATEST {room} * 50")
    rows = []
    for line in c.lines(5):
        if " PRIVMSG " in line and line.startswith("@"):
            tags = dict(t.split("=", 1) for t in line[1:].split(" ", 1)[0].split(";") if "=" in t)
            rows.append((line.split(" PRIVMSG ", 1)[1].split(" :", 1)[1], tags.get("msgid")))
        if " BATCH -" in line:
            return rows
    raise AssertionError("no end of the history batch")


def test_history_merged_after_a_split_between_two_nodes():
    """Both sides talk while the direct link is cut; once it heals, each side's clients are told
    what the other side said, and CHATHISTORY on either node returns every line once, in order."""
    a, proxy, b = cut_pair()
    try:
        alice, bob = client(a.port, "alice"), client(b.port, "bob")
        for c in (alice, bob):
            c.send("CAP REQ :batch server-time message-tags draft/chathistory")
            c.wait_for(lambda l: " ACK " in l)
        wait_members(alice, {"alice", "bob"})
        alice.send("PRIVMSG #lobby :before the split")
        bob.wait_for(lambda l: "before the split" in l)
        proxy.cut()
        alice.wait_for(lambda l: l.startswith(":bob!") and " QUIT :a.chat b.chat" in l or " QUIT :a.chat b.chat" in l, timeout=10)
        bob.wait_for(lambda l: " QUIT :b.chat a.chat" in l, timeout=10)
        # One after the other, each stored (asked for) before the next is said: two servers
        # order lines said at the same moment by their clocks, not by who the test asked first.
        # Each side's own lines are stored before the heal (the echo-less sender sees nothing: ask).
        alice.send("PRIVMSG #lobby :a1 said on a.chat during the split")
        assert [t for t, _ in history(alice)][-1] == "a1 said on a.chat during the split"
        bob.send("PRIVMSG #lobby :b1 said on b.chat during the split")
        assert [t for t, _ in history(bob)][-1] == "b1 said on b.chat during the split"
        alice.send("PRIVMSG #lobby :a2 said on a.chat during the split")
        assert [t for t, _ in history(alice)][-2:] == ["a1 said on a.chat during the split", "a2 said on a.chat during the split"]
        proxy.mend()
        bob.wait_for(lambda l: "NOTICE #lobby :2 messages said on the other side of a split follow" in l, timeout=30)
        bob.wait_for(lambda l: "a1 said on a.chat" in l)
        bob.wait_for(lambda l: "a2 said on a.chat" in l)
        alice.wait_for(lambda l: "NOTICE #lobby :1 message said on the other side of a split follow" in l, timeout=30)
        alice.wait_for(lambda l: "b1 said on b.chat" in l)
        expected = ["before the split", "a1 said on a.chat during the split", "b1 said on b.chat during the split",
                    "a2 said on a.chat during the split"]
        on_a, on_b = history(alice), history(bob)
        assert [t for t, _ in on_a if t in expected] == expected, on_a
        assert [t for t, _ in on_b if t in expected] == expected, on_b
        # The same msgid for each line on both nodes.
        assert [m for t, m in on_a if t in expected] == [m for t, m in on_b if t in expected]
    finally:
        proxy.close()
        a.stop()
        b.stop()


def test_our_clients_and_irssi_in_one_room(tmp_path):
    """As a user sees it: our client (`--lines`) on a.chat and on b.chat, irssi (in tmux) on
    the InspIRCd hub, all in #lobby: each shows the other two and their lines, and direct
    messages go every way."""
    import shutil
    if not shutil.which("irssi") or not shutil.which("tmux"):
        pytest.fail("irssi and tmux are needed: make deps installs them")
    socket_name = f"chat-tui-link-{os.getpid()}"
    window = Tmux(socket_name, "irssi")
    tmux, irssi_screen, irssi = window.run, window.screen, window.type

    def irssi_wait(predicate, what, timeout=30):
        return window.wait(predicate, what, timeout)

    hub = InspIRCd(name="hub.test", sid="1HB", link_port=free_port(), links=[("a.chat", PASSWORD), ("b.chat", PASSWORD)])
    a = node("a.chat", "0AA", f"hub.test=127.0.0.1:{hub.link_port}")
    b = node("b.chat", "0BB", f"hub.test=127.0.0.1:{hub.link_port}")
    alice = bob = None
    try:
        alice = MultiClient(str(tmp_path / "alice"), [f"127.0.0.1:{a.port}"], "alice")
        bob = MultiClient(str(tmp_path / "bob"), [f"127.0.0.1:{b.port}"], "bob")
        home = tmp_path / "irssi-home"
        home.mkdir()
        tmux("new-session", "-d", "-s", "irssi", "-x", "140", "-y", "45",
             f"LANG=C.UTF-8 TERM=xterm-256color irssi --home={home} -n ivy")
        irssi_wait(lambda s: "[(status)]" in s, "irssi to start")
        irssi("/set cmd_queue_speed 0")
        irssi("/set cmds_max_at_once 100")
        irssi(f"/connect 127.0.0.1 {hub.port}")
        irssi_wait(lambda s: "Welcome to" in s, "irssi to register")
        irssi("/join #lobby")
        # irssi lists the room's members on joining (those whose servers have linked by then)
        # and shows the others arriving: alice and bob, whichever server each is on.
        def present(screen, nick):
            return f"{nick} [{nick}@" in screen or f"[ {nick}]" in screen or f"[@{nick}]" in screen

        irssi_wait(lambda s: present(s, "alice") and present(s, "bob"), "irssi's #lobby with alice and bob")
        irssi("/names #lobby")
        irssi_wait(lambda s: "Total of 3 nicks" in s, "irssi's NAMES of three")
        # Our clients see ivy arrive.
        alice.wait_for(lambda l: "ivy joined #lobby" in l, "ivy in alice's #lobby", timeout=30)
        bob.wait_for(lambda l: "ivy joined #lobby" in l, "ivy in bob's #lobby", timeout=30)
        alice.type("hello from alice on a.chat")
        bob.type("hi, bob here on b.chat")
        irssi("ivy on the hub says hey")
        irssi_wait(lambda s: "hello from alice on a.chat" in s and "hi, bob here on b.chat" in s, "both lines in irssi")
        for c, other in ((alice, "bob here on b.chat"), (bob, "hello from alice on a.chat")):
            c.wait_for(lambda l: other in l, f"the other's line")
            c.wait_for(lambda l: "<ivy> ivy on the hub says hey" in l, "ivy's line")
        # Direct messages every way.
        alice.type("/msg bob psst bob")
        bob.wait_for(lambda l: "psst bob" in l and "alice" in l, "alice's direct message to bob")
        bob.type("/msg ivy psst ivy")
        # irssi puts it in a query window of its own: shown with /query bob once it is there.
        irssi_wait(lambda s: irssi("/query bob") is None and "psst ivy" in irssi_screen(), "bob's direct message in irssi")
        irssi("/msg alice psst alice")
        alice.wait_for(lambda l: "psst alice" in l and "ivy" in l, "ivy's direct message to alice")
    finally:
        for c in (alice, bob):
            if c:
                c.stop()
        end_tmux(socket_name)
        a.stop()
        b.stop()
        hub.stop()


def test_link_into_an_ascii_casemapping_hub(tmp_path):
    """Issue 42, item 6: InspIRCd with casemapping="ascii" (InspIRCd 4's default) refuses none of
    ours with --casemapping ascii: one room across the link, and `a[` and `a{` are two people."""
    hub = InspIRCd(name="hub.test", sid="1HB", link_port=free_port(), links=[("a.chat", PASSWORD), ("b.chat", PASSWORD)],
                   casemapping="ascii")
    ours = node("a.chat", "1AA", f"hub.test=127.0.0.1:{hub.link_port}", extra=("--casemapping", "ascii"))
    refused = node("b.chat", "1BB", f"hub.test=127.0.0.1:{hub.link_port}")
    try:
        here = client(ours.port, "alice")
        here.send("VERSION")
        isupport = here.wait_for(lambda l: " 005 " in l and "CASEMAPPING=" in l)
        assert "CASEMAPPING=ascii" in isupport, isupport
        def on_hub(nick):
            c = RawClient(hub.port)
            c.send(f"NICK {nick}")
            c.send("USER x 0 * :x")
            c.wait_for(lambda l: " 001 " in l)
            c.send("JOIN #lobby")
            c.wait_for(lambda l: " 366 " in l)
            return c
        there = on_hub("bob")
        wait_members(here, {"alice", "bob"})
        wait_members(there, {"alice", "bob"})
        # Under ascii, [ and { are different letters: two people, on both sides.
        bracket = client(ours.port, "a[")
        brace = on_hub("a{")
        wait_members(there, {"alice", "bob", "a[", "a{"})
        wait_members(here, {"alice", "bob", "a[", "a{"})
        brace.send("PRIVMSG a[ :hello across")
        bracket.wait_for(lambda l: "PRIVMSG a[ :hello across" in l, timeout=10)
        # A node that folds rfc1459 is refused, and its log says why.
        deadline = time.monotonic() + 20
        while "casemapping ascii differs from ours (rfc1459)" not in refused.log_text() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert "casemapping ascii differs from ours (rfc1459)" in refused.log_text(), refused.log_text()[-2000:]
        for c in (here, there, bracket, brace):
            c.close()
    finally:
        refused.stop()
        ours.stop()
        hub.stop()
