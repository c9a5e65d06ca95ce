"""The holes of issue 23, tried as an attacker would against the real server with its default
limits: each function starts what it needs, plays the attack from other 127/8 addresses
(treated like anyone's), measures a bystander where the item is about freezing, and returns
its figures. Used by tests/interop/test_holes.py (which asserts only what does not depend on
timing) and by `make bench` (which reports the figures).

Every server is started with a HOME and data directory of its own and stopped by the caller's
`finally`, even when an assertion fails."""
import os
import resource
import signal
import socket
import sqlite3
import ssl
import subprocess
import tempfile
import threading
import time

from load_attacks import Attack, Line, connect, paced_latencies, rss_kib, summary

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Host:
    """`chat-tui --serve --headless` on a free port with its own home and data directory."""

    def __init__(self, binary, *extra, data=None, preexec=None, wait=True, taskset=None):
        self.data = data or tempfile.mkdtemp(prefix="chat-tui-holes-data-")
        self.home = tempfile.mkdtemp(prefix="chat-tui-holes-home-")
        self.port = free_port()
        self.log_path = os.path.join(self.home, "server.log")
        self.log = open(self.log_path, "w")
        command = [binary, "--serve", "--headless", "--bind", "127.0.0.1", "--port", str(self.port), "--web-port", "0", "--data-dir", self.data]
        if "--tls-port" not in extra:
            command += ["--tls-port", "0"]
        if taskset:
            command = ["taskset", "-c", taskset] + command
        env = dict(os.environ, HOME=self.home)
        # The log through a pipe, written to the file from here: a file-size limit set on the
        # server (the full disk of item 2) must not stop its log.
        self.process = subprocess.Popen(command + list(extra), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                                        preexec_fn=preexec, start_new_session=True)
        self.copier = threading.Thread(target=self.copy_log, daemon=True)
        self.copier.start()
        if wait:
            self.wait_listening()

    def wait_listening(self, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited: {self.log_text()[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("the server did not start listening")

    def copy_log(self):
        for chunk in iter(lambda: self.process.stdout.read1(65536), b""):
            self.log.write(chunk.decode("utf-8", "replace"))
            self.log.flush()

    @property
    def pid(self):
        return self.process.pid

    def log_text(self):
        with open(self.log_path) as f:
            return f.read()

    def wait_log(self, text, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.log_text():
                return
            time.sleep(0.05)
        raise AssertionError(f"not in the log: {text!r}; log ends: {self.log_text()[-1500:]}")

    def stop(self, kill=False):
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL if kill else signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        self.copier.join(timeout=10)
        if not self.log.closed:
            self.log.close()


def seed_events(data, room="#lobby", events=200_000):
    """A room's history as after a day of people coming and going: `events` JOINs and PARTs
    and one message, written straight into the server's database (the server made its tables:
    messages in `history`, the other events in `history_events`)."""
    db = sqlite3.connect(os.path.join(data, "server.db"))
    start = int((time.time() - 3600) * 1000)
    rows = []
    for n in range(events):
        command = "JOIN" if n % 2 == 0 else "PART"
        rows.append((room, ((start + n // 100) << 16) + n % 100, start + n // 100, command, f":u{n % 500}!u@h {command} {room}"))
    middle = events // 2
    rows[middle] = (room, rows[middle][1], rows[middle][2], "PRIVMSG", f":seed!u@h PRIVMSG {room} :the one message")
    db.executemany("INSERT OR IGNORE INTO history VALUES (?, ?, ?, ?, ?)", [r for r in rows if r[3] == "PRIVMSG"])
    db.executemany("INSERT OR IGNORE INTO history_events VALUES (?, ?, ?, ?, ?)", [r for r in rows if r[3] != "PRIVMSG"])
    db.commit()
    db.close()


def history_queries(port, source="127.0.0.2", connections=16):
    """`connections` clients from one address asking CHATHISTORY LATEST #lobby * 100 over and
    over, each as fast as its pacing lets it (a new query when the last batch ended)."""
    def body(stop, stats):
        answered = 0
        socks = []
        for n in range(connections):
            try:
                sock = connect(port, source, timeout=10)
                sock.sendall(b"CAP REQ :batch draft/chathistory\r\nNICK hq%d\r\nUSER h 0 * :h\r\nCAP END\r\n" % n)
                sock.sendall(b"CHATHISTORY LATEST #lobby * 100\r\n" * 4)
                sock.setblocking(False)
                socks.append([sock, b""])
            except OSError:
                pass
        stats["connections"] = len(socks)
        while not stop.is_set():
            progress = False
            for entry in socks:
                try:
                    data = entry[0].recv(65536)
                except BlockingIOError:
                    continue
                except OSError:
                    continue
                if not data:
                    continue
                progress = True
                entry[1] += data
                ends = entry[1].count(b"BATCH -")
                if ends:
                    answered += ends
                    entry[1] = entry[1][entry[1].rfind(b"BATCH -"):]
                    entry[1] = entry[1][entry[1].find(b"\n") + 1:] if b"\n" in entry[1] else b""
                    try:
                        entry[0].send(b"CHATHISTORY LATEST #lobby * 100\r\n" * ends)
                    except OSError:
                        pass
                for line in entry[1].split(b"\n")[:-1]:
                    if line.startswith(b"PING"):
                        entry[0].send(b"PONG" + line[4:].rstrip(b"\r") + b"\r\n")
            if not progress:
                time.sleep(0.002)
        stats["queries_answered"] = answered
        for entry in socks:
            entry[0].close()
    return body


def join_part_flood(port):
    """From loopback (exempt from pacing): JOIN and PART #lobby as fast as the server takes them."""
    def body(stop, stats):
        sock = connect(port, "127.0.0.1", timeout=10)
        sock.sendall(b"NICK churner\r\nUSER c 0 * :c\r\n")
        sock.settimeout(0.2)
        cycles = 0
        reader = threading.Thread(target=lambda: drain(sock, stop), daemon=True)
        reader.start()
        while not stop.is_set():
            try:
                sock.sendall(b"PART #lobby\r\nJOIN #lobby\r\n" * 50)
                cycles += 50
            except socket.timeout:
                continue
            except OSError:
                break
        stats["join_part_cycles"] = cycles
        sock.close()
    return body


def drain(sock, stop):
    while not stop.is_set():
        try:
            if not sock.recv(1 << 16):
                return
        except socket.timeout:
            continue
        except OSError:
            return


def history_freeze(binary, messages=60, taskset=None):
    """Item 1: 200,000 membership events and one message in #lobby; sixteen connections from
    one address querying it, then a JOIN/PART flood from loopback; a bystander pair's paced
    direct messages through each. Returns each phase's latency figures."""
    first = Host(binary)
    data = first.data
    first.stop()
    seed_events(data)
    host = Host(binary, data=data, taskset=taskset)
    figures = {"events": 200_000}
    try:
        alice = Line(host.port, "bystanderA")
        bob = Line(host.port, "bystanderB")
        base, missing = paced_latencies(alice, bob, "base", messages)
        figures["baseline"] = dict(summary(base), missing=missing)
        for name, body in (("history_queries", history_queries(host.port)), ("join_part_flood", join_part_flood(host.port))):
            attack = Attack(body)
            time.sleep(1)
            latencies, missing = paced_latencies(alice, bob, name, messages)
            newcomer = Line(host.port, f"new{name[:6]}")
            newcomer.sock.close()
            attack.end()
            figures[name] = dict(summary(latencies), missing=missing, **attack.stats)
        # The one message is still found among the events.
        reader = Line(host.port, "reader")
        reader.send("CAP REQ :batch draft/chathistory")
        reader.send("CHATHISTORY LATEST #lobby * 100")
        reader.wait(lambda l: "the one message" in l, 20)
        figures["found_the_message"] = True
        for client in (alice, bob, reader):
            client.sock.close()
    finally:
        host.stop()
    return figures


def full_disk(binary, backlog=50):
    """Item 2: the data directory's files may not grow (RLIMIT_FSIZE lowered on the running
    server, as a full disk); a sender keeps sending; storing is then allowed again. Returns
    what was accepted, echoed, refused and stored."""
    host = Host(binary, "--history-backlog", str(backlog))
    figures = {}
    try:
        alice = Line(host.port, "alice")
        alice.send("CAP REQ :echo-message server-time message-tags")
        alice.wait(lambda l: " ACK " in l, 10)
        bob = Line(host.port, "bob")
        for n in range(10):
            alice.send(f"PRIVMSG #lobby :before {n}")
        alice.wait(lambda l: "PRIVMSG #lobby :before 9" in l, 10)
        # Nothing in the data directory may grow past 4 KiB from now on.
        soft, hard = resource.prlimit(host.pid, resource.RLIMIT_FSIZE)
        resource.prlimit(host.pid, resource.RLIMIT_FSIZE, (4096, hard))
        sent = 0
        refused = None
        while sent < 5 * backlog:
            alice.send(f"PRIVMSG #lobby :during {sent}")
            # Delivered to the room, or refused to the sender (ahead of its held echoes).
            mark = f"PRIVMSG #lobby :during {sent}"
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                if any(mark == l.split(" ", 2)[-1] or l.endswith(mark) for l in bob.lines):
                    break
                if any("TEMPORARILY_UNAVAILABLE" in l for l in alice.lines):
                    refused = sent
                    break
                time.sleep(0.005)
            else:
                raise AssertionError(f"message {sent}: neither delivered nor refused")
            if refused is not None:
                break
            sent += 1
        figures["sent_until_refused"] = refused
        host.wait_log("rows not stored yet")
        time.sleep(0.5)
        figures["echoed_while_full"] = sum(1 for l in alice.lines if "PRIVMSG #lobby :during " in l)
        figures["delivered_while_full"] = sum(1 for l in bob.lines if "PRIVMSG #lobby :during " in l)
        # Everything else still works: a bystander's commands are answered.
        bob.send("PING :still-served")
        bob.wait(lambda l: "still-served" in l, 10)
        # Space again: the held echoes come, every one.
        resource.prlimit(host.pid, resource.RLIMIT_FSIZE, (soft, hard))
        accepted = figures["delivered_while_full"]
        alice.wait(lambda l: f"PRIVMSG #lobby :during {accepted - 1}" in l, 30)
        host.wait_log("storing again")
        figures["echoed_after"] = sum(1 for l in alice.lines if "PRIVMSG #lobby :during " in l)
        echoed = [l.split("PRIVMSG #lobby :", 1)[1] for l in alice.lines if "PRIVMSG #lobby :" in l]
        alice.sock.close()
        bob.sock.close()
        host.stop(kill=True)
        db = sqlite3.connect(os.path.join(host.data, "server.db"))
        stored = {row[0].split(" :", 1)[1] for row in db.execute("SELECT line FROM history WHERE command = 'PRIVMSG'")}
        db.close()
        figures["echoed_not_stored"] = [text for text in echoed if text not in stored]
        figures["refused_but_stored"] = f"during {refused}" in stored
    finally:
        host.stop()
    return figures


def unwritable_start(binary):
    """Item 2: a server started where nothing can be written refuses to start, saying why."""
    first = Host(binary)
    data = first.data
    first.stop()

    def small_files():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (16 * 1024, 16 * 1024))
    host = Host(binary, data=data, preexec=small_files, wait=False)
    try:
        code = host.process.wait(timeout=30)
        host.copier.join(timeout=10)
        return {"exit_code": code, "log": host.log_text()}
    finally:
        host.stop()


def silent_connections(binary):
    """Item 3: connections that never register, from ten /24s (16 addresses, 16 each: within
    the per-address limits), past the cap of 2,000; then newcomers from unseen addresses."""
    host = Host(binary)
    figures = {}
    held = []
    try:
        opened = refused = 0
        for block in range(10):
            for address in range(1, 17):
                for _ in range(16):
                    try:
                        sock = connect(host.port, f"127.0.{10 + block}.{address}", timeout=5)
                        held.append(sock)
                        opened += 1
                    except OSError:
                        refused += 1
        figures["silent_opened"] = opened
        figures["refused"] = refused
        # Each newcomer registers (before: EOF at once, for the whole 60 s timeout).
        started = time.monotonic()
        newcomers = 0
        for n in range(5):
            client = Line(host.port, f"newcomer{n}", source=f"127.0.200.{n + 1}")
            newcomers += 1
            client.sock.close()
        figures["newcomers_registered"] = newcomers
        figures["newcomer_seconds"] = (time.monotonic() - started) / newcomers
        closed = 0
        for sock in held:
            sock.setblocking(False)
            try:
                data = sock.recv(4096)
                if data == b"" or data.startswith(b"ERROR"):
                    closed += 1
            except BlockingIOError:
                pass
            except OSError:
                closed += 1
        figures["silent_closed_by_server"] = closed
        figures["rss_kib"] = rss_kib(host.pid)
    finally:
        for sock in held:
            sock.close()
        host.stop()
    return figures


def sasl_plain(account, password):
    import base64
    return base64.b64encode(f"{account}\0{account}\0{password}".encode()).decode()


def sasl_attempt(port, source, account, password, nick):
    """One SASL PLAIN login; the numeric that answered it (903 or 904)."""
    sock = connect(port, source, timeout=20)
    try:
        sock.sendall(f"CAP REQ :sasl\r\nNICK {nick}\r\nUSER u 0 * :u\r\nAUTHENTICATE PLAIN\r\n".encode())
        buffer = b""
        while True:
            data = sock.recv(4096)
            if not data:
                return "closed"
            buffer += data
            if b"AUTHENTICATE +" in buffer:
                buffer = buffer.replace(b"AUTHENTICATE +", b"")
                sock.sendall(f"AUTHENTICATE {sasl_plain(account, password)}\r\n".encode())
            for code in (b" 903 ", b" 904 ", b" 905 ", b" 906 "):
                if code in buffer:
                    return code.decode().strip()
    finally:
        sock.close()


def account_lockout(binary, rounds=26):
    """Item 4: two addresses guess the account's password again and again; the owner, from an
    address of their own and from loopback, logs in meanwhile. Counts the owner's failures."""
    data = tempfile.mkdtemp(prefix="chat-tui-holes-data-")
    home = tempfile.mkdtemp(prefix="chat-tui-holes-home-")
    subprocess.run([binary, "account", "add", "victim", "--password", "right-password", "--data-dir", data],
                   env=dict(os.environ, HOME=home), check=True, capture_output=True, timeout=120)
    host = Host(binary, data=data)
    figures = {"owner_refused": 0, "owner_ok": 0, "guesses": 0}
    try:
        for n in range(rounds):
            for source in ("127.0.0.2", "127.0.0.3"):
                sasl_attempt(host.port, source, "victim", f"guess{n}", f"g{n}x{source[-1]}")
                figures["guesses"] += 1
            source = "127.0.0.4" if n % 2 == 0 else "127.0.0.1"
            if sasl_attempt(host.port, source, "victim", "right-password", f"owner{n}") == "903":
                figures["owner_ok"] += 1
            else:
                figures["owner_refused"] += 1
        figures["guesser_refused_unchecked"] = sasl_attempt(host.port, "127.0.0.2", "victim", "right-password", "gfinal")
    finally:
        host.stop()
    return figures


def tls_handshakes(binary):
    """Item 5: the groups a client may ask for (openssl s_client -groups), and the handshake CPU
    budget per address (set to 1 µs here so the first handshake spends it)."""
    tls_port = free_port()
    host = Host(binary, "--tls-port", str(tls_port), "--tls-handshake-budget", "0.001")
    figures = {}
    try:
        for group in ("X25519", "P-256", "P-384", "ffdhe8192", "ffdhe2048"):
            done = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{tls_port}", "-groups", group, "-brief"],
                                  input="QUIT\r\n", capture_output=True, text=True, timeout=30)
            figures[group] = "Protocol version" in done.stderr + done.stdout
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE

        def handshake(source):
            raw = connect(tls_port, source, timeout=10)
            try:
                with context.wrap_socket(raw) as wrapped:
                    wrapped.sendall(b"QUIT\r\n")
                    return True
            except (ssl.SSLError, OSError):
                return False
        figures["first_from_attacker"] = handshake("127.0.0.2")
        figures["next_from_attacker"] = handshake("127.0.0.2")
        figures["from_elsewhere"] = handshake("127.0.0.3")
        figures["logged"] = "TLS refused: handshakes from 127.0.0.2" in host.log_text()
    finally:
        host.stop()
    return figures


def run_all(binary, taskset=None):
    """Every scenario, for `make bench`; an error in one is reported in its place."""
    results = {}
    for name, run in (("history", lambda: history_freeze(binary, taskset=taskset)), ("full_disk", lambda: full_disk(binary)),
                      ("silent", lambda: silent_connections(binary)), ("lockout", lambda: account_lockout(binary)),
                      ("tls", lambda: tls_handshakes(binary))):
        try:
            results[name] = run()
        except Exception as error:
            results[name] = {"error": str(error)}
    return results


def report(results):
    """The attack section's second table: issue 23's holes, the figure before (from the issue's
    report, the release build of the code before the fix) and now."""
    def ms(value):
        return "—" if value is None else f"{value:.1f}"
    rows = ["| hole | before (issue 23) | now |", "|---|---|---|"]
    h = results.get("history", {})
    if "error" in h:
        rows.append(f"| history queries / JOIN-PART churn | | {h['error']} |")
    else:
        rows.append(f"| 16 connections from one address sending CHATHISTORY LATEST into 200,000 events: bystander p50 / p99 ms, lost | "
                    f"froze: 0 of 297 delivered in 15 s | {ms(h['history_queries']['p50_ms'])} / {ms(h['history_queries']['p99_ms'])}, "
                    f"{h['history_queries']['missing']} lost, {h['history_queries'].get('queries_answered', 0)} queries answered |")
        rows.append(f"| JOIN/PART flood from loopback, history on: bystander (in the room) p50 / p99 ms | p99 2,800–3,800 (history off: 213) | "
                    f"{ms(h['join_part_flood']['p50_ms'])} / {ms(h['join_part_flood']['p99_ms'])}, "
                    f"{h['join_part_flood'].get('join_part_cycles', 0)} cycles |")
        rows.append(f"| baseline, same server: p50 / p99 ms | | {ms(h['baseline']['p50_ms'])} / {ms(h['baseline']['p99_ms'])} |")
    d = results.get("full_disk", {})
    rows.append("| full disk: echoed but not stored / refused past the bound | 3,050 echoed, none stored | " +
                (d["error"] if "error" in d else f"{len(d['echoed_not_stored'])} / refused after {d['sent_until_refused']} held; "
                 f"{d['echoed_after']} echoes released once stored") + " |")
    s = results.get("silent", {})
    rows.append("| 2,560 silent connections from ten /24s: newcomers registered, seconds each | 0 of any (EOF for 60 s) | " +
                (s["error"] if "error" in s else f"{s['newcomers_registered']} of 5, {s['newcomer_seconds']:.2f} s; "
                 f"{s['silent_closed_by_server']} silent ones closed to make room; RSS {s['rss_kib'] / 1024:.1f} MiB") + " |")
    l = results.get("lockout", {})
    rows.append("| two addresses guessing an account's password: owner's correct logins refused | 9 of 26 | " +
                (l["error"] if "error" in l else f"{l['owner_refused']} of {l['owner_ok'] + l['owner_refused']}") + " |")
    t = results.get("tls", {})
    rows.append("| TLS groups accepted; handshake budget per address | ffdhe8192 accepted (177 ms of loop CPU each) | " +
                (t["error"] if "error" in t else ", ".join(g for g in ("X25519", "P-256", "P-384", "ffdhe2048", "ffdhe8192") if t.get(g))
                 + f"; past the budget: {'closed' if not t.get('next_from_attacker') else 'not closed'}") + " |")
    return "\n".join(rows)
