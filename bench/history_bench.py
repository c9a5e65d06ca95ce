"""History figures for `make bench`: messages stored per second and bytes per message, CHATHISTORY
latency and server start-up with 1,000,000 stored messages, and fan-out/DM CPU with history on
against off. Uses run.py's Server and bench helpers."""
import os
import shutil
import socket
import sqlite3
import statistics
import subprocess
import tempfile
import time


def prefill(path, count, rooms=10):
    """`count` messages over `rooms` rooms, in the server's own schema (it creates the rest)."""
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("""CREATE TABLE IF NOT EXISTS history (
        target TEXT NOT NULL, msgid INTEGER NOT NULL, time INTEGER NOT NULL, command TEXT NOT NULL, line TEXT NOT NULL,
        PRIMARY KEY (target, msgid)) WITHOUT ROWID""")
    start_ms = int(time.time() * 1000) - count
    rows = ((f"#room{n % rooms}", (start_ms + n) << 16, start_ms + n, "PRIVMSG",
             f"@account=alice :alice!alice@127.0.0.1 PRIVMSG #room{n % rooms} :stored message number {n} with some text")
            for n in range(count))
    db.executemany("INSERT INTO history VALUES (?, ?, ?, ?, ?)", rows)
    db.commit()
    db.close()


class Client:
    def __init__(self, port, nick):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.buffer = b""
        self.send("CAP REQ :draft/chathistory batch server-time message-tags")
        self.send("CAP END")
        self.send(f"NICK {nick}")
        self.send(f"USER {nick} 0 * :{nick}")
        self.until(lambda l: " 366 " in l)

    def send(self, line):
        self.sock.sendall(line.encode() + b"\r\n")

    def until(self, predicate):
        while True:
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                text = line.decode("utf-8", "replace")
                if predicate(text):
                    return text
            data = self.sock.recv(1 << 20)
            if not data:
                raise RuntimeError("closed")
            self.buffer += data


def fill_client_log(chat_tui, home, network, conversations, per):
    """The client's log under `home` with `conversations` × `per` lines. chat-tui makes the
    schema itself (opening an empty file for `chat-tui search`); the rows go in with sqlite3."""
    path = os.path.join(home, ".local/share/chat-tui/client/history.db")
    open(path, "a").close()
    subprocess.run([chat_tui, "search", "nothing"], env=dict(os.environ, HOME=home), capture_output=True, timeout=60)
    db = sqlite3.connect(path)
    words = ["release", "蛋糕", "meeting", "🎉", "tomorrow", "咖啡", "deploy", "lunch"]
    start = time.time() - conversations * per
    db.executemany("INSERT INTO lines (network, conversation, name, time, kind, sender, text, msgid, own) VALUES (?,?,?,?,?,?,?,?,?)",
                   ((network, f"#room{n % conversations}", f"#room{n % conversations}", start + n, "message", f"user{n % 17}",
                     f"stored line {n} about {words[n % 8]} and {words[(n * 7) % 8]} 中文 text", None, 0)
                    for n in range(conversations * per)))
    # The search index, as the client adds a batch of lines to it (no trigger does).
    db.execute("INSERT INTO lines_fts(rowid, text) SELECT id, text FROM lines")
    db.commit()
    db.close()


