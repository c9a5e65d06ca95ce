#!/usr/bin/env python3
"""`make bench`: our server against ngircd and InspIRCd, and our client against irssi and
WeeChat, on this machine, in one run. Servers are pinned to core 0 and the load generator
(chat-bench) to core 1. Each server scenario runs REPEATS times on a fresh server; the table
gives medians with [min–max]. The figure to compare is server CPU seconds per million
deliveries (each thread's time on a CPU in nanoseconds, from /proc/PID/task/*/schedstat),
which stays stable on a noisy machine. (utime+stime in /proc/PID/stat count 10 ms ticks: a
flood of 50 that costs the server 0.1 s was ±10% from that alone.)
Writes bench/results/latest.md and bench/results/raw/latest.json.
"""
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RELEASE = os.path.join(ROOT, ".build", "release")
CHAT_TUI = os.path.join(RELEASE, "chat-tui")
CHAT_BENCH = os.path.join(RELEASE, "chat-bench")
REPEATS = int(os.environ.get("BENCH_REPEATS", "3"))
CORES = os.cpu_count() or 1
SERVER_CORE = "0"
LOAD_CORE = "1" if CORES > 1 else "0"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def cpu_seconds(pid):
    """The process's CPU time so far, every thread's, to the nanosecond (a thread that ended
    is not counted: the servers' threads live as long as they do)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError, ValueError):
            continue
    return total / 1e9


def status_kib(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


class Server:
    """One fresh server process, pinned to the server core."""

    def __init__(self, kind, tls=False, extra=(), append=""):
        self.kind = kind
        self.append = append
        self.port = free_port()
        self.tls_port = free_port() if tls else None
        self.dir = tempfile.mkdtemp(prefix=f"bench-{kind}-")
        self.log = open(os.path.join(self.dir, "out.log"), "w")
        if kind == "chat-tui":
            # --limits off: no connection limits and no pacing, as ngircd's and InspIRCd's are relaxed.
            command = [CHAT_TUI, "--serve", "--headless", "--bind", "127.0.0.1", "--port", str(self.port),
                       "--sendq", str(64 << 20), "--ping-interval", "600", "--limits", "off", "--data-dir", self.dir,
                       "--tls-port", str(self.tls_port or 0), "--web-port", "0", *extra]
        elif kind == "ngircd":
            command = ["/usr/sbin/ngircd", "-n", "-f", self.config("ngircd.conf.in", "ngircd.conf")]
            if tls:
                # The same kind of certificate ours makes: P-256, self-signed.
                subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                                "-keyout", os.path.join(self.dir, "key.pem"), "-out", os.path.join(self.dir, "cert.pem"),
                                "-days", "2", "-subj", "/CN=irc.ngircd.bench"], check=True, capture_output=True)
                with open(command[-1], "a") as f:
                    f.write(f"[SSL]\n\tCertFile = {self.dir}/cert.pem\n\tKeyFile = {self.dir}/key.pem\n\tPorts = {self.tls_port}\n")
        elif kind == "inspircd":
            command = ["/usr/sbin/inspircd", "--config=" + self.config("inspircd.conf.in", "inspircd.conf"),
                       "--nofork", "--runasroot"]
        else:
            raise ValueError(kind)
        # In its own directory, where a core file of a peer that crashes on exit goes too.
        self.process = subprocess.Popen(["taskset", "-c", SERVER_CORE] + command, stdout=self.log, stderr=subprocess.STDOUT,
                                        start_new_session=True, cwd=self.dir)
        if not wait_port(self.port) or (self.tls_port and not wait_port(self.tls_port)):
            self.stop()
            raise RuntimeError(f"{kind} did not start; see {self.log.name}")
        self.pid = self.find_pid()

    def config(self, template, name):
        with open(os.path.join(ROOT, "bench", template)) as f:
            text = f.read().replace("@PORT@", str(self.port)).replace("@DIR@", self.dir)
        if self.append:
            # Lines for this run (a linked server's name, link port and link block); its own
            # <server> line replaces the template's.
            if "<server " in self.append:
                text = "\n".join(line for line in text.splitlines() if not line.startswith("<server ")) + "\n"
            text += self.append
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def find_pid(self):
        # taskset execs the server, so the pid is the server's own.
        return self.process.pid

    def stop(self):
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=5)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def bench(args, port, timeout=120):
    command = ["taskset", "-c", LOAD_CORE, CHAT_BENCH] + args + ["--port", str(port), "--time-limit", str(timeout - 10)]
    out = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    lines = [l for l in out.stdout.splitlines() if l.startswith("{")]
    if not lines:
        raise RuntimeError(f"chat-bench printed nothing: {out.stderr}")
    return json.loads(lines[-1])


# Registration needs bounded concurrency for ngircd (a listen backlog of 10); InspIRCd
# completes registrations on a once-a-second timer, so it gets many at once, as does ours.
BATCH = {"chat-tui": 500, "ngircd": 64, "inspircd": 1000}

SCENARIOS = [
    # Each joins #lobby, as our server's users do on arrival: every server tells everyone of every arrival.
    ("register 5,000 into one room", lambda k: ["register", "--count", "5000", "--batch", str(BATCH[k]), "--join"]),
    ("fanout flood: 50 in a room, 5 send 2,000 each", lambda k: ["fanout", "--clients", "50", "--senders", "5", "--messages", "2000"]),
    ("fanout flood: 100 in a room, 10 send 10,000 each", lambda k: ["fanout", "--clients", "100", "--senders", "10", "--messages", "10000"]),
    ("fanout flood: 500 in a room, 5 send 5,000 each", lambda k: ["fanout", "--clients", "500", "--senders", "5", "--messages", "5000"]),
    ("fanout paced: 50 in a room, 5 × 100 msg/s for 3 s", lambda k: ["fanout", "--clients", "50", "--senders", "5", "--messages", "300", "--rate", "100"]),
    # A room as real rooms run (issue 48): many senders, each at a human-ish pace.
    ("fanout paced: 100 in a room, 10 × 20 msg/s for 15 s", lambda k: ["fanout", "--clients", "100", "--senders", "10", "--messages", "300", "--rate", "20"]),
    ("dm flood: 200 in pairs, 5,000 each", lambda k: ["dm", "--clients", "200", "--messages", "5000"]),
    ("dm paced: 50 pairs, 20 msg/s each for 3 s", lambda k: ["dm", "--clients", "100", "--messages", "60", "--rate", "20"]),
    ("fanout flood over TLS: 50 in a room, 5 send 2,000 each", lambda k: ["fanout", "--clients", "50", "--senders", "5", "--messages", "2000", "--tls"]),
]
# Scenarios over TLS (InspIRCd's TLS module is not set up here: ngircd is the TLS peer).
TLS_SCENARIOS = {"fanout flood over TLS: 50 in a room, 5 send 2,000 each"}
IDLE = [1000, 5000]
# 5,000 idle connections take ngircd about 30 s to accept 64 at a time; one run of that size
# keeps `make bench` under its ten minutes.
IDLE_REPEATS = {1000: REPEATS, 5000: 1}
# (Our server hands freed heap back to the system every 5 s; the 6 s settle covers that.)
SERVERS = ["chat-tui", "ngircd", "inspircd"]


# The tables run our server as its users do: history on, the default (the peers keep none);
# the history section measures it on against off.
OURS_IN_TABLES = []


def run_scenario(kind, args, tls=False, extra=(), timeout=300, leaving=False):
    if tls and kind == "inspircd":
        return {"error": "not measured over TLS (its TLS module is not set up in the bench)"}
    server = Server(kind, tls=tls, extra=extra)
    try:
        before = cpu_seconds(server.pid)
        result = bench(args(kind), server.tls_port if tls else server.port, timeout=timeout)
        result["cpu_seconds"] = cpu_seconds(server.pid) - before
        result["peak_rss_kib"] = status_kib(server.pid, "VmHWM")
        if leaving:
            result.update(crowd_leaving(server.pid, timeout))
        deliveries = result.get("deliveries") or result.get("registered") or 0
        result["cpu_per_million"] = result["cpu_seconds"] / deliveries * 1e6 if deliveries else None
        return result
    finally:
        server.stop()


def crowd_leaving(pid, timeout):
    """chat-bench has exited, so all its connections closed at once: the server's CPU until it
    is idle again (a second in which no 50 ms used more than 1 ms of CPU), and the wall time
    that took. (CPU is counted to the nanosecond, so an idle server's timers move it a little:
    "no change for a second", right when it was counted in 10 ms ticks, never came, and each
    run waited for its timeout.)"""
    start, cpu = time.monotonic(), cpu_seconds(pid)
    last, busy_cpu, busy_at = cpu, cpu, start
    while time.monotonic() - busy_at < 1 and time.monotonic() - start < timeout:
        time.sleep(0.05)
        now = cpu_seconds(pid)
        if now - last > 0.001:
            busy_cpu, busy_at = now, time.monotonic()
        last = now
    return {"leave_cpu_seconds": busy_cpu - cpu, "leave_seconds": busy_at - start}


def run_idle(kind, count):
    server = Server(kind)
    try:
        # Settled first, as the empty server is measured: ours drops its start-up code pages at
        # its first quiet moment (5 s), which taken after the base made the figure negative.
        time.sleep(7)
        base = status_kib(server.pid, "VmRSS")
        command = ["taskset", "-c", LOAD_CORE, CHAT_BENCH, "idle", "--count", str(count), "--batch", str(BATCH[kind]),
                   "--hold", "9", "--port", str(server.port), "--time-limit", "200"]
        process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        ready = json.loads(process.stdout.readline())
        time.sleep(6)  # every server gets the same time to settle with everyone connected
        rss = status_kib(server.pid, "VmRSS")
        final = json.loads(process.stdout.readline())
        process.wait(timeout=30)
        return {"registered": ready.get("registered", 0), "seconds": final["seconds"],
                "kib_per_connection": (rss - base) / count, "rss_kib": rss, "complete": final["complete"]}
    finally:
        server.stop()


def run_attacks():
    """A bystander's paced messages through a flood, a connection storm and slowloris, against
    our server with its default limits and pacing (tests/interop/load_attacks.py)."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "interop"))
    import load_attacks
    port, link_port, web_port = free_port(), free_port(), free_port()
    directory = tempfile.mkdtemp(prefix="bench-attacks-")
    log = open(os.path.join(directory, "out.log"), "w")
    # The new surfaces too (issue 43): a link port with a block, the web port with uploads.
    process = subprocess.Popen(["taskset", "-c", SERVER_CORE, CHAT_TUI, "--serve", "--headless", "--bind", "127.0.0.1",
                                "--port", str(port), "--tls-port", "0", "--web-port", str(web_port), "--data-dir", directory,
                                "--link-port", str(link_port), "--link", "hub.test", "--link-password", "bench", "--link-tls", "off",
                                "--upload-max-size", "100M"],
                               stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        if not wait_port(port) or not wait_port(web_port):
            return {"error": "the server did not start"}
        return load_attacks.run(port, process.pid, ports={"link": link_port, "web": web_port},
                                phases=("flood", "storm", "slowloris", "list", "link_capab", "link_connections", "web_slowloris", "upload_stall"))
    except Exception as error:
        return {"error": str(error)}
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=10)
        log.close()
        shutil.rmtree(directory, ignore_errors=True)


