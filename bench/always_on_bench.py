"""Memory of always-on users (issue 45): the server started on a database of N accounts, first
with no presence records, then with every account always-on (in #lobby and one of 100 rooms,
nobody connected). The difference in resident memory, divided by N, is what one always-on user
costs while idle (ergo's figure is about 26 KB a client). Run by `make bench` after run.py;
alone: `python3 bench/always_on_bench.py [N] [BINARY]`."""
import os
import secrets
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def serve(binary, data, until, timeout=300):
    """Starts the server on `data`, waits for `until` in its log, and returns its idle RSS (KiB)."""
    port = free_port()
    log_path = os.path.join(data, "server.log")
    with open(log_path, "w") as log:
        process = subprocess.Popen([binary, "--serve", "--headless", "--bind", "127.0.0.1", "--port", str(port),
                                    "--tls-port", "0", "--web-port", "0", "--data-dir", data], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + timeout
        while until not in open(log_path).read():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the server did not say " + repr(until) + ":\n" + open(log_path).read()[-3000:])
            time.sleep(0.2)
        # Settled: the same figure twice, a second apart.
        last = -1
        for _ in range(30):
            now = rss_kib(process.pid)
            if now == last:
                break
            last = now
            time.sleep(1)
        return last
    finally:
        process.terminate()
        process.wait(timeout=30)


def main():
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    binary = sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "..", ".build", "release", "chat-tui")
    data = tempfile.mkdtemp(prefix="chat-tui-always-on-")
    # The schema, made by the program itself; then the accounts written directly (a real
    # credential each would take minutes of PBKDF2: these cannot log in, which is not needed).
    done = subprocess.run([binary, "account", "add", "seed", "--password", "seed-password-1", "--data-dir", data],
                          capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    database = os.path.join(data, "server.db")
    with sqlite3.connect(database) as db:
        db.executemany("INSERT INTO accounts VALUES (?, ?, ?, 4096, ?, ?, 1)",
                       [(f"user{i}", f"user{i}", secrets.token_bytes(16), secrets.token_bytes(32), secrets.token_bytes(32))
                        for i in range(count)])
    baseline = serve(binary, data, "listening on")
    with sqlite3.connect(database) as db:
        db.executemany("INSERT INTO presence VALUES (?, 'default', ?, ?, '127.0.0.1', ?, ?, ?)",
                       [(f"user{i}", f"user{i}", f"user{i}", f"User {i}", f"#lobby\n#room{i % 100}", time.time())
                        for i in range(count)])
    kept = serve(binary, data, f"always-on: {count} users kept present")
    per_user = (kept - baseline) * 1024 / count
    print(f"always-on: {count} accounts, RSS {baseline / 1024:.1f} MiB with none present, "
          f"{kept / 1024:.1f} MiB with all present (in #lobby and one of 100 rooms): "
          f"{per_user / 1024:.1f} KiB per always-on user (ergo: about 26 KB a client)")
    subprocess.run(["rm", "-rf", data])


if __name__ == "__main__":
    main()