def client_store(chat_tui, Server):
    """Time to the first frame with 10 conversations × 10,000 lines in the log (one network, then
    three, each with its own server and its own 10 × 10,000), and `chat-tui search` over 1,000,000."""
    out = {}
    servers = [Server("chat-tui") for _ in range(3)]
    tmux = lambda *a: subprocess.run(["tmux", "-L", "bench-store", *a], capture_output=True, text=True).stdout
    homes = []
    try:
        for label, per, networks in (("empty", 0, 1), ("10x10000", 10000, 1), ("3x10x10000", 10000, 3)):
            home = tempfile.mkdtemp(prefix="bench-home-")
            homes.append(home)
            os.makedirs(os.path.join(home, ".local/share/chat-tui/client"))
            if per:
                for server in servers[:networks]:
                    fill_client_log(chat_tui, home, f"127.0.0.1:{server.port}", 10, per)
            hosts = " ".join(f"--host 127.0.0.1:{server.port}" for server in servers[:networks])
            times = []
            for i in range(5):
                t0 = time.monotonic()
                tmux("new-session", "-d", "-s", f"s{i}", "-x", "100", "-y", "30",
                     f"HOME={home} LANG=C.UTF-8 {chat_tui} {hosts} --nick store{i}")
                while time.monotonic() - t0 < 20 and "│" not in tmux("capture-pane", "-p", "-t", f"s{i}"):
                    time.sleep(0.005)
                times.append((time.monotonic() - t0) * 1000)
                tmux("kill-session", "-t", f"s{i}")
            out[f"first_frame_ms_{label}"] = statistics.median(times)
    finally:
        tmux("kill-server")
        for server in servers:
            server.stop()
        for home in homes:
            shutil.rmtree(home, ignore_errors=True)
    home = tempfile.mkdtemp(prefix="bench-home-")
    os.makedirs(os.path.join(home, ".local/share/chat-tui/client"))
    fill_client_log(chat_tui, home, "127.0.0.1:6667", 10, 100_000)
    out["search"] = {}
    for words in (["release"], ["meeting", "deploy"], ["蛋糕"], ["line 99999"]):
        runs = []
        for _ in range(3):
            t0 = time.monotonic()
            subprocess.run([chat_tui, "search", *words], env=dict(os.environ, HOME=home), capture_output=True, timeout=120)
            runs.append((time.monotonic() - t0) * 1000)
        out["search"][" ".join(words)] = statistics.median(runs)
    shutil.rmtree(home, ignore_errors=True)
    return out


def percentiles(values):
    values = sorted(values)
    return {"p50_ms": statistics.median(values), "p99_ms": values[min(len(values) - 1, int(len(values) * 0.99))]}


def queries(port, count=200):
    client = Client(port, "reader")
    for room in range(10):
        client.send(f"JOIN #room{room}")
    client.send("PING :joined")
    client.until(lambda l: "PONG" in l and "joined" in l)
    latest, before = [], []
    oldest = None
    for n in range(count):
        room = f"#room{n % 10}"
        t = time.monotonic()
        client.send(f"CHATHISTORY LATEST {room} * 100")
        first = None
        while True:
            line = client.until(lambda l: "msgid=" in l or " BATCH -" in l)
            if " BATCH -" in line:
                break
            if first is None:
                first = line.split("msgid=", 1)[1].split(";", 1)[0].split(" ", 1)[0]
        latest.append((time.monotonic() - t) * 1000)
        t = time.monotonic()
        client.send(f"CHATHISTORY BEFORE {room} msgid={first} 100")
        client.until(lambda l: " BATCH -" in l)
        before.append((time.monotonic() - t) * 1000)
    client.sock.close()
    return {"latest": percentiles(latest), "before": percentiles(before)}


def store_rate(server, port, messages=20000):
    """One client floods a room; rows in the database over the seconds the writer took."""
    client = Client(port, "writer")
    start = time.monotonic()
    chunk = "".join(f"PRIVMSG #lobby :stored line {n} with a little text\r\n" for n in range(messages)).encode()
    client.sock.sendall(chunk)
    client.send("PING :flooded")
    client.until(lambda l: "PONG" in l and "flooded" in l)
    handled = time.monotonic()
    path = os.path.join(server.dir, "server.db")
    db = sqlite3.connect(path, timeout=30)
    while True:
        stored = db.execute("SELECT COUNT(*) FROM history WHERE target = '#lobby' AND command = 'PRIVMSG'").fetchone()[0]
        if stored >= messages or time.monotonic() - handled > 30:
            break
        time.sleep(0.05)
    done = time.monotonic()
    db.close()
    client.sock.close()
    sizes = sum(os.path.getsize(os.path.join(server.dir, f)) for f in os.listdir(server.dir) if f.startswith("server.db"))
    return {"stored": stored, "seconds": done - start, "per_second": stored / (done - start), "db_bytes": sizes}


