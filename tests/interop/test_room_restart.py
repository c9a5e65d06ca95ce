"""Issue 42, item 1 (after issue 23, item 6): a room registered with ChanServ comes back after a
restart as the same room, with its modes, key and topic; a stranger (from 127.0.0.2) who joins
its name without the key is refused and reads none of its history, and the founder's account runs
it again. A room nobody registered ends with its last member: a squatter's key, bans, +i and +l
go with it, and the name is free for the next person, after a restart too."""
import base64
import os
import signal
import socket
import subprocess

from conftest import BINARY, RawClient, Server

PASSWORD = "correct horse battery"
CAPS = "draft/chathistory batch server-time message-tags echo-message"


class Client(RawClient):
    """A RawClient whose connection comes from `source` (127.0.0.2: not the host's loopback)."""

    def __init__(self, port, source="127.0.0.1"):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(source, 0))
        self.buffer = b""


def owner(port):
    """`owner`, logged in to its account with SASL PLAIN before registering."""
    c = Client(port)
    c.send(f"CAP REQ :sasl {CAPS}")
    c.send("NICK owner")
    c.send("USER owner 0 * :owner")
    c.wait_for(lambda l: " CAP " in l and " ACK " in l)
    c.send("AUTHENTICATE PLAIN")
    c.wait_for(lambda l: l.startswith("AUTHENTICATE +"))
    c.send("AUTHENTICATE " + base64.b64encode(b"\0owner\0" + PASSWORD.encode()).decode())
    c.wait_for(lambda l: " 903 " in l)
    c.send("CAP END")
    c.wait_for(lambda l: " 366 " in l)
    return c


def stranger(port):
    c = Client(port, source="127.0.0.2")
    c.send(f"CAP REQ :{CAPS}")
    c.send("CAP END")
    c.register("mallory")
    return c


def until_batch_end(client):
    """The lines up to the end of the next chathistory batch."""
    seen = []
    for line in client.lines(timeout=10):
        seen.append(line)
        if " BATCH -" in line:
            return seen
    raise AssertionError("no end of batch; saw:\n" + "\n".join(seen))


def test_closed_room_after_kill_9_and_restart(tmp_path):
    data = tmp_path / "data"
    made = subprocess.run([BINARY, "account", "add", "owner", "--password", PASSWORD, "--data-dir", str(data)],
                          capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    server = Server("--data-dir", str(data))
    try:
        alice = owner(server.port)
        alice.send("JOIN #vault")
        alice.send("PRIVMSG ChanServ :REGISTER #vault")
        said = alice.wait_for(lambda l: l.startswith(":ChanServ!") and " NOTICE owner " in l)
        assert "#vault is registered to your account owner" in said, said
        alice.send("MODE #vault +sk sesame")
        alice.send("TOPIC #vault :owners only")
        alice.send("PRIVMSG #vault :the plan")
        # The echo comes once the line is committed; the room's record was written before it.
        alice.wait_for(lambda l: "PRIVMSG #vault :the plan" in l)
        os.kill(server.process.pid, signal.SIGKILL)
        server.process.wait(timeout=10)
    finally:
        server.stop()

    restarted = Server("--data-dir", str(data))
    try:
        mallory = stranger(restarted.port)
        mallory.send("JOIN #vault")
        refused = mallory.wait_for(lambda l: " 475 " in l or " JOIN " in l)
        assert " 475 " in refused, refused
        mallory.send("JOIN #vault guess")
        refused = mallory.wait_for(lambda l: " 475 " in l or " JOIN " in l)
        assert " 475 " in refused, refused
        mallory.send("CHATHISTORY LATEST #vault * 10")
        refused = mallory.wait_for(lambda l: " FAIL CHATHISTORY " in l or " BATCH +" in l or "PRIVMSG" in l)
        assert " FAIL CHATHISTORY INVALID_TARGET LATEST #vault " in refused, refused
        mallory.send("TOPIC #vault")
        answer = mallory.wait_for(lambda l: " 403 " in l or " 332 " in l or " 442 " in l)
        assert " 332 " not in answer, answer

        back = owner(restarted.port)
        back.send("JOIN #vault")
        topic = back.wait_for(lambda l: " 332 " in l or " 475 " in l)
        assert topic.endswith("#vault :owners only"), topic
        names = back.wait_for(lambda l: " 353 " in l)
        assert names.endswith(":@owner"), "her account runs the room again: " + names
        back.send("MODE #vault")
        modes = back.wait_for(lambda l: " 324 " in l)
        assert modes.split(" 324 ", 1)[1] == "owner #vault +nstk sesame", modes
        back.send("CHATHISTORY LATEST #vault * 10")
        batch = until_batch_end(back)
        assert [l.rsplit(":", 1)[1] for l in batch if "PRIVMSG #vault" in l] == ["the plan"], batch
    finally:
        restarted.stop()


def test_squatted_name_is_free_when_the_room_empties(tmp_path):
    data = tmp_path / "data"
    server = Server("--data-dir", str(data))
    try:
        squatter = Client(server.port, source="127.0.0.2")
        squatter.register("squatter")
        squatter.send("JOIN #x")
        squatter.wait_for(lambda l: " 366 " in l)
        squatter.send("MODE #x +kbil secret *!*@* 1")
        squatter.wait_for(lambda l: " MODE #x " in l)
        squatter.send("PART #x")
        squatter.wait_for(lambda l: " PART #x" in l)
        guest = Client(server.port)
        guest.register("guest")
        guest.send("JOIN #x")
        names = guest.wait_for(lambda l: " 353 " in l or " 47" in l)
        assert names.endswith(":@guest"), names
        guest.send("MODE #x")
        modes = guest.wait_for(lambda l: " 324 " in l)
        assert modes.endswith("#x +nt"), modes
        # Left closed while alive, then the server is killed: nothing of it comes back either.
        guest.send("MODE #x +k mine")
        guest.wait_for(lambda l: " MODE #x +k" in l)
        os.kill(server.process.pid, signal.SIGKILL)
        server.process.wait(timeout=10)
    finally:
        server.stop()
    restarted = Server("--data-dir", str(data))
    try:
        other = Client(restarted.port, source="127.0.0.2")
        other.register("other")
        other.send("JOIN #x")
        names = other.wait_for(lambda l: " 353 " in l or " 47" in l)
        assert names.endswith(":@other"), names
    finally:
        restarted.stop()
