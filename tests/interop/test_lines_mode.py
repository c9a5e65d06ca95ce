"""The ChatClient through the real binary: `chat-tui --host ... --lines`."""
import subprocess
import threading
import time

from conftest import BINARY, RawClient


class LinesClient:
    def __init__(self, port, nick, *extra):
        self.process = subprocess.Popen(
            [BINARY, "--host", "127.0.0.1", "--port", str(port), "--nick", nick, "--lines", *extra],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
        self.output = []
        self.reader = threading.Thread(target=self.read, daemon=True)
        self.reader.start()

    def read(self):
        for line in self.process.stdout:
            self.output.append(line.rstrip("\n"))

    def type(self, line):
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def wait_for(self, text, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.output:
                if text in line:
                    return line
            time.sleep(0.02)
        raise AssertionError(f"no line with {text!r}; output:\n" + "\n".join(self.output))

    def wait_for_match(self, pattern, timeout=10):
        """The first line the regular expression finds something in (its match)."""
        import re
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.output:
                found = re.search(pattern, line)
                if found:
                    return found
            time.sleep(0.02)
        raise AssertionError(f"no line matching {pattern!r}; output:\n" + "\n".join(self.output))


def test_lines_mode_chats_and_quits(server):
    peer = RawClient(server.port)
    peer.register("peer")
    client = LinesClient(server.port, "typist")
    client.wait_for("registered as typist")
    client.wait_for("[#lobby] -!- You joined #lobby")

    client.type("hello from the line mode")
    peer.wait_for(lambda l: l.endswith("PRIVMSG #lobby :hello from the line mode"))
    client.type("/msg peer a direct one")
    peer.wait_for(lambda l: l.endswith("PRIVMSG peer :a direct one"))

    # Escape sequences from a peer are shown, never sent to the terminal.
    peer.send("PRIVMSG typist :\x1b[2Jcleared? \x07")
    line = client.wait_for("cleared?")
    assert "\x1b" not in line and "^[[2Jcleared? ^G" in line
    assert "[peer] <peer>" in line

    client.type("/msg typist me")
    client.wait_for("That is you: pick someone else to send a message to")
    # The commands are the chat screen's, from the same table and interpreter.
    client.type("/frobnicate")
    client.wait_for("Unknown command /frobnicate: /help lists the commands")
    client.type("/msg peer")
    client.wait_for("Usage: /msg NICK TEXT")
    client.type("/help")
    client.wait_for("/transfers")
    client.type("/me waves")
    peer.wait_for(lambda l: l.endswith("PRIVMSG #lobby :\x01ACTION waves\x01"))
    client.type("/query peer")
    client.type("now to peer")
    peer.wait_for(lambda l: l.endswith("PRIVMSG peer :now to peer"))
    client.type("/quit see you")
    peer.wait_for(lambda l: l.startswith(":typist!") and l.endswith("QUIT :Quit: see you"))
    assert client.process.wait(timeout=10) == 0
    client.wait_for("stopped: you quit")


def test_lines_mode_rejects_a_bad_nickname_before_connecting(server):
    client = LinesClient(server.port, "9bad")
    assert client.process.wait(timeout=10) == 2
    client.wait_for("--nick 9bad: Nickname may not start with a digit")


def test_lines_mode_stops_on_a_wrong_password():
    from conftest import Server
    server = Server("--password", "sesame")
    try:
        client = LinesClient(server.port, "guest", "--password", "wrong")
        assert client.process.wait(timeout=10) == 1
        client.wait_for("stopped: wrong password: Password incorrect")
    finally:
        server.stop()


def test_lines_typed_while_the_server_is_down_are_sent_after_it_returns(tmp_path):
    """The README promises up to 100 lines held while offline; --lines must hold them too, for
    the room it was in, and send them in order once back."""
    import os
    from conftest import free_port, wait_for_port

    port = free_port()

    def start():
        process = subprocess.Popen([BINARY, "--serve", "--headless", "--bind", "127.0.0.1", "--port", str(port), "--tls-port", "0", "--web-port", "0"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        wait_for_port(port)
        return process

    server = start()
    client = LinesClient(port, "typist")
    try:
        client.wait_for("You joined #lobby")
        server.kill()
        server.wait(5)
        client.wait_for("disconnected")
        for i in range(30):
            client.type(f"offline line {i}")
        server = start()
        peer = RawClient(port)
        peer.register("peer")
        seen = []
        try:
            for i in range(30):
                seen.append(peer.wait_for(lambda l: f"PRIVMSG #lobby :offline line" in l, timeout=20))
        except AssertionError:
            raise AssertionError("client output:\n" + "\n".join(client.output))
        assert [l.rsplit(":", 1)[1] for l in seen] == [f"offline line {i}" for i in range(30)]
        assert not any("not sent" in line for line in client.output), "\n".join(client.output)
        peer.close()
    finally:
        client.process.kill()
        server.kill()
        server.wait(5)


def test_plain_lines_go_to_the_room_joined_last(server):
    peer = RawClient(server.port)
    peer.register("peer")
    peer.send("JOIN #dev")
    peer.wait_for(lambda l: " 366 " in l and "#dev" in l)
    client = LinesClient(server.port, "typist")
    try:
        client.wait_for("You joined #lobby")
        client.type("/join #dev")
        client.type("right after the join")
        line = peer.wait_for(lambda l: "PRIVMSG" in l and "right after the join" in l)
        assert "PRIVMSG #dev :" in line, line
        client.type("/part #dev")
        client.type("back in the lobby")
        assert "PRIVMSG #lobby :" in peer.wait_for(lambda l: "back in the lobby" in l)
    finally:
        client.process.kill()
        peer.close()


def test_search_from_the_shell_finds_chinese_emoji_and_english(server):
    peer = RawClient(server.port)
    peer.register("baker")
    client = LinesClient(server.port, "eater")
    client.wait_for("registered as eater")
    client.wait_for("You joined #lobby")
    peer.send("PRIVMSG #lobby :蛋糕很好吃 🎂 the cake is good")
    client.wait_for("the cake is good")
    client.type("/search 蛋糕")
    client.wait_for("1 lines with 蛋糕")
    client.type("/quit")
    client.process.wait(timeout=10)
    for words in (["蛋糕"], ["🎂"], ["cake", "good"], ["很好吃"]):
        found = subprocess.run([BINARY, "search", *words], capture_output=True, text=True, timeout=20)
        assert found.returncode == 0 and "<baker> 蛋糕很好吃 🎂 the cake is good" in found.stdout, (words, found.stdout, found.stderr)
    missing = subprocess.run([BINARY, "search", "pie"], capture_output=True, text=True, timeout=20)
    assert missing.returncode == 1 and missing.stdout == ""


def test_lines_mode_numbers_messages_for_replies_reactions_and_deletions(server):
    """Each message carries [N]; /reply, /react and /delete name it; the other side prints what happened."""
    import re
    alice = LinesClient(server.port, "alice")
    bob = LinesClient(server.port, "bob")
    try:
        alice.wait_for("[#lobby] -!- You joined #lobby")
        bob.wait_for("[#lobby] -!- You joined #lobby")
        bob.type("lunch at noon?")
        number = alice.wait_for_match(r"\[(\d+)\] \[#lobby\] <bob> lunch at noon\?").group(1)
        mine = bob.wait_for_match(r"\[(\d+)\] \[#lobby\] <bob> lunch at noon\?").group(1)

        alice.type(f"/reply {number} count me in")
        assert f"↳ reply to [{mine}]:" in bob.wait_for("<alice> count me in")
        alice.type(f"/react {number} :+1:")
        bob.wait_for(f"alice reacted 👍 to [{mine}]")
        bob.type(f"/delete {mine}")
        alice.wait_for(f"[{number}] deleted by bob")

        # A multiline message from a modern client: its lines under the first.
        modern = RawClient(server.port)
        modern.send("CAP REQ :batch draft/multiline")
        modern.send("CAP END")
        modern.register("modern")
        for line in ("BATCH +m draft/multiline #lobby", "@batch=m PRIVMSG #lobby :first line", "@batch=m PRIVMSG #lobby :second line", "BATCH -m"):
            modern.send(line)
        alice.wait_for("<modern> first line")
        lines = alice.output
        at = next(i for i, l in enumerate(lines) if "<modern> first line" in l)
        assert lines[at + 1] == "    second line", lines[at:]
    finally:
        for client in (alice, bob):
            client.process.terminate()
            client.process.wait(timeout=10)
