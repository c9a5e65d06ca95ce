"""The client half of `make bench`: one sender floods 10 rooms × 10,000 messages (mixed
ASCII, Chinese, emoji) from our server to each client in turn; we measure the client's CPU
seconds and peak RSS, and how long until the last message is shown."""
import os
import shutil
import subprocess
import tempfile
import time

MESSAGES = int(os.environ.get("BENCH_CLIENT_MESSAGES", "100000"))
ROOMS = 10
TMUX = ["tmux", "-u", "-L", f"chat-tui-bench-{os.getpid()}"]


def tmux(*args):
    return subprocess.run(TMUX + list(args), capture_output=True, text=True).stdout


def pid_of(pattern):
    out = subprocess.run(["pgrep", "-n", "-f", pattern], capture_output=True, text=True).stdout.split()
    return int(out[0]) if out else None


def cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def hwm(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def wait(predicate, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def run_client(name, server, chat_bench, start, shown, pattern, nick, timeout=240):
    """Starts a client, floods it, returns its CPU, peak RSS and time to show the last message."""
    start()
    if not wait(lambda: pid_of(pattern) is not None, 10):
        return {"error": "did not start"}
    pid = pid_of(pattern)
    time.sleep(2)  # registered and joined
    before = cpu(pid)
    flood_started = time.monotonic()
    flood = subprocess.Popen(["taskset", "-c", "1", chat_bench, "flood", "--messages", str(MESSAGES), "--rooms", str(ROOMS),
                              "--target", nick, "--prefix", "flooder", "--port", str(server.port), "--time-limit", str(timeout)],
                             stdout=subprocess.PIPE, text=True)
    ok = wait(shown, timeout)
    shown_after = time.monotonic() - flood_started
    flood.wait(timeout=timeout)
    result = {"cpu_seconds": cpu(pid) - before, "peak_rss_kib": hwm(pid), "shown_after": shown_after}
    if not ok:
        result = {"error": f"last message not shown within {timeout} s"}
    return result


def run_all(chat_tui, chat_bench, Server):
    results = {}
    rooms = ",".join(f"#r{i}" for i in range(ROOMS))
    work = tempfile.mkdtemp(prefix="bench-clients-")
    env = "LANG=C.UTF-8 TERM=xterm-256color"

    def fresh_server():
        return Server("chat-tui")

    # (a) our chat screen in tmux: as it starts by default (4,096 lines kept per conversation,
    # as many as WeeChat keeps by default: weechat.history.max_buffer_lines_number), then with
    # the earlier default of 10,000. Each with its own HOME: a log left by an earlier run would
    # be restored at start.
    for label, extra in (("chat-tui (screen, tmux)", ""), ("chat-tui (screen, --scrollback 10000)", " --scrollback 10000")):
        server = fresh_server()
        home = tempfile.mkdtemp(prefix="home-", dir=work)
        try:
            results[label] = run_client(
                "screen", server, chat_bench,
                lambda: tmux("new-session", "-d", "-s", "ui", "-x", "120", "-y", "40",
                             f"{env} HOME={home} taskset -c 0 {chat_tui} --host 127.0.0.1 --port {server.port} --nick benchui --join '{rooms}' --bell off{extra}"),
                lambda: "FLOOD-END-MARKER" in tmux("capture-pane", "-p", "-t", "ui"),
                f"^{chat_tui} --host 127.0.0.1 --port {server.port} --nick benchui", "benchui")
        finally:
            tmux("kill-server")
            server.stop()

    # (b) our line mode
    server = fresh_server()
    out_path = os.path.join(work, "lines.out")
    try:
        with open(out_path, "w") as out:
            holder = {}

            def start_lines():
                holder["p"] = subprocess.Popen(["taskset", "-c", "0", chat_tui, "--host", "127.0.0.1", "--port", str(server.port),
                                                "--nick", "benchlines", "--join", rooms, "--lines"],
                                               stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT,
                                               env=dict(os.environ, HOME=tempfile.mkdtemp(prefix="home-", dir=work)))

            def lines_shown():
                with open(out_path, "rb") as f:
                    f.seek(max(0, os.path.getsize(out_path) - 4096))
                    return b"FLOOD-END-MARKER" in f.read()

            results["chat-tui --lines"] = run_client("lines", server, chat_bench, start_lines, lines_shown,
                                                     f"^{chat_tui} --host 127.0.0.1 --port {server.port} --nick benchlines", "benchlines")
            holder["p"].kill()
    finally:
        server.stop()

    # (c) irssi in tmux
    if shutil.which("irssi"):
        server = fresh_server()
        home = os.path.join(work, "irssi")
        os.makedirs(home, exist_ok=True)
        try:
            def start_irssi():
                tmux("new-session", "-d", "-s", "irssi", "-x", "120", "-y", "40",
                     f"{env} taskset -c 0 irssi --home={home} -c 127.0.0.1 -p {server.port} -n benchirssi")
                time.sleep(1.5)
                tmux("send-keys", "-t", "irssi", f"/join {rooms}", "Enter")
            results["irssi (tmux)"] = run_client(
                "irssi", server, chat_bench, start_irssi,
                lambda: "FLOOD-END-MARKER" in tmux("capture-pane", "-p", "-t", "irssi"),
                f"^irssi --home={home}", "benchirssi")
        finally:
            tmux("kill-server")
            server.stop()

    # (d) WeeChat headless, its logger flushing at once so the log shows when it has the message
    if shutil.which("weechat-headless"):
        server = fresh_server()
        home = os.path.join(work, "weechat")
        os.makedirs(home, exist_ok=True)
        log_dir = os.path.join(home, "logs")
        commands = ";".join([
            "/set logger.file.flush_delay 0", f"/set logger.file.path {log_dir}",
            f"/server add bench 127.0.0.1/{server.port}", "/set irc.server.bench.nicks benchwee",
            f"/set irc.server.bench.autojoin {rooms}", "/connect bench"])
        proc = {}
        try:
            def start_weechat():
                proc["p"] = subprocess.Popen(["taskset", "-c", "0", "weechat-headless", "--dir", home, "-r", commands],
                                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)

            def weechat_shown():
                if not os.path.isdir(log_dir):
                    return False
                for name in os.listdir(log_dir):
                    if "r9" in name:
                        with open(os.path.join(log_dir, name), "rb") as f:
                            f.seek(max(0, os.path.getsize(os.path.join(log_dir, name)) - 4096))
                            if b"FLOOD-END-MARKER" in f.read():
                                return True
                return False
            results["WeeChat (headless)"] = run_client("weechat", server, chat_bench, start_weechat, weechat_shown,
                                                       f"^weechat-headless --dir {home}", "benchwee")
        finally:
            if "p" in proc:
                proc["p"].kill()
            server.stop()

    # chat-tui start-up to the first drawn frame
    server = fresh_server()
    startups = []
    try:
        for i in range(5):
            session = f"start{i}"
            t0 = time.monotonic()
            tmux("new-session", "-d", "-s", session, "-x", "100", "-y", "30",
                 f"{env} HOME={work} {chat_tui} --host 127.0.0.1 --port {server.port} --nick start{i}")
            if wait(lambda: "│" in tmux("capture-pane", "-p", "-t", session), 10):
                startups.append((time.monotonic() - t0) * 1000)
            tmux("kill-session", "-t", session)
    finally:
        tmux("kill-server")
        server.stop()
    shutil.rmtree(work, ignore_errors=True)
    out = {"description": f"{MESSAGES:,} messages over {ROOMS} rooms (10 conversations × {MESSAGES // ROOMS:,} lines), "
                          "sent by chat-bench as fast as our server relays them; clients pinned to core 0.",
           "results": results}
    if startups:
        out["startup_ms"] = sorted(startups)[len(startups) // 2]
    return out
