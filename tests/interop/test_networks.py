"""Several networks in one client (issue 24): one `chat-tui --lines` on our own server and on a
real InspIRCd at once: messages both ways on both, an outage of ours (InspIRCd keeps working and
only ours is down), and a search that finds the lines of both, each under its network."""
import os
import subprocess
import tempfile
import threading
import time

import pytest

from conftest import BINARY, RawClient, Server, free_port, stop_process, wait_for_port
from inspircd import InspIRCd

class MultiClient:
    """`chat-tui --lines` with a `--host` per network, in a HOME of its own."""

    def __init__(self, home, hosts, nick):
        argv = [BINARY, "--lines", "--nick", nick, "--join", "#lobby"]
        for host in hosts:
            argv += ["--host", host]
        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True, bufsize=1, env=dict(os.environ, HOME=home))
        self.output = []
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self.read, daemon=True)
        self.reader.start()

    def read(self):
        for line in self.process.stdout:
            with self.lock:
                self.output.append(line.rstrip("\n"))

    def type(self, line):
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def lines(self):
        with self.lock:
            return list(self.output)

    def wait_for(self, predicate, what, start=0, timeout=20):
        """The index of the first line from `start` on that `predicate` holds for."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            lines = self.lines()
            for index in range(start, len(lines)):
                if predicate(lines[index]):
                    return index
            time.sleep(0.02)
        raise AssertionError(f"no line: {what}; output:\n" + "\n".join(self.lines()))

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


def test_one_client_on_our_server_and_inspircd(tmp_path):
    ours = Server()
    theirs = None
    client = None
    peers = []
    try:
        theirs = InspIRCd()
        ours_name, theirs_name = f"127.0.0.1:{ours.port}", f"127.0.0.1:{theirs.port}"
        on_ours, on_theirs = f"[{ours_name}] ", f"[{theirs_name}] "
        client = MultiClient(str(tmp_path), [ours_name, theirs_name], "multi")
        for prefix in (on_ours, on_theirs):
            client.wait_for(lambda l, p=prefix: l.startswith(p) and "registered as multi" in l, f"{prefix}registered")
            client.wait_for(lambda l, p=prefix: l.startswith(p) and "You joined #lobby" in l, f"{prefix}joined #lobby")

        peer_ours = RawClient(ours.port)
        peer_ours.register("ourpeer")
        peer_theirs = RawClient(theirs.port)
        peer_theirs.send("NICK theirpeer")
        peer_theirs.send("USER theirpeer 0 * :theirpeer")
        peer_theirs.wait_for(lambda l: " 001 " in l)
        peer_theirs.send("JOIN #lobby")
        peer_theirs.wait_for(lambda l: " 366 " in l)
        peers = [peer_ours, peer_theirs]

        # Each network's lines arrive under its name.
        peer_ours.send("PRIVMSG #lobby :cake from ours")
        peer_theirs.send("PRIVMSG #lobby :cake from inspircd")
        client.wait_for(lambda l: l.startswith(on_ours) and "<ourpeer> cake from ours" in l, "our peer's line")
        client.wait_for(lambda l: l.startswith(on_theirs) and "<theirpeer> cake from inspircd" in l, "InspIRCd peer's line")

        # Typed lines go to the current network; /network changes it.
        client.type("hello ours")
        peer_ours.wait_for(lambda l: "PRIVMSG #lobby :hello ours" in l)
        client.type(f"/network {theirs_name}")
        client.wait_for(lambda l: f"typing to {theirs_name}" in l, "the switch")
        client.type("hello inspircd")
        peer_theirs.wait_for(lambda l: "PRIVMSG #lobby :hello inspircd" in l)

        # Our server dies: only its network is down; InspIRCd's goes on both ways.
        mark = len(client.lines())
        ours.process.kill()
        ours.process.wait()
        client.wait_for(lambda l: l.startswith(on_ours) and ("reconnecting" in l or "disconnected" in l), "our network down", mark)
        peer_theirs.send("PRIVMSG #lobby :still here")
        client.wait_for(lambda l: l.startswith(on_theirs) and "<theirpeer> still here" in l, "InspIRCd's line after the outage", mark)
        client.type("after the outage")
        peer_theirs.wait_for(lambda l: "PRIVMSG #lobby :after the outage" in l)
        mark = len(client.lines())
        client.type("/network")
        down = client.wait_for(lambda l: f"-!- {ours_name}: " in l, "our network in the list", mark)
        up = client.wait_for(lambda l: f"-!- {theirs_name}: " in l, "InspIRCd's network in the list", mark)
        lines = client.lines()
        assert "down:" in lines[down] or "connecting" in lines[down], lines[down]
        assert "connected as multi (shown)" in lines[up], lines[up]

        # One search asks both networks; each lists the lines said on it (the log is written by
        # its own thread: asked again until both lines are there; the answers are events).
        deadline = time.monotonic() + 20
        while True:
            mark = len(client.lines())
            client.type("/search cake")
            first = client.wait_for(lambda l: l.startswith(on_ours) and "lines with cake" in l, "our network's hits", mark)
            second = client.wait_for(lambda l: l.startswith(on_theirs) and "lines with cake" in l, "InspIRCd's hits", mark)
            lines = client.lines()

            # The line mode writes a search's answer as a line, then its hits, each on a line of its own (indented).
            def block(start):
                end = start + 1
                while end < len(lines) and lines[end].startswith("  "):
                    end += 1
                return "\n".join(lines[start:end])
            if "cake from ours" in block(first) and "cake from inspircd" in block(second):
                assert "cake from inspircd" not in block(first), "each network lists only its own lines"
                assert "cake from ours" not in block(second), "each network lists only its own lines"
                break
            assert time.monotonic() < deadline, "the search never found both lines:\n" + "\n".join(lines[mark:])

        client.type("/quit")
        assert client.process.wait(timeout=20) == 0, "\n".join(client.lines())
    finally:
        for peer in peers:
            peer.close()
        if client:
            client.stop()
        if theirs:
            theirs.stop()
        ours.stop()
