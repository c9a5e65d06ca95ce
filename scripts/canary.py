"""The canary of issue 28 (after RobustIRC's): a recorded session (tests/canary/session.irc)
replayed against the previous release's server and this one, and what every client received
diffed. A line at a time, each followed by a barrier (the sender's PING answered, then every
other client's), so a run is the same each time; times, msgids and versions are masked.

    python3 scripts/canary.py --base REV --new PATH/TO/chat-tui [--session FILE]

The previous release is built from REV in a worktree of its own (.build/canary/REV, kept).
Prints the differences (also kept in .build/canary/diff-REV.txt) for a person to read: a
change meant by this release shows there too. Exit status 1 only when a server died or a
client was cut off during the session."""
import argparse
import difflib
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "interop"))
from load_attacks import Line  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build_base(revision):
    """The previous release's chat-tui, built once into .build/canary/REV."""
    place = os.path.join(ROOT, ".build", "canary", revision)
    binary = os.path.join(place, "build", "debug", "chat-tui")
    if os.path.exists(binary):
        return binary
    source = os.path.join(place, "source")
    if not os.path.exists(source):
        subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", source, revision], check=True)
    print(f"canary: building the previous release ({revision}) in {place}; a few minutes, once", flush=True)
    subprocess.run(["swift", "build", "--package-path", source, "--build-path", os.path.join(place, "build"), "--product", "chat-tui"],
                   check=True)
    return binary


class Client(Line):
    """A connection of the session, reading on a thread (`Line.read`)."""

    def __init__(self, port, name):
        self.name = name
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.lines, self.arrivals, self.closed = [], [], False
        self.quitting = False
        threading.Thread(target=self.read, daemon=True).start()

    def barrier(self, token, timeout=20):
        self.send(f"PING :{token}")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(" PONG " in line and line.rsplit(" ", 1)[-1].lstrip(":") == token for line in list(self.lines)):
                return True
            if self.closed:
                return False
            time.sleep(0.005)
        return False


MASKS = [
    (re.compile(r"time=[0-9T:.\-]+Z"), "time=<time>"),
    (re.compile(r"msgid=[^; ]+"), "msgid=<msgid>"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z"), "<time>"),
    (re.compile(r"\b1\d{9}\b"), "<unix>"),
    (re.compile(r"chat-tui-[0-9][^ ]*"), "<version>"),
    (re.compile(r"timestamp=[^ ]+"), "timestamp=<time>"),
]


def mask(line):
    for pattern, replacement in MASKS:
        line = pattern.sub(replacement, line)
    # A room's names come in no set order: sorted.
    if " 353 " in line and " :" in line:
        head, names = line.rsplit(" :", 1)
        line = head + " :" + " ".join(sorted(names.split()))
    return line


def replay(binary, session):
    """Runs the session against `binary`; returns each client's masked lines and the problems seen."""
    home = tempfile.mkdtemp(prefix="chat-tui-canary-home-")
    data = tempfile.mkdtemp(prefix="chat-tui-canary-data-")
    port = free_port()
    log = open(os.path.join(home, "server.log"), "w")
    server = subprocess.Popen([binary, "--serve", "--headless", "--bind", "127.0.0.1", "--port", str(port), "--tls-port", "0",
                               "--web-port", "0", "--data-dir", data, "--room", "#lobby"],
                              stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ, HOME=home), start_new_session=True)
    problems = []
    clients = {}
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError(f"{binary} did not start")
                time.sleep(0.05)
        for number, (name, line) in enumerate(session):
            if name not in clients:
                clients[name] = Client(port, name)
            clients[name].send(line.encode().decode("unicode_escape"))
            if line.upper().startswith("QUIT"):
                clients[name].quitting = True
            token = f"canary-{number}"
            if not clients[name].barrier(token) and not line.upper().startswith("QUIT"):
                problems.append(f"{name} got no answer after: {line}")
            for other in clients.values():
                if other is not clients[name] and not other.closed and not other.barrier(token + "-all"):
                    problems.append(f"{other.name} got no answer after {name}: {line}")
        if server.poll() is not None:
            problems.append(f"the server exited with status {server.returncode}")
        # Everything answered before the snapshot: a last barrier for those still connected,
        # the end of the stream for those that quit.
        for client in clients.values():
            if not client.closed:
                client.barrier("canary-end")
            deadline = time.monotonic() + 10
            while client.quitting and not client.closed and time.monotonic() < deadline:
                time.sleep(0.005)
    finally:
        # What each client received, taken before the server stops: a reader blocked in recv
        # goes on reading after its socket is closed, and would get the shutdown's ERROR on
        # some runs and not others.
        received = {name: list(client.lines) for name, client in clients.items()}
        for client in clients.values():
            client.sock.close()
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=20)
        log.close()
    transcript = []
    for name, lines in received.items():
        transcript += [f"{name}< {mask(line)}" for line in lines if "canary-" not in line]
    return transcript, problems


def read_session(path):
    session = []
    with open(path, encoding="utf-8") as f:
        for raw in f:
            raw = raw.rstrip("\n")
            if not raw or raw.startswith("#"):
                continue
            name, line = raw.split("> ", 1)
            session.append((name, line))
    return session


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True, help="the previous release's git revision")
    parser.add_argument("--base-binary", help="its chat-tui, already built (instead of building --base)")
    parser.add_argument("--new", required=True, help="this release's chat-tui")
    parser.add_argument("--session", default=os.path.join(ROOT, "tests", "canary", "session.irc"))
    options = parser.parse_args()
    session = read_session(options.session)
    base = os.path.abspath(options.base_binary) if options.base_binary else build_base(options.base)
    old, old_problems = replay(base, session)
    new, new_problems = replay(os.path.abspath(options.new), session)
    diff = list(difflib.unified_diff(old, new, f"previous ({options.base})", "this release", lineterm="", n=1))
    place = os.path.join(ROOT, ".build", "canary", f"diff-{options.base}.txt")
    with open(place, "w") as f:
        f.write("\n".join(diff) + "\n")
    changed = sum(1 for line in diff if line[:1] in "+-" and not line.startswith(("+++", "---")))
    print(f"canary: {len(session)} lines replayed; the clients received {len(old)} lines from the previous release, "
          f"{len(new)} from this one; {changed} differ (all of it in {place})")
    for line in diff[:80]:
        print("  " + line)
    for problem in old_problems:
        print(f"canary: previous release: {problem}")
    for problem in new_problems:
        print(f"canary: this release: {problem}")
    sys.exit(1 if new_problems else 0)


if __name__ == "__main__":
    main()
