"""A bystander's paced messages measured while one address floods, a connection storm
hits, or slowloris connections pile up; the server's RSS before and after. Used by
tests/interop/test_limits_load.py (which asserts what does not depend on timing) and by
`make bench` (which reports the figures).

The bystanders connect from 127.0.0.1 (the host's own address, exempt from pacing, as the
host's screen is); the attackers from other 127/8 addresses (127.0.0.2 and up), which the
server treats as anyone's, with every limit applied, so one machine can play many hosts."""
import multiprocessing
import os
import socket
import statistics
import threading
import time


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def connect(port, source="127.0.0.1", timeout=5):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    sock.bind((source, 0))
    sock.connect(("127.0.0.1", port))
    return sock


class Line:
    """A registered client reading lines on a thread."""

    def __init__(self, port, nick, source="127.0.0.1"):
        self.sock = connect(port, source)
        self.nick = nick
        self.lines = []
        self.arrivals = []
        self.closed = False
        self.sock.sendall(f"NICK {nick}\r\nUSER {nick} 0 * :{nick}\r\n".encode())
        self.reader = threading.Thread(target=self.read, daemon=True)
        self.reader.start()
        self.wait(lambda l: " 366 " in l, 20)

    def read(self):
        buffer = b""
        self.sock.settimeout(None)
        while True:
            try:
                data = self.sock.recv(65536)
            except OSError:
                data = b""
            if not data:
                self.closed = True
                return
            buffer += data
            now = time.monotonic()
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                text = line.rstrip(b"\r").decode("utf-8", "replace")
                if text.startswith("PING"):
                    self.send("PONG" + text[4:])
                self.lines.append(text)
                self.arrivals.append(now)

    def send(self, line):
        self.sock.sendall((line + "\r\n").encode())

    def wait(self, predicate, timeout):
        deadline = time.monotonic() + timeout
        seen = 0
        while time.monotonic() < deadline:
            while seen < len(self.lines):
                if predicate(self.lines[seen]):
                    return self.lines[seen]
                seen += 1
            time.sleep(0.005)
        raise AssertionError(f"{self.nick}: no matching line; last lines: {self.lines[-5:]}")


def paced_latencies(sender, receiver, tag, count=40, interval=0.1):
    """`count` messages from sender to receiver, one every `interval` s; their latencies in ms."""
    sent = {}
    start = len(receiver.lines)
    for n in range(count):
        sent[n] = time.monotonic()
        sender.send(f"PRIVMSG {receiver.nick} :{tag} {n}")
        time.sleep(interval)
    deadline = time.monotonic() + 30
    got = {}
    while time.monotonic() < deadline and len(got) < count:
        for index in range(start, len(receiver.lines)):
            line = receiver.lines[index]
            marker = f"PRIVMSG {receiver.nick} :{tag} "
            if marker in line:
                n = int(line.split(marker, 1)[1])
                got.setdefault(n, receiver.arrivals[index])
        time.sleep(0.01)
    missing = count - len(got)
    latencies = sorted((got[n] - sent[n]) * 1000 for n in got)
    return latencies, missing


