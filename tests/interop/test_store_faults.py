"""Issue 28, the honest store: the real server with its database read-only, full, locked by
another process and damaged. What is asserted is what a user sees (the words of a refusal or
of a refusal to start) and that nothing is handed out unchecked: an account's nickname is not
anyone's while its database cannot be read or written. Every server has its own HOME and data
directory and is stopped in a `finally`."""
import base64
import os
import resource
import socket
import sqlite3
import subprocess
import tempfile
import threading
import time

from conftest import BINARY
from hole_attacks import Host
from load_attacks import Line

PASSWORD = "right-password"


class Raw(Line):
    """A client that registers as told (capabilities, SASL PLAIN) and keeps every line it reads
    (`Line.read`, on a thread)."""

    def __init__(self, port, nick, caps=(), sasl=None):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.lines, self.arrivals, self.closed = [], [], False
        threading.Thread(target=self.read, daemon=True).start()
        if caps:
            self.send("CAP REQ :" + " ".join(caps))
        self.send(f"NICK {nick}")
        self.send(f"USER {nick} 0 * :{nick}")
        if sasl:
            self.send("AUTHENTICATE PLAIN")
            self.wait("AUTHENTICATE +")
            self.send("AUTHENTICATE " + base64.b64encode(f"\0{sasl}\0{PASSWORD}".encode()).decode())
            self.wait(" 903 ")
        if caps:
            self.send("CAP END")

    def wait(self, text, timeout=30, start=0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.lines[start:]:
                if text in line:
                    return line
            time.sleep(0.02)
        raise AssertionError(f"no line with {text!r}; saw:\n" + "\n".join(self.lines[-30:]))

    def close(self):
        self.sock.close()


def add_account(data, name):
    home = tempfile.mkdtemp(prefix="chat-tui-store-home-")
    made = subprocess.run([BINARY, "account", "add", name, "--password", PASSWORD, "--data-dir", data],
                          env=dict(os.environ, HOME=home), capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr


def prepared_data():
    """A data directory a server has run in once, with the account `owner`."""
    first = Host(BINARY)
    first.stop()
    add_account(first.data, "owner")
    return first.data


def test_read_only_data_directory_refuses_to_start_and_says_how():
    data = prepared_data()
    for name in os.listdir(data):
        os.chmod(os.path.join(data, name), 0o444)
    os.chmod(data, 0o555)

    def unprivileged():
        # root writes anywhere: the server runs as nobody, for whom the directory is read-only.
        if os.geteuid() == 0:
            os.setgid(65534)
            os.setuid(65534)
    host = Host(BINARY, data=data, preexec=unprivileged, wait=False)
    try:
        code = host.process.wait(timeout=60)
        host.copier.join(timeout=10)
        print("\nread-only start: " + host.log_text().strip())
        assert code != 0
        assert f"chat-tui: the data directory {data} cannot be written (Permission denied): make it writable for this user first" in host.log_text()
    finally:
        host.stop()
        os.chmod(data, 0o755)


def test_damaged_database_stops_the_start_with_what_to_do():
    data = prepared_data()
    with open(os.path.join(data, "server.db"), "r+b") as f:
        f.write(b"this is not what SQLite wrote" * 8)
    for suffix in ("-wal", "-shm"):
        if os.path.exists(os.path.join(data, "server.db" + suffix)):
            os.remove(os.path.join(data, "server.db" + suffix))
    host = Host(BINARY, data=data, wait=False)
    try:
        code = host.process.wait(timeout=60)
        host.copier.join(timeout=10)
        text = host.log_text()
        print("\ndamaged start: " + text.strip())
        path = os.path.join(data, "server.db")
        assert code != 0
        assert f"chat-tui: the server database {path} is damaged (" in text
        assert f"restore it from a backup, or move it aside (mv {path} {path}.damaged) to start with none" in text
        # Nothing was rebuilt over it: the damaged file is as it was, for the host to look at.
        with open(path, "rb") as f:
            assert f.read(29) == b"this is not what SQLite wrote"
    finally:
        host.stop()


def test_full_disk_keeps_nicknames_checked_and_refuses_registration_saying_why():
    data = prepared_data()
    host = Host(BINARY, data=data)
    try:
        # The disk is full from now on (no file may grow).
        soft, hard = resource.prlimit(host.pid, resource.RLIMIT_FSIZE)
        resource.prlimit(host.pid, resource.RLIMIT_FSIZE, (4096, hard))
        # The account's look-alikes are still refused (checked in memory, not on the disk)...
        mallory = Raw(host.port, "visitor", caps=("standard-replies",))
        mallory.send("CAP END")
        mallory.wait(" 001 ")
        mallory.send("NICK \u043ewner")
        refused = mallory.wait(" 432 ")
        assert refused.endswith(":Nickname looks too much like the account owner"), refused
        # ...its owner logs in, and a read marker moves (held in memory, written when it can be).
        owner = Raw(host.port, "owner", caps=("sasl", "draft/read-marker", "server-time"), sasl="owner")
        owner.wait(" 001 ")
        owner.send("MARKREAD #lobby timestamp=2026-01-01T00:00:00.000Z")
        owner.wait("MARKREAD #lobby timestamp=2026-01-01T00:00:00.000Z")
        # A new account cannot be written: refused with the reason, not half made.
        start = len(mallory.lines)
        mallory.send("NICK newcomer")
        mallory.wait("NICK", start=start)
        mallory.send("REGISTER * * :long enough password")
        failed = mallory.wait("FAIL REGISTER", start=start)
        print("\nfull disk, REGISTER: " + failed)
        assert failed.endswith("FAIL REGISTER TEMPORARILY_UNAVAILABLE newcomer :The account could not be written "
                               "(accounts are unavailable right now; try again in a moment)"), failed
        host.wait_log("accounts: cannot add newcomer")
        # Everyone else is served meanwhile.
        owner.send("PING :still-served")
        owner.wait("still-served")
        # Space again: the same REGISTER works; the marker set meanwhile is stored.
        resource.prlimit(host.pid, resource.RLIMIT_FSIZE, (soft, hard))
        start = len(mallory.lines)
        mallory.send("REGISTER * * :long enough password")
        assert "REGISTER SUCCESS newcomer" in mallory.wait("REGISTER", start=start)
        host.wait_log("history: storing again after")
        owner.close()
        mallory.close()
        host.stop()
        db = sqlite3.connect(os.path.join(data, "server.db"))
        markers = db.execute("SELECT account, target FROM read_markers").fetchall()
        accounts = [row[0] for row in db.execute("SELECT key FROM accounts ORDER BY key")]
        db.close()
        assert markers == [("owner", "#lobby")]
        assert accounts == ["newcomer", "owner"]
    finally:
        host.stop()


def test_a_database_locked_by_another_process_refuses_registration_and_serves_everything_else():
    data = prepared_data()
    # Another process takes the write lock before the server starts, and keeps it.
    lock = sqlite3.connect(os.path.join(data, "server.db"), isolation_level=None)
    lock.execute("BEGIN EXCLUSIVE")
    host = None
    try:
        host = Host(BINARY, data=data)
        # Reads go on (WAL): the owner logs in, the account's nickname stays the owner's.
        owner = Raw(host.port, "owner", caps=("sasl",), sasl="owner")
        owner.wait(" 001 ")
        other = Raw(host.port, "visitor", caps=("standard-replies",))
        other.send("CAP END")
        other.wait(" 001 ")
        other.send("NICK owner")
        assert " 433 " in other.wait(" 433 ")
        start = len(other.lines)
        other.send("NICK newcomer")
        other.wait("NICK", start=start)
        other.send("REGISTER * * :long enough password")
        failed = other.wait("FAIL REGISTER", start=start, timeout=60)
        print("\nlocked, REGISTER: " + failed)
        assert "TEMPORARILY_UNAVAILABLE newcomer :The account could not be written" in failed
        assert "database is locked" in host.log_text()
        owner.send("PING :still-served")
        owner.wait("still-served")
        lock.execute("ROLLBACK")
        start = len(other.lines)
        other.send("REGISTER * * :long enough password")
        assert "REGISTER SUCCESS newcomer" in other.wait("REGISTER", start=start, timeout=60)
        owner.close()
        other.close()
    finally:
        lock.close()
        if host:
            host.stop()
