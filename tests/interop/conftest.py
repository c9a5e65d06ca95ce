"""Shared fixtures: the real chat-tui binary hosting a room on a free loopback port."""
import os
import socket
import subprocess
import tempfile
import time

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# Every chat-tui the tests start writes its config, log and known servers under a home of its
# own, never the real one.
os.environ["HOME"] = tempfile.mkdtemp(prefix="chat-tui-home-")
os.environ.pop("XDG_CONFIG_HOME", None)
BINARY = os.path.join(ROOT, ".build", "debug", "chat-tui")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port}")


class Server:
    def __init__(self, *extra):
        if not os.path.exists(BINARY):
            raise RuntimeError(f"{BINARY} is missing: run `swift build` first (make test does)")
        self.port = free_port()
        self.log_path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"chat-tui-server-{self.port}.log")
        self.log = open(self.log_path, "w")
        # TLS only where a test asks for it (`--tls-port`): every server would want 6697 otherwise.
        if "--tls-port" not in extra:
            extra = ("--tls-port", "0", *extra)
        # Likewise the web port (8097 by default).
        if "--web-port" not in extra:
            extra = ("--web-port", "0", *extra)
        # The account database (and any certificate) in a directory of its own, not in $HOME.
        if "--data-dir" not in extra:
            extra = ("--data-dir", tempfile.mkdtemp(prefix="chat-tui-data-"), *extra)
        self.process = subprocess.Popen(
            [BINARY, "--serve", "--headless", "--bind", "127.0.0.1", "--port", str(self.port), *extra],
            stdout=self.log, stderr=subprocess.STDOUT)
        wait_for_port(self.port)

    def log_text(self):
        self.log.flush()
        with open(self.log_path) as f:
            return f.read()

    def stop(self):
        stop_process(self.process)
        self.log.close()


@pytest.fixture
def server():
    s = Server()
    yield s
    s.stop()


class RawClient:
    """A bare-socket IRC client: sends lines, waits for lines."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.buffer = b""

    def send(self, line):
        self.sock.sendall(line.encode() + b"\r\n")

    def lines(self, timeout=5.0):
        deadline = time.monotonic() + timeout
        while True:
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                yield line.rstrip(b"\r").decode("utf-8", "replace")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            self.sock.settimeout(remaining)
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                return
            if not data:
                return
            self.buffer += data

    def wait_for(self, predicate, timeout=5.0):
        seen = []
        for line in self.lines(timeout):
            seen.append(line)
            if predicate(line):
                return line
        raise AssertionError("no matching line; saw:\n" + "\n".join(seen))

    def register(self, nick):
        self.send(f"NICK {nick}")
        self.send(f"USER {nick} 0 * :{nick}")
        self.wait_for(lambda l: " 366 " in l)

    def close(self):
        self.sock.close()


def sha256(path):
    """The SHA-256 of a file, hex."""
    import hashlib
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def wait_for(predicate, timeout, what, shows):
    """Polls `predicate` until it holds; past the deadline fails with what `shows()` returns."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}; the screen shows:\n" + shows())


class Tmux:
    """A tmux server of a test's own (its socket name) and the window a test types into and reads."""

    def __init__(self, socket_name, target):
        self.socket_name = socket_name
        self.target = target

    def run(self, *args):
        return subprocess.run(["tmux", "-u", "-L", self.socket_name, *args], check=True, capture_output=True, text=True).stdout

    def screen(self):
        return self.run("capture-pane", "-p", "-J", "-t", self.target)

    def wait(self, predicate, what, timeout=20):
        """The screen once `predicate` holds for it; past the deadline, fails showing it."""
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            text = self.screen()
            if predicate(text):
                return text
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what}; {self.target} shows:\n{text}")

    def type(self, line):
        """A line typed and Enter pressed."""
        self.run("send-keys", "-t", self.target, "-l", line)
        self.run("send-keys", "-t", self.target, "Enter")


def irssi_sasl_home(home, port, sasl_user, password, nick):
    """An irssi home whose one server (TLS, not verified) logs in with SASL PLAIN as `sasl_user`."""
    home.mkdir()
    (home / "config").write_text(f"""
servers = (
  {{ address = "127.0.0.1"; chatnet = "room"; port = "{port}"; use_tls = "yes"; tls_verify = "no"; autoconnect = "yes"; }}
);
chatnets = {{ room = {{ type = "IRC"; sasl_mechanism = "PLAIN"; sasl_username = "{sasl_user}"; sasl_password = "{password}"; }}; }};
settings = {{ core = {{ nick = "{nick}"; user_name = "{nick}"; real_name = "{nick.capitalize()}"; }}; }};
""")
    return home


def weechat_sasl_command(home, port, nick, username, sasl_user, password):
    """The command line of a WeeChat (in `home`) that connects over TLS, not verified, and logs in with SASL PLAIN."""
    import shlex
    home.mkdir()
    startup = ";".join([
        # WeeChat 3.8 still calls TLS "ssl" (4.0 renamed the options).
        f"/server add room 127.0.0.1/{port} -ssl -nicks={nick} -username={username}",
        "/set irc.server.room.ssl_verify off",
        "/set irc.server.room.sasl_mechanism plain",
        f"/set irc.server.room.sasl_username {sasl_user}",
        f"/set irc.server.room.sasl_password {password}",
        "/connect room",
    ])
    return f"LANG=C.UTF-8 weechat-curses --dir {shlex.quote(str(home))} -r {shlex.quote(startup)}"


def end_tmux(socket_name):
    """Ends a test's tmux server and removes its socket file (kill-server leaves it behind)."""
    subprocess.run(["tmux", "-L", socket_name, "kill-server"], capture_output=True)
    path = os.path.join(os.environ.get("TMUX_TMPDIR", "/tmp"), f"tmux-{os.getuid()}", socket_name)
    if os.path.exists(path):
        os.unlink(path)


def stop_process(process, grace=5):
    """Ends a process a test started: SIGTERM, then SIGKILL after `grace` seconds, reaped either way."""
    process.terminate()
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