def summary(latencies):
    if not latencies:
        return {"p50_ms": None, "p99_ms": None}
    return {"p50_ms": statistics.median(latencies),
            "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]}


class Attack:
    """Runs `body(stop, stats)` in a process of its own (its own interpreter lock: a busy
    attacker must not slow the bystanders' threads here and look like server latency)."""

    def __init__(self, body):
        context = multiprocessing.get_context("fork")
        self.stop = context.Event()
        self.queue = context.Queue()
        self.stats = {}

        def main(stop, queue):
            # At a lower CPU priority: on a 2-core machine a busy attacker otherwise runs on the
            # server's core too (only the server is pinned) and the scheduler's slices show as
            # server latency; a real attacker's CPU is its own. (It makes fewer connections for it.)
            os.nice(10)
            stats = {}
            body(stop, stats)
            queue.put(stats)
        self.process = context.Process(target=main, args=(self.stop, self.queue), daemon=True)
        self.process.start()

    def end(self):
        self.stop.set()
        try:
            self.stats = self.queue.get(timeout=30)
        except Exception:
            self.stats = {}
        self.process.join(timeout=10)


def flood(port):
    def body(stop, stats):
        sock = connect(port, "127.0.0.2")
        sock.sendall(b"NICK flooder\r\nUSER f 0 * :f\r\nJOIN #lobby\r\n")
        line = b"PRIVMSG #lobby :" + b"x" * 300 + b"\r\n"
        chunk = line * 200
        sent = 0
        sock.settimeout(0.2)
        while not stop.is_set():
            try:
                sent += sock.send(chunk)
            except socket.timeout:
                continue
            except OSError:
                break
        stats["bytes_offered"] = sent
        sock.close()
    return body


def storm(port):
    def body(stop, stats):
        opened = refused = 0
        n = 0
        while not stop.is_set():
            n += 1
            # A few hosts hammering: each gets its 32 new connections per 10 minutes, then ERRORs.
            source = f"127.0.5.{1 + n % 4}"
            try:
                sock = connect(port, source, timeout=2)
                sock.sendall(b"NICK s%d\r\nUSER s 0 * :s\r\n" % n)
                opened += 1
                sock.close()
            except OSError:
                refused += 1
        stats["connections"] = opened
        stats["failed"] = refused
    return body


def slowloris(port, count=1500):
    def body(stop, stats):
        held = []
        for n in range(count):
            if stop.is_set():
                break
            try:
                sock = connect(port, f"127.0.100.{1 + n // 16}", timeout=2)
                sock.sendall(b"NICK sl")
                held.append(sock)
            except OSError:
                stats["refused"] = stats.get("refused", 0) + 1
        stats["held"] = len(held)
        byte = 0
        while not stop.is_set():
            for sock in held:
                try:
                    sock.send(b"o")
                except OSError:
                    pass
            byte += 1
            stop.wait(1)
        closed = 0
        for sock in held:
            sock.setblocking(False)
            try:
                if sock.recv(4096) == b"":
                    closed += 1
            except BlockingIOError:
                pass
            except OSError:
                closed += 1
            sock.close()
        stats["closed_by_server"] = closed
    return body


def list_flood(port, rooms=1000):
    """Many rooms made by ten hosts (100 each), then one more host asking LIST again and again:
    each answer is a long reply, made in steps as its reader takes them."""
    def body(stop, stats):
        makers = []
        for n in range(rooms // 100):
            sock = connect(port, f"127.0.6.{1 + n}", timeout=5)
            sock.sendall(b"NICK maker%d\r\nUSER m 0 * :m\r\n" % n)
            for r in range(100):
                sock.sendall(b"JOIN #room-%d-%d\r\n" % (n, r))
            makers.append(sock)
        sock = connect(port, "127.0.0.2")
        sock.sendall(b"NICK lister\r\nUSER l 0 * :l\r\n")
        sock.settimeout(0.2)
        asked = answered = 0
        buffer = b""
        while not stop.is_set():
            try:
                sock.sendall(b"LIST\r\n")
                asked += 1
                chunk = sock.recv(1 << 20)
                if not chunk:
                    break
                buffer = (buffer + chunk)[-4096:]
                answered += chunk.count(b" 323 ")
            except socket.timeout:
                continue
            except OSError:
                break
        stats["lists_asked"] = asked
        stats["lists_answered"] = answered
        for maker in makers + [sock]:
            maker.close()
    return body


def link_capab(ports):
    """Issue 43, item 1: connections to the link port sending CAPAB without end."""
    def body(stop, stats):
        line = b"CAPAB MODULES :" + b" ".join([b"m_module%05d.so" % i for i in range(900)]) + b"\r\n"
        sent = connections = 0
        while not stop.is_set():
            try:
                sock = connect(ports["link"], "127.0.0.3", timeout=2)
                sock.sendall(b"CAPAB START 1205\r\n")
                connections += 1
                while not stop.is_set():
                    sent += sock.send(line)
            except OSError:
                time.sleep(0.01)
            finally:
                try:
                    sock.close()
                except Exception:
                    pass
        stats["bytes_offered"] = sent
        stats["connections"] = connections
    return body


def link_connections(ports, count=2000):
    """Issue 43, item 2: one address opening connection after connection to the link port."""
    def body(stop, stats):
        held, refused = [], 0
        for _ in range(count):
            if stop.is_set():
                break
            try:
                held.append(connect(ports["link"], "127.0.0.4", timeout=2))
            except OSError:
                refused += 1
        kept = 0
        for sock in held:
            sock.settimeout(0.2)
            try:
                if sock.recv(16).startswith(b"CAPAB"):
                    kept += 1
            except OSError:
                pass
        stats["opened"], stats["kept"], stats["refused"] = len(held), kept, refused
        stop.wait()
        for sock in held:
            sock.close()
    return body


def web_slowloris(ports, addresses=300):
    """Issue 43, item 5: half-sent HTTP requests from many addresses, 16 each."""
    def body(stop, stats):
        held, refused = [], 0
        for n in range(addresses * 16):
            if stop.is_set():
                break
            try:
                sock = connect(ports["web"], f"127.0.{110 + n // 4096}.{1 + (n // 16) % 250}", timeout=2)
                sock.sendall(b"GET / HTTP/1.1\r\nHost: x")
                held.append(sock)
            except OSError:
                refused += 1
        answered = 0
        for sock in held:
            sock.settimeout(0.05)
            try:
                if sock.recv(16).startswith(b"HTTP/1.1 5"):
                    answered += 1
            except OSError:
                pass
        stats["held"], stats["busy_503"], stats["refused"] = len(held) - answered, answered, refused
        stop.wait()
        for sock in held:
            sock.close()
    return body


def upload_stall(ports):
    """Issue 43, item 3: uploads trickling from two addresses, four guests each."""
    def body(stop, stats):
        held, taken, refused = [], 0, 0
        for source in ("127.0.0.5", "127.0.0.6"):
            for n in range(4):
                irc = connect(ports["irc"], source)
                irc.sendall(f"NICK up{source[-1]}{n}\r\nUSER u 0 * :u\r\nVERSION\r\n".encode())
                seen = b""
                while b"soju.im/FILEHOST=" not in seen:
                    chunk = irc.recv(65536)
                    if not chunk:
                        break
                    seen += chunk
                held.append(irc)
                url = seen.split(b"soju.im/FILEHOST=", 1)[1].split(b" ", 1)[0].split(b"\r", 1)[0].decode()
                path = "/" + url.split("/", 3)[3]
                for _ in range(2):
                    sock = connect(ports["web"], source)
                    sock.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {100 << 20}\r\n\r\n".encode() + b"t" * 4200)
                    sock.settimeout(0.3)
                    try:
                        answer = sock.recv(64)
                    except socket.timeout:
                        answer = b""
                    if answer.startswith(b"HTTP/1.1 429"):
                        refused += 1
                    else:
                        taken += 1
                    held.append(sock)
        stats["taken"], stats["refused_429"] = taken, refused
        stop.wait()
        for sock in held:
            sock.close()
    return body


def run(port, pid, phase_messages=40, phases=("flood", "storm", "slowloris"), ports=None):
    """Every phase's bystander latency and the server's RSS; returns a dict of figures."""
    alice = Line(port, "bystanderA")
    bob = Line(port, "bystanderB")
    figures = {"rss_start_kib": rss_kib(pid)}
    base, missing = paced_latencies(alice, bob, "base", phase_messages)
    figures["baseline"] = dict(summary(base), missing=missing)
    bodies = {"flood": flood, "storm": storm, "slowloris": slowloris, "list": list_flood}
    surfaces = {"link_capab": link_capab, "link_connections": link_connections, "web_slowloris": web_slowloris, "upload_stall": upload_stall}
    for name in phases:
        body = surfaces[name](dict(ports or {}, irc=port)) if name in surfaces else bodies[name](port)
        before = rss_kib(pid)
        attack = Attack(body)
        time.sleep(1)
        latencies, missing = paced_latencies(alice, bob, name, phase_messages)
        during = rss_kib(pid)
        attack.end()
        figures[name] = dict(summary(latencies), missing=missing, rss_before_kib=before, rss_during_kib=during, **attack.stats)
        if name == "flood":
            figures[name]["flood_lines_relayed"] = sum(1 for l in bob.lines if "PRIVMSG #lobby :xxx" in l)
    figures["rss_end_kib"] = rss_kib(pid)
    alice.sock.close()
    bob.sock.close()
    return figures


def report(figures):
    rows = ["| phase | bystander p50 ms | p99 ms | lost | server RSS MiB before → during | attacker |", "|---|---|---|---|---|---|"]
    def ms(v):
        return "—" if v is None else f"{v:.2f}"
    base = figures["baseline"]
    rows.append(f"| none | {ms(base['p50_ms'])} | {ms(base['p99_ms'])} | {base['missing']} | {figures['rss_start_kib'] / 1024:.1f} | |")
    for name in ("flood", "storm", "slowloris", "list", "link_capab", "link_connections", "web_slowloris", "upload_stall"):
        if name not in figures:
            continue
        f = figures[name]
        extra = {"flood": lambda: f"{f.get('bytes_offered', 0) / 1e6:.1f} MB offered, {f.get('flood_lines_relayed', 0)} lines relayed",
                 "storm": lambda: f"{f.get('connections', 0)} connections, {f.get('failed', 0)} failed",
                 "slowloris": lambda: f"{f.get('held', 0)} held, {f.get('refused', 0)} refused",
                 "list": lambda: f"{f.get('lists_asked', 0)} LISTs asked while ten hosts make 100 rooms each (paced), {f.get('lists_answered', 0)} answered",
                 "link_capab": lambda: f"endless CAPAB to the link port: {f.get('bytes_offered', 0) / 1e6:.1f} MB offered over {f.get('connections', 0)} connections",
                 "link_connections": lambda: f"link port from one address: {f.get('opened', 0)} opened, {f.get('kept', 0)} kept",
                 "web_slowloris": lambda: f"half-sent HTTP from many addresses: {f.get('held', 0)} held, {f.get('busy_503', 0)} answered 503, {f.get('refused', 0)} refused",
                 "upload_stall": lambda: f"trickling uploads from two addresses: {f.get('taken', 0)} taken, {f.get('refused_429', 0)} refused 429"}[name]()
        rows.append(f"| {name} | {ms(f['p50_ms'])} | {ms(f['p99_ms'])} | {f['missing']} | "
                    f"{f['rss_before_kib'] / 1024:.1f} → {f['rss_during_kib'] / 1024:.1f} | {extra} |")
    rows.append(f"| after | | | | {figures['rss_end_kib'] / 1024:.1f} | |")
    return "\n".join(rows)