def run(chat_tui, Server, run_scenario, scenarios):
    out = {}
    # Stored per second, bytes per message.
    server = Server("chat-tui")
    try:
        out["store"] = store_rate(server, server.port)
    finally:
        server.stop()
    # 1,000,000 stored: start-up time, then query latency.
    directory = tempfile.mkdtemp(prefix="bench-history-")
    path = os.path.join(directory, "server.db")
    prefill(path, 1_000_000)
    port = socket.socket()
    port.bind(("127.0.0.1", 0))
    number = port.getsockname()[1]
    port.close()
    started = time.monotonic()
    process = subprocess.Popen([chat_tui, "--serve", "--headless", "--bind", "127.0.0.1", "--port", str(number), "--tls-port", "0", "--web-port", "0",
                                "--data-dir", directory, "--limits", "off"], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        while True:
            try:
                socket.create_connection(("127.0.0.1", number), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.005)
        out["startup_ms_1m"] = (time.monotonic() - started) * 1000
        out["queries_1m"] = queries(number)
        out["db_bytes_1m"] = sum(os.path.getsize(os.path.join(directory, f)) for f in os.listdir(directory) if f.startswith("server.db"))
    finally:
        process.terminate()
        process.wait(timeout=10)
    out["client"] = client_store(chat_tui, Server)
    # History on against off: server CPU per million deliveries, medians of three.
    out["on_off"] = {}
    out["on_off_latency"] = {}
    for name, args in scenarios:
        for label, extra in (("on", []), ("off", ["--history-days", "0"])):
            values, latency = [], {"p50_ms": [], "p99_ms": [], "max_ms": []}
            for _ in range(3):
                result = run_scenario("chat-tui", args, extra=extra)
                if result.get("cpu_per_million"):
                    values.append(result["cpu_per_million"])
                for key in latency:
                    if result.get(key) is not None:
                        latency[key].append(result[key])
            out["on_off"].setdefault(name, {})[label] = statistics.median(values) if values else None
            out["on_off_latency"].setdefault(name, {})[label] = {k: statistics.median(v) for k, v in latency.items() if v}
    return out


def report(figures):
    store = figures["store"]
    q = figures["queries_1m"]
    rows = [
        f"- Stored: {store['stored']:,} messages from one flooding client in {store['seconds']:.2f} s, "
        f"{store['per_second']:,.0f} a second end to end (the writer commits in batches; ergo's manual puts its SQLite backend "
        f"at about 1,000 events a second); database {store['db_bytes'] / max(1, store['stored']):.0f} bytes a message (WAL included).",
        f"- With 1,000,000 stored messages ({figures['db_bytes_1m'] / 1e6:.0f} MB): server start-up to listening "
        f"{figures['startup_ms_1m']:.0f} ms; CHATHISTORY LATEST 100 p50/p99 {q['latest']['p50_ms']:.2f}/{q['latest']['p99_ms']:.2f} ms, "
        f"BEFORE 100 {q['before']['p50_ms']:.2f}/{q['before']['p99_ms']:.2f} ms (200 each, over a socket, parsing included).",
        "", "| scenario | CPU s/M history on | off | on ÷ off |", "|---|---|---|---|",
    ]
    for name, values in figures["on_off"].items():
        on, off = values.get("on"), values.get("off")
        ratio = f"{on / off:.2f}" if on and off else "—"
        rows.append(f"| {name} | {on or 0:.3f} | {off or 0:.3f} | {ratio} |")
    paced = {n: v for n, v in figures.get("on_off_latency", {}).items() if "paced" in n}
    if paced:
        rows += ["", "| paced scenario | p50/p99/max ms history on | off |", "|---|---|---|"]
        for name, values in paced.items():
            cell = lambda d: "/".join(f"{d.get(k, 0):.2f}" for k in ("p50_ms", "p99_ms", "max_ms"))
            rows.append(f"| {name} | {cell(values.get('on', {}))} | {cell(values.get('off', {}))} |")
    client = figures.get("client", {})
    if client:
        rows += ["", f"- Client: first frame {client['first_frame_ms_empty']:.0f} ms with an empty log, "
                     f"{client['first_frame_ms_10x10000']:.0f} ms with 10 conversations × 10,000 lines in it, "
                     f"{client.get('first_frame_ms_3x10x10000', float('nan')):.0f} ms with three networks, each 10 × 10,000 in the log (tmux, median of 5).",
                 "- `chat-tui search` over 1,000,000 lines (process start included, at most 1,000 hits, median of 3): "
                 + ", ".join(f"`{q}` {ms:.0f} ms" for q, ms in client["search"].items()) + "."]
    return "\n".join(rows)