def median_range(values, fmt):
    values = [v for v in values if v is not None]
    if not values:
        return "—"
    m = statistics.median(values)
    return f"{fmt(m)} [{fmt(min(values))}–{fmt(max(values))}]"


def focus(words):
    """`run.py --only WORDS`: the server scenarios whose names hold WORDS, ours and ngircd's,
    and ours with history on against off; written to bench/results/focus.md (a quick look while
    working; the whole run is `make bench`)."""
    lines = [f"# focus: scenarios with \"{words}\" ({REPEATS} runs each, median [min–max])", ""]
    chosen = [(n, a) for n, a in SCENARIOS if words in n]
    for name, args in chosen:
        lines += [f"## {name}", "", "| figure | ours, history on | ours, history off | ngircd | on ÷ ngircd | on ÷ off |", "|---|---|---|---|---|---|"]
        runs = {}
        for label, kind, extra in (("on", "chat-tui", ()), ("off", "chat-tui", ("--history-days", "0")), ("ngircd", "ngircd", ())):
            runs[label] = []
            for _ in range(REPEATS):
                try:
                    runs[label].append(run_scenario(kind, args, tls=name in TLS_SCENARIOS, extra=extra))
                except Exception as error:
                    runs[label].append({"error": str(error)})
        for label, key, fmt in (("CPU s per million deliveries", "cpu_per_million", "{:.3f}"), ("latency p50 ms", "p50_ms", "{:.2f}"),
                                ("latency p99 ms", "p99_ms", "{:.2f}"), ("latency max ms", "max_ms", "{:.2f}"),
                                ("server peak RSS MiB", "peak_rss_kib", "{:.1f}"), ("readers disconnected", "disconnects", "{:.0f}")):
            scale = 1 / 1024 if key == "peak_rss_kib" else 1
            medians, cells = {}, []
            for label2 in ("on", "off", "ngircd"):
                values = [r.get(key, 0 if key == "disconnects" else None) for r in runs[label2] if "error" not in r]
                values = [v * scale for v in values if v is not None]
                cells.append(median_range(values, lambda v: fmt.format(v)))
                medians[label2] = statistics.median(values) if values else None
            ratio = lambda a, b: f"{medians[a] / medians[b]:.2f}" if medians.get(a) and medians.get(b) else "—"
            lines.append(f"| {label} | " + " | ".join(cells) + f" | {ratio('on', 'ngircd')} | {ratio('on', 'off')} |")
        errors = sorted({f"{l}: {r['error']}" for l, rs in runs.items() for r in rs if "error" in r})
        lines += [""] + [f"- {e}" for e in errors] + [""]
        print("\n".join(lines[-12:]), flush=True)
    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    with open(os.path.join(ROOT, "bench", "results", "focus.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    for tool in (CHAT_TUI, CHAT_BENCH):
        if not os.path.exists(tool):
            sys.exit(f"{tool} is missing: make bench builds it")
    if len(sys.argv) > 2 and sys.argv[1] == "--only":
        return focus(sys.argv[2])
    if sys.argv[1:] == ["--again", "arrivals"]:
        return arrivals_again()
    started = time.monotonic()
    raw = {"servers": {}, "idle": {}, "clients": {}}
    for kind in SERVERS:
        raw["servers"][kind] = {}
        for name, args in SCENARIOS:
            runs = []
            for _ in range(REPEATS):
                try:
                    runs.append(run_scenario(kind, args, tls=name in TLS_SCENARIOS,
                                             extra=OURS_IN_TABLES if kind == "chat-tui" else ()))
                except Exception as error:  # a peer that falls over is a result too
                    runs.append({"error": str(error)})
            raw["servers"][kind][name] = runs
            print(f"{kind:9} {name}: " + ", ".join(
                f"{r.get('cpu_per_million') or 0:.3f} cpu-s/M" if "error" not in r else "error" for r in runs), flush=True)
        raw["idle"][kind] = {}
        for count in IDLE:
            runs = []
            for _ in range(IDLE_REPEATS[count]):
                try:
                    runs.append(run_idle(kind, count))
                except Exception as error:
                    runs.append({"error": str(error)})
            raw["idle"][kind][count] = runs
            print(f"{kind:9} idle {count}: " + ", ".join(
                f"{r.get('kib_per_connection', 0):.1f} KiB" if "error" not in r else "error" for r in runs), flush=True)

    raw["arrivals"] = arrivals()
    raw["empty_rss"] = {kind: [empty_rss(kind) for _ in range(REPEATS)] for kind in SERVERS}

    import history_bench
    try:
        raw["history"] = history_bench.run(CHAT_TUI, Server, run_scenario,
                                           [s for s in SCENARIOS if s[0].startswith(("fanout flood: 50 ", "fanout flood: 100 ", "dm flood", "fanout paced: 100 "))])
    except Exception as error:
        raw["history"] = {"error": str(error)}
    print(f"history: {raw['history'].get('error') or 'done'}", flush=True)
    import link_bench
    try:
        raw["links"] = link_bench.run(Server, bench, cpu_seconds, CHAT_BENCH, LOAD_CORE, REPEATS)
    except Exception as error:
        raw["links"] = {"error": str(error)}
    import web_bench
    try:
        raw["web"] = web_bench.run(Server, cpu_seconds, LOAD_CORE, REPEATS)
    except Exception as error:
        raw["web"] = {"error": str(error)}
    raw["attacks"] = run_attacks()
    print(f"attacks: {raw['attacks'].get('error') or 'done'}", flush=True)
    sys.path.insert(0, os.path.join(ROOT, "tests", "interop"))
    import hole_attacks
    raw["holes"] = hole_attacks.run_all(CHAT_TUI, taskset=SERVER_CORE)
    print("holes: done", flush=True)

    import client_bench
    raw["clients"] = client_bench.run_all(CHAT_TUI, CHAT_BENCH, Server)
    # The chat screen paging back: one PgUp (the key and the whole screen drawn) from the bottom
    # of 4,096 lines to 3,000 lines up, three runs.
    raw["pageup"] = []
    for _ in range(REPEATS):
        out = subprocess.run(["taskset", "-c", SERVER_CORE, CHAT_BENCH, "pageup", "--messages", "4096"], capture_output=True, text=True, timeout=300)
        try:
            raw["pageup"].append(json.loads(out.stdout.strip().splitlines()[-1]))
        except Exception as error:
            raw["pageup"].append({"error": f"{error}: {out.stderr[-300:]}"})
    print("pageup: " + ", ".join(f"{r.get('deep_ms', 0):.1f} ms" if "error" not in r else "error" for r in raw["pageup"]), flush=True)

    raw["elapsed_seconds"] = time.monotonic() - started
    os.makedirs(os.path.join(ROOT, "bench", "results", "raw"), exist_ok=True)
    with open(os.path.join(ROOT, "bench", "results", "raw", "latest.json"), "w") as f:
        json.dump(raw, f, indent=1, default=str)
    report = render(raw)
    with open(os.path.join(ROOT, "bench", "results", "latest.md"), "w") as f:
        f.write(report)
    print(report)


def arrivals():
    """A crowd arriving: 10,000 registrations into the room everyone joins, each arrival told to
    everyone already there (ours only: the peers have no such room); then the crowd leaving."""
    runs = []
    for _ in range(REPEATS):
        try:
            runs.append(run_scenario("chat-tui", lambda k: ["register", "--count", "10000", "--batch", "500"],
                                     extra=OURS_IN_TABLES, timeout=600, leaving=True))
        except Exception as error:
            runs.append({"error": str(error)})
    print("arrivals 10,000: " + ", ".join(f"{r.get('seconds', 0):.1f} s" if "error" not in r else "error" for r in runs), flush=True)
    return runs


def arrivals_again():
    """`run.py --again arrivals`: the arrivals measured again into the last whole run's raw
    figures, and its report written again (after a fix to how that section measures; the
    report says so)."""
    path = os.path.join(ROOT, "bench", "results", "raw", "latest.json")
    with open(path) as f:
        raw = json.load(f)
    # JSON keeps keys as strings: the idle counts are numbers again.
    raw["idle"] = {kind: {int(count): runs for count, runs in counts.items()} for kind, counts in raw.get("idle", {}).items()}
    raw["arrivals"] = arrivals()
    raw["arrivals_again"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    with open(path, "w") as f:
        json.dump(raw, f, indent=1, default=str)
    with open(os.path.join(ROOT, "bench", "results", "latest.md"), "w") as f:
        f.write(render(raw))


def empty_rss(kind):
    """RSS of a server nobody has connected to, settled (7 s: ours drops its start-up code pages
    at its first quiet trim, 5 s in); then after one client's session, which brings back the
    code a session runs."""
    server = Server(kind, extra=OURS_IN_TABLES if kind == "chat-tui" else ())
    try:
        time.sleep(7)
        out = {"rss_kib": status_kib(server.pid, "VmRSS"), "anon_kib": status_kib(server.pid, "RssAnon"),
               "file_kib": status_kib(server.pid, "RssFile")}
        try:
            session_once(server.port)
        except OSError:
            return out
        time.sleep(1)
        out["after_session_kib"] = status_kib(server.pid, "VmRSS")
        return out
    finally:
        server.stop()


def session_once(port):
    """Registers, joins a room, says a line and quits."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
        client.sendall(b"NICK once\r\nUSER once 0 * :once\r\nJOIN #room\r\nPRIVMSG #room :hello\r\nPING :done\r\n")
        seen = b""
        while b"PONG" not in seen:
            data = client.recv(65536)
            if not data:
                break
            seen += data
        client.sendall(b"QUIT :bye\r\n")


def render(raw):
    out = ["# chat-tui benchmark results", "",
           f"Machine: {CORES} cores; servers pinned to core {SERVER_CORE}, load generator to core {LOAD_CORE}. "
           f"{REPEATS} runs per figure on a fresh server each time: median [min–max]. "
           f"Run took {raw['elapsed_seconds']:.0f} s.", ""]
    servers = SERVERS
    metrics = [
        ("server CPU s per million deliveries (registrations)", lambda r: r.get("cpu_per_million"), lambda v: f"{v:.3f}", True),
        ("deliveries (or registrations) per second", lambda r: r.get("per_second"), lambda v: f"{v:,.0f}", False),
        ("latency p50 ms", lambda r: r.get("p50_ms"), lambda v: f"{v:.2f}", True),
        ("latency p99 ms", lambda r: r.get("p99_ms"), lambda v: f"{v:.2f}", True),
        ("latency max ms", lambda r: r.get("max_ms"), lambda v: f"{v:.2f}", True),
        ("server peak RSS MiB", lambda r: r.get("peak_rss_kib", 0) / 1024, lambda v: f"{v:.1f}", True),
        # Readers the server cut off mid-run (chat-bench counts every connection that closed).
        ("readers disconnected", lambda r: r.get("disconnects", 0), lambda v: f"{v:.0f}", True),
    ]
    for name, _ in SCENARIOS:
        out += [f"## {name}", "", "| figure | " + " | ".join(servers) + " | ours ÷ ngircd | ours ÷ InspIRCd |",
                "|---|" + "---|" * (len(servers) + 2)]
        for label, get, fmt, lower_better in metrics:
            cells, medians = [], {}
            for kind in servers:
                runs = [r for r in raw["servers"][kind][name] if "error" not in r]
                values = [get(r) for r in runs if get(r) is not None]
                if name.startswith("register") and "latency" in label:
                    values = []
                cells.append(median_range(values, fmt))
                medians[kind] = statistics.median(values) if values else None
            ratios = []
            for peer in ("ngircd", "inspircd"):
                if medians.get("chat-tui") and medians.get(peer):
                    ratios.append(f"{medians['chat-tui'] / medians[peer]:.2f}")
                else:
                    ratios.append("—")
            out.append(f"| {label} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
        notes = []
        for kind in servers:
            for r in raw["servers"][kind][name]:
                if "error" in r:
                    notes.append(f"{kind}: {r['error']}")
                elif not r.get("complete", True):
                    notes.append(f"{kind}: incomplete — {r.get('deliveries', r.get('registered'))} of {r.get('expected')}, "
                                 f"{r.get('disconnects', 0)} disconnects, {r.get('duplicates', 0)} duplicates, "
                                 f"{r.get('out_of_order', 0)} out of order")
        out += [""] + [f"- {n}" for n in sorted(set(notes))] + ([""] if notes else [])
    out += ["## idle registered connections", "",
            "Runs: " + ", ".join(f"{c:,}: {IDLE_REPEATS[c]}" for c in IDLE) + ".", "",
            "| connections | figure | " + " | ".join(servers) + " | ours ÷ ngircd | ours ÷ InspIRCd |", "|---|---|" + "---|" * (len(servers) + 2)]
    for count in IDLE:
        for label, key, fmt in (("server KiB per connection", "kib_per_connection", lambda v: f"{v:.2f}"),
                                ("seconds to connect all", "seconds", lambda v: f"{v:.2f}")):
            cells, medians = [], {}
            for kind in servers:
                values = [r[key] for r in raw["idle"][kind][count] if "error" not in r]
                cells.append(median_range(values, fmt))
                medians[kind] = statistics.median(values) if values else None
            ratios = [f"{medians['chat-tui'] / medians[p]:.2f}" if medians.get("chat-tui") and medians.get(p) else "—"
                      for p in ("ngircd", "inspircd")]
            out.append(f"| {count:,} | {label} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
    out += ["", "In `register` every client joins #lobby (our server puts it there on arrival; the peers' clients "
            "send JOIN, `chat-bench --join`), so all three servers announce each arrival to everyone already there "
            "(N²/2 JOIN lines).", ""]
    empty = raw.get("empty_rss", {})
    if empty:
        out += ["## an empty server", "", "| figure | " + " | ".join(servers) + " | ours ÷ ngircd | ours ÷ InspIRCd |",
                "|---|" + "---|" * (len(servers) + 2)]
        for label, key in (("RSS MiB, settled (7 s)", "rss_kib"), ("of it file-backed (code, libraries) MiB", "file_kib"),
                           ("of it anonymous (heap, stacks) MiB", "anon_kib"), ("RSS MiB after one client's session", "after_session_kib")):
            medians = {k: statistics.median([r[key] / 1024 for r in empty[k] if key in r]) for k in servers if any(key in r for r in empty.get(k, []))}
            cells = [median_range([r[key] / 1024 for r in empty.get(k, []) if key in r], lambda v: f"{v:.1f}") for k in servers]
            ratios = [f"{medians['chat-tui'] / medians[p]:.2f}" if medians.get("chat-tui") and medians.get(p) else "—" for p in ("ngircd", "inspircd")]
            out.append(f"| {label} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
        out += [""]
    arrivals = [r for r in raw.get("arrivals", []) if "error" not in r]
    if arrivals:
        out += ["## a crowd arriving: 10,000 registrations into #lobby (ours)", "",
                "Each arrival is told to everyone already in the room (50 million JOIN lines in all)."
                + (f" Measured again on {raw['arrivals_again']} (`run.py --again arrivals`), after a fix to when the crowd's leaving counts as over." if raw.get("arrivals_again") else ""), "",
                "| figure | chat-tui |", "|---|---|",
                f"| seconds, first connect to last welcome | {median_range([r['seconds'] for r in arrivals], lambda v: f'{v:.1f}')} |",
                f"| server CPU ms per registration | {median_range([r['cpu_seconds'] / max(1, r['registered']) * 1000 for r in arrivals], lambda v: f'{v:.2f}')} |",
                f"| server peak RSS MiB | {median_range([r['peak_rss_kib'] / 1024 for r in arrivals], lambda v: f'{v:.1f}')} |",
                f"| the crowd leaving at once (chat-bench exits): seconds until the server is idle | {median_range([r.get('leave_seconds', 0) for r in arrivals], lambda v: f'{v:.1f}')} |",
                f"| ... its server CPU seconds (each QUIT told to everyone still there) | {median_range([r.get('leave_cpu_seconds', 0) for r in arrivals], lambda v: f'{v:.1f}')} |",
                f"| all registered | {', '.join('yes' if r.get('complete') else 'no' for r in arrivals)} |", ""]
    history = raw.get("history", {})
    if history:
        import history_bench
        out += ["## history", "",
                "Our server keeps history by default, and the tables above ran it so, as its users do (the peers keep none). Here it is measured on its own, and on against off.", ""]
        out += [history["error"]] if "error" in history else [history_bench.report(history)]
        out += [""]
    links = raw.get("links", {})
    if links:
        import link_bench
        out += ["## linked servers", "",
                "Two servers linked on loopback (plain links), both pinned to the server core: ours (history off) "
                "against two InspIRCd 3.15; and a fresh link receiving a node's burst.", ""]
        out += [links["error"]] if "error" in links else [link_bench.report(links)]
        out += [""]
    web = raw.get("web", {})
    if web:
        import web_bench
        out += ["## the web port: IRC over WebSocket against TCP, and uploads through the host", ""]
        out += [web["error"]] if "error" in web else [web_bench.report(web)]
        out += [""]
    attacks = raw.get("attacks", {})
    if attacks:
        sys.path.insert(0, os.path.join(ROOT, "tests", "interop"))
        import load_attacks
        out += ["## a bystander through a flood, a connection storm, slowloris, a LIST flood, and the link port, web port and uploads under attack", "",
                "Our server with its default limits (a burst of 20 lines then 4 a second; 16 connections and 32 new per "
                "10 minutes per address); two bystanders on 127.0.0.1 exchange 40 messages, one every 100 ms, in each phase; "
                "the attackers come from other 127/8 addresses (127.0.0.2 and up), every limit applied to them; in the LIST phase ten hosts make 100 rooms each while one more lists them again and again. One run.", ""]
        out += [attacks["error"]] if "error" in attacks else [load_attacks.report(attacks)]
        out += [""]
    holes = raw.get("holes", {})
    if holes:
        sys.path.insert(0, os.path.join(ROOT, "tests", "interop"))
        import hole_attacks
        out += ["## the holes of issue 23, tried again", "",
                "Each as the attacker in the issue played it, from other 127/8 addresses, against the release server "
                "with its default limits (tests/interop/hole_attacks.py; the before column is the issue's report). One run.", ""]
        out += [hole_attacks.report(holes), ""]
    out += client_section(raw["clients"])
    pages = [r for r in raw.get("pageup", []) if "error" not in r]
    if pages:
        out += ["## the chat screen paging back", "",
                "One PgUp applied and the whole 120×40 screen drawn, page by page from the bottom of a room of 4,096 lines "
                "(mixed ASCII, Chinese, emoji; 44 members) to 3,000 lines up, as a reader holding PgUp does; chat-bench pageup, "
                "pinned to the server core. Before issue 46: 2.5 ms at the bottom, 113 ms 3,000 lines up.", "",
                "| figure | chat-tui |", "|---|---|",
                f"| ms a page, first five pages (median) | {median_range([r['bottom_ms'] for r in pages], lambda v: f'{v:.2f}')} |",
                f"| ms a page, 3,000 lines up (median of the last five) | {median_range([r['deep_ms'] for r in pages], lambda v: f'{v:.2f}')} |",
                f"| slowest page, ms | {median_range([r['max_ms'] for r in pages], lambda v: f'{v:.2f}')} |", ""]
    return "\n".join(out) + "\n"


def client_section(clients):
    if not clients:
        return []
    out = ["## clients receiving a flood", "",
           clients.get("description", ""), "",
           "| client | CPU s | peak RSS MiB | seconds until the last message is shown | CPU ÷ chat-tui screen |", "|---|---|---|---|---|"]
    base = clients.get("results", {}).get("chat-tui (screen, tmux)", {}).get("cpu_seconds")
    for name, r in clients.get("results", {}).items():
        if "error" in r:
            out.append(f"| {name} | error: {r['error']} | | | |")
            continue
        ratio = f"{r['cpu_seconds'] / base:.2f}" if base else "—"
        out.append(f"| {name} | {r['cpu_seconds']:.2f} | {r['peak_rss_kib'] / 1024:.1f} | {r['shown_after']:.2f} | {ratio} |")
    for key, label in (("startup_ms", "chat-tui start-up to first drawn frame (tmux, median of 5)"),):
        if key in clients:
            out += ["", f"- {label}: {clients[key]:.0f} ms"]
    return out + [""]


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
