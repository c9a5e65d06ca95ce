"""Web-port figures for `make bench` (issue 27).

1. Fan-out over WebSocket against plain TCP, in the same run: a server (history off, no limits,
   the web port on) with 100 members in #lobby, 5 of whom send messages of 60 bytes of text;
   everyone reads until they have seen every message. Server CPU seconds (from /proc) over the
   sending phase per million deliveries, once with 100 TCP members and once with 100 WebSocket
   members (ws://127.0.0.1:PORT/irc, subprotocol text.ircv3.net), REPEATS runs each, interleaved.
   The load generator is this file run as a child process (`web_bench.py load ...`) pinned to the
   load core: asyncio streams for TCP, the `websockets` asyncio client for WebSocket. Python's
   WebSocket client reads some 80,000 to 90,000 messages a second on one core, well under what the
   server sends in a flood, so the senders keep a steady pace that both clients keep up with;
   the report gives the seconds from the last message sent to the last one read, which stay
   small when they do.
2. Uploads through the host on loopback: an IRC client's soju.im/FILEHOST URL, a POST of 256 MiB
   of random bytes with curl, MiB/s; against curl copying the same file on the same disk
   (file://), and that copy followed by an fsync (the host makes every upload durable).

Uses run.py's Server (pinned to the server core, a data directory of its own, killed on stop)
and cpu_seconds. Run alone: `python3 bench/web_bench.py` (CHAT_TUI=path picks another binary).
"""
import argparse
import asyncio
import json
import os
import re
import select
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from link_bench import free_port, repeated  # the same helpers as the link figures'

CLIENTS = 100
SENDERS = 5
MESSAGES = 1000          # each sender's
RATE = 100.0             # messages a second from each sender (0: as fast as they go)
TEXT_BYTES = 60
UPLOAD_MIB = 256
PATTERN = " PRIVMSG #lobby :"
SUBPROTOCOL = "text.ircv3.net"


def wait_port(port, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


# ---------------------------------------------------------------------------------------------
# The load generator: a child process pinned to the load core.

class TcpMember:
    def __init__(self, nick):
        self.nick = nick

    async def open(self, port):
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 20)

    async def send(self, line):
        self.writer.write(line.encode() + b"\r\n")
        if self.writer.transport.get_write_buffer_size() > 1 << 20:
            await self.writer.drain()

    async def line(self):
        data = await self.reader.readline()
        if not data:
            raise RuntimeError(f"{self.nick}: the server closed the connection")
        return data.decode(errors="replace").rstrip("\r\n")

    async def count(self, expected):
        """Reads until `expected` messages to the room have come; counts them in bulk."""
        pattern = PATTERN.encode()
        keep = len(pattern) - 1
        seen, tail = 0, b""
        while seen < expected:
            data = await self.reader.read(1 << 16)
            if not data:
                raise RuntimeError(f"{self.nick}: closed after {seen} of {expected} messages")
            chunk = tail + data
            seen += chunk.count(pattern)
            tail = chunk[-keep:]
        return seen

    async def close(self):
        try:
            self.writer.write(b"QUIT\r\n")
            self.writer.close()
        except Exception:
            pass


class WsMember:
    def __init__(self, nick):
        self.nick = nick

    async def open(self, port):
        from websockets.asyncio.client import connect
        # No compression (the server offers none; asked for none, each side does the same work
        # as over TCP), no keepalive pings, and an unbounded queue: the socket is read as soon
        # as the loop gets to it, as the TCP members read theirs.
        self.ws = await connect(f"ws://127.0.0.1:{port}/irc", subprotocols=[SUBPROTOCOL], compression=None,
                                max_queue=None, ping_interval=None, open_timeout=60, close_timeout=2)
        if self.ws.subprotocol != SUBPROTOCOL:
            raise RuntimeError(f"the server chose subprotocol {self.ws.subprotocol!r}")

    async def send(self, line):
        await self.ws.send(line)

    async def line(self):
        message = await self.ws.recv()
        return message if isinstance(message, str) else message.decode(errors="replace")

    async def count(self, expected):
        seen = 0
        while seen < expected:
            message = await self.ws.recv()
            if PATTERN in message:
                seen += 1
        return seen

    async def close(self):
        try:
            await self.ws.send("QUIT")
            await self.ws.close()
        except Exception:
            pass


async def until(member, predicate, what):
    while True:
        line = await member.line()
        if line.startswith("ERROR"):
            raise RuntimeError(f"{member.nick}: {line} (waiting for {what})")
        if predicate(line):
            return line


async def join(member, port):
    await member.open(port)
    await member.send(f"NICK {member.nick}")
    await member.send(f"USER {member.nick} 0 * :{member.nick}")
    # The server puts everyone in #lobby on arrival: the end of its NAMES.
    await until(member, lambda l: " 366 " in l, "the end of #lobby's names")


async def stdin_line():
    return await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)


def say(record):
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


async def load(args):
    kind = TcpMember if args.transport == "tcp" else WsMember
    members = [kind(f"w{i}") for i in range(args.clients)]
    try:
        await asyncio.wait_for(asyncio.gather(*(join(m, args.port) for m in members)), args.time_limit)
        # Each member's own PING after everyone is in: its PONG comes after every JOIN it was sent.
        for m in members:
            await m.send("PING :sync")
        await asyncio.wait_for(asyncio.gather(*(until(m, lambda l: "PONG" in l and "sync" in l, "PONG sync") for m in members)),
                               args.time_limit)
    except Exception as error:
        say({"error": f"joining: {type(error).__name__}: {error}"})
        return
    say({"ready": True, "clients": len(members)})
    if (await stdin_line()).strip() != "go":
        return
    senders = members[:args.senders]
    total = args.senders * args.messages
    expected = [total - (args.messages if m in senders else 0) for m in members]  # no echo to a sender
    loop = asyncio.get_running_loop()
    start = loop.time()
    finished = [None] * len(members)
    sent_at = [start]

    async def receive(index):
        got = await members[index].count(expected[index])
        finished[index] = loop.time()
        return got

    async def send(index):
        member = senders[index]
        filler = "x" * TEXT_BYTES
        for i in range(args.messages):
            if args.rate > 0:
                # Senders interleaved evenly within each period.
                delay = start + (i + index / args.senders) / args.rate - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
            text = (f"{member.nick} {i:06d} " + filler)[:TEXT_BYTES]
            await member.send(f"PRIVMSG #lobby :{text}")
        if isinstance(member, TcpMember):
            await member.writer.drain()
        sent_at.append(loop.time())

    receivers = [asyncio.ensure_future(receive(i)) for i in range(len(members))]
    try:
        await asyncio.wait_for(asyncio.gather(*(send(i) for i in range(len(senders)))), args.time_limit)
        counts = await asyncio.wait_for(asyncio.gather(*receivers), args.time_limit)
        error = None
    except Exception as failure:
        error = f"{type(failure).__name__}: {failure}"
        for r in receivers:
            r.cancel()
        counts = [0] * len(members)
    end = max([f for f in finished if f is not None], default=loop.time())
    result = {"transport": args.transport, "clients": len(members), "senders": args.senders, "messages": total,
              "rate_per_sender": args.rate, "deliveries": sum(counts), "expected_deliveries": sum(expected),
              "complete": error is None and sum(counts) == sum(expected),
              "seconds": end - start, "send_seconds": max(sent_at) - start, "tail_seconds": end - max(sent_at)}
    if error:
        result["error"] = error
    say(result)
    await stdin_line()  # the server's CPU is read before anyone leaves
    await asyncio.gather(*(m.close() for m in members), return_exceptions=True)


# ---------------------------------------------------------------------------------------------
# The parent: servers, CPU, uploads.

def read_record(process, timeout):
    """The child's next JSON line (its stdout is unbuffered), or an error on silence or exit."""
    deadline = time.monotonic() + timeout
    line = b""
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([process.stdout], [], [], left)[0]:
            raise RuntimeError(f"the load generator said nothing for {timeout} s")
        byte = process.stdout.read(1)
        if not byte:
            raise RuntimeError(f"the load generator exited: {process.stderr.read().decode(errors='replace')[-500:]}")
        line += byte
    return json.loads(line)


def fanout_once(Server, cpu_seconds, load_core, transport, clients=CLIENTS, senders=SENDERS, messages=MESSAGES,
                rate=RATE, timeout=300):
    web_port = free_port()
    server = Server("chat-tui", extra=["--history-days", "0", "--limits", "off", "--web-port", str(web_port)])
    child = None
    try:
        if not wait_port(web_port):
            raise RuntimeError("the web port did not open")
        port = server.port if transport == "tcp" else web_port
        child = subprocess.Popen(["taskset", "-c", load_core, sys.executable, os.path.abspath(__file__), "load",
                                  "--transport", transport, "--port", str(port), "--clients", str(clients),
                                  "--senders", str(senders), "--messages", str(messages), "--rate", str(rate),
                                  "--time-limit", str(timeout - 30)],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
        ready = read_record(child, timeout)
        if "error" in ready:
            raise RuntimeError(ready["error"])
        before = cpu_seconds(server.pid)
        child.stdin.write(b"go\n")
        result = read_record(child, timeout)
        spent = cpu_seconds(server.pid) - before
        result["cpu_seconds"] = spent
        deliveries = result.get("deliveries") or 0
        result["cpu_per_million"] = spent / deliveries * 1e6 if deliveries else None
        if "error" in result:
            raise RuntimeError(result["error"])
        child.stdin.write(b"bye\n")
        child.wait(timeout=30)
        return result
    finally:
        if child is not None:
            if child.poll() is None:
                child.kill()
            child.wait()
        server.stop()


def irc_register(port, nick):
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(f"NICK {nick}\r\nUSER {nick} 0 * :{nick}\r\n".encode())
    return s


def filehost_url(s):
    """The soju.im/FILEHOST token from the 005 lines of registration (or, failing that, of VERSION)."""
    buffer = b""
    asked = False
    while True:
        found = re.search(rb"soju\.im/FILEHOST=(\S+)", buffer)
        if found:
            return found.group(1).decode()
        if not asked and re.search(rb" (376|422) ", buffer):
            s.sendall(b"VERSION\r\n")
            asked = True
        try:
            data = s.recv(65536)
        except socket.timeout:
            data = b""
        if not data:
            raise RuntimeError("the server gave no soju.im/FILEHOST address: " + buffer[-300:].decode(errors="replace"))
        buffer += data


def curl(arguments, timeout=600):
    """curl's exit, its -w output (status, seconds) and the wall seconds around it."""
    start = time.monotonic()
    done = subprocess.run(["curl", "-s", "-w", "%{http_code} %{time_total}", *arguments],
                          capture_output=True, text=True, timeout=timeout)
    wall = time.monotonic() - start
    status, seconds = (done.stdout.split() + ["0", "0"])[:2]
    return done.returncode, status, float(seconds), wall


def make_random_file(path, mib):
    with open(path, "wb") as f:
        for _ in range(mib):
            f.write(os.urandom(1 << 20))
        f.flush()
        os.fsync(f.fileno())


def upload_once(Server, path, mib):
    """One fresh server; an IRC client's FILEHOST URL; curl POSTs the file. Then curl copies the
    same file to the same disk (file://), and the copy again, fsynced."""
    web_port = free_port()
    server = Server("chat-tui", extra=["--history-days", "0", "--web-port", str(web_port), "--upload-max-size", "2G",
                                       "--upload-quota", "4G"])
    copy = os.path.join(os.path.dirname(path), "copy.bin")
    irc = None
    try:
        if not wait_port(web_port):
            raise RuntimeError("the web port did not open")
        same_disk = os.stat(server.dir).st_dev == os.stat(path).st_dev
        irc = irc_register(server.port, "uploader")
        url = filehost_url(irc)  # valid while this connection stays
        size = os.path.getsize(path)
        os.sync()  # the last run's writes are not flushed during this one
        # No "Expect: 100-continue" (curl's default for a body past 1 MiB): the host does not
        # answer it, and curl would wait a second before sending the body.
        code, status, seconds, wall = curl(["-o", "/dev/null", "--data-binary", "@" + path, "-H", "Content-Type: application/octet-stream",
                                            "-H", "Expect:", url])
        if code != 0 or status != "201":
            raise RuntimeError(f"the upload failed: curl exit {code}, HTTP {status}")
        uploads = os.path.join(server.dir, "uploads")
        stored = sum(os.path.getsize(os.path.join(uploads, f)) for f in os.listdir(uploads) if not f.endswith((".meta", ".part")))
        if stored != size:
            raise RuntimeError(f"the host stored {stored} bytes of {size}")
        os.sync()
        code, _, copy_seconds, copy_wall = curl(["-o", copy, "file://" + path])
        if code != 0 or os.path.getsize(copy) != size:
            raise RuntimeError(f"the copy failed: curl exit {code}")
        os.unlink(copy)
        os.sync()
        start = time.monotonic()
        code, _, _, _ = curl(["-o", copy, "file://" + path])
        with open(copy, "rb") as f:
            os.fsync(f.fileno())
        synced_seconds = time.monotonic() - start
        if code != 0:
            raise RuntimeError(f"the copy failed: curl exit {code}")
        mib_size = size / (1 << 20)
        return {"mib": mib_size, "same_disk": same_disk,
                "upload_seconds": seconds, "upload_wall_seconds": wall, "upload_mib_s": mib_size / seconds,
                "copy_seconds": copy_seconds, "copy_wall_seconds": copy_wall, "copy_mib_s": mib_size / copy_seconds,
                "copy_fsync_seconds": synced_seconds, "copy_fsync_mib_s": mib_size / synced_seconds,
                "upload_over_copy": copy_seconds / seconds}
    finally:
        if irc is not None:
            irc.close()
        server.stop()
        if os.path.exists(copy):
            os.unlink(copy)


def run(Server, cpu_seconds, load_core, repeats, messages=MESSAGES, rate=RATE, upload_mib=UPLOAD_MIB, parts=("fanout", "upload")):
    results = {"fanout": {"tcp": [], "ws": []}, "upload": [],
               "sizes": {"clients": CLIENTS, "senders": SENDERS, "messages": messages, "rate": rate,
                         "text_bytes": TEXT_BYTES, "upload_mib": upload_mib}}
    if "fanout" in parts:
        # Interleaved, so a slow spell of the machine falls on both.
        for _ in range(repeats):
            for transport in ("tcp", "ws"):
                results["fanout"][transport] += repeated(1, lambda: fanout_once(Server, cpu_seconds, load_core, transport,
                                                                                messages=messages, rate=rate))
        for transport in ("tcp", "ws"):
            print(f"web fanout {transport}: " + ", ".join(f"{r['cpu_per_million']:.3f} cpu-s/M" if "error" not in r else "error"
                                                         for r in results["fanout"][transport]), flush=True)
    if "upload" in parts:
        # The file beside the servers' data directories (the same parent: the same disk).
        work = tempfile.mkdtemp(prefix="bench-web-upload-")
        path = os.path.join(work, "random.bin")
        try:
            make_random_file(path, upload_mib)
            results["upload"] = repeated(repeats, lambda: upload_once(Server, path, upload_mib))
        except Exception as error:
            results["upload"] = [{"error": str(error)}]
        finally:
            for name in os.listdir(work):
                os.unlink(os.path.join(work, name))
            os.rmdir(work)
        print("web upload: " + ", ".join(f"{r['upload_mib_s']:.0f} MiB/s (copy {r['copy_mib_s']:.0f})" if "error" not in r else "error"
                                         for r in results["upload"]), flush=True)
    return results


def good(runs, key):
    return [r[key] for r in runs if "error" not in r and r.get(key) is not None]


def cell(values, fmt):
    if not values:
        return "—"
    return f"{fmt(statistics.median(values))} [{fmt(min(values))}–{fmt(max(values))}]"


def report(results):
    sizes = results.get("sizes", {})
    out = []
    fan = results.get("fanout", {})
    tcp, ws = fan.get("tcp", []), fan.get("ws", [])
    errors = [r["error"] for r in tcp + ws if "error" in r]
    if tcp or ws:
        messages = sizes.get("senders", SENDERS) * sizes.get("messages", MESSAGES)
        rate = sizes.get("rate", RATE)
        pace = (f"each sender paced at {rate:g} messages a second ({rate * sizes.get('senders', SENDERS):g} a second in all), "
                "as Python's WebSocket client cannot read a flood" if rate else "senders as fast as they go")
        out += [f"{sizes.get('clients', CLIENTS)} members in #lobby, {sizes.get('senders', SENDERS)} send "
                f"{sizes.get('messages', MESSAGES):,} messages each ({messages:,}, {sizes.get('text_bytes', TEXT_BYTES)} bytes "
                f"of text), {pace}; everyone reads them all. The same server (history off, no limits, the web port on) "
                "with all members over plain TCP, then all over WebSocket (text.ircv3.net); load generator Python asyncio "
                "on the load core. Server CPU from /proc over the sending phase; a delivery is one message read by one member.",
                "", "| figure | TCP | WebSocket | WebSocket ÷ TCP |", "|---|---|---|---|"]
        rows = (("cpu_per_million", "server CPU s per million deliveries (target: WebSocket ≤ 1.3 × TCP)", lambda v: f"{v:.3f}", True),
                ("cpu_seconds", "server CPU s per run", lambda v: f"{v:.2f}", True),
                ("deliveries", "deliveries per run", lambda v: f"{v:,.0f}", False),
                ("seconds", "seconds, first message sent to the last read", lambda v: f"{v:.2f}", False),
                ("tail_seconds", "seconds from the last message sent to the last read (small: the client kept up)", lambda v: f"{v:.2f}", False))
        for key, label, fmt, ratio in rows:
            a, b = good(tcp, key), good(ws, key)
            share = f"{statistics.median(b) / statistics.median(a):.2f}" if ratio and a and b and statistics.median(a) else ""
            out.append(f"| {label} | {cell(a, fmt)} | {cell(b, fmt)} | {share} |")
        out.append(f"| all delivered | {', '.join('yes' if r.get('complete') else 'no' for r in tcp)} | "
                   f"{', '.join('yes' if r.get('complete') else 'no' for r in ws)} | |")
    uploads = results.get("upload", [])
    if uploads:
        errors += [r["error"] for r in uploads if "error" in r]
        mib = sizes.get("upload_mib", UPLOAD_MIB)
        done = [r for r in uploads if "error" not in r]
        disk = "the same disk" if done and all(r.get("same_disk") for r in done) else "the disk of the data directory"
        out += ["", f"{mib} MiB of random bytes, POSTed with curl to an IRC client's soju.im/FILEHOST URL on loopback "
                f"(the host streams it to its data directory, hashes it and fsyncs it), against curl copying the same file on {disk} "
                "(file://); curl's own timer, fresh server each run.", "",
                "| figure | MiB/s | seconds |", "|---|---|---|"]
        for label, rate_key, seconds_key in (("upload through the host (HTTP POST, loopback)", "upload_mib_s", "upload_seconds"),
                                             ("copy on the same disk (curl file://), the physical limit", "copy_mib_s", "copy_seconds"),
                                             ("the same copy then fsync, as the host does", "copy_fsync_mib_s", "copy_fsync_seconds")):
            out.append(f"| {label} | {cell(good(uploads, rate_key), lambda v: f'{v:.0f}')} | "
                       f"{cell(good(uploads, seconds_key), lambda v: f'{v:.2f}')} |")
        up, copy, synced = good(uploads, "upload_mib_s"), good(uploads, "copy_mib_s"), good(uploads, "copy_fsync_mib_s")
        if up and copy:
            out.append(f"| upload ÷ copy | {statistics.median(up) / statistics.median(copy):.2f} | |")
        if up and synced:
            out.append(f"| upload ÷ copy with fsync | {statistics.median(up) / statistics.median(synced):.2f} | |")
    if errors:
        out += ["", "Errors: " + "; ".join(sorted(set(errors)))]
    return "\n".join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command")
    child = commands.add_parser("load", help="the load generator (started by the benchmark)")
    child.add_argument("--transport", choices=("tcp", "ws"), required=True)
    child.add_argument("--port", type=int, required=True)
    child.add_argument("--clients", type=int, default=CLIENTS)
    child.add_argument("--senders", type=int, default=SENDERS)
    child.add_argument("--messages", type=int, default=MESSAGES)
    child.add_argument("--rate", type=float, default=RATE)
    child.add_argument("--time-limit", type=float, default=270)
    parser.add_argument("--repeats", type=int, default=int(os.environ.get("BENCH_REPEATS", "3")))
    parser.add_argument("--messages", type=int, default=MESSAGES)
    parser.add_argument("--rate", type=float, default=RATE)
    parser.add_argument("--upload-mib", type=int, default=UPLOAD_MIB)
    parser.add_argument("--only", choices=("fanout", "upload"))
    args = parser.parse_args()
    if args.command == "load":
        asyncio.run(load(args))
        return
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import run as harness
    harness.CHAT_TUI = os.environ.get("CHAT_TUI", harness.CHAT_TUI)
    if not os.path.exists(harness.CHAT_TUI):
        sys.exit(f"{harness.CHAT_TUI} is missing: build it (make release) or point CHAT_TUI at a binary")
    parts = (args.only,) if args.only else ("fanout", "upload")
    results = run(harness.Server, harness.cpu_seconds, harness.LOAD_CORE, args.repeats, messages=args.messages,
                  rate=args.rate, upload_mib=args.upload_mib, parts=parts)
    print(report(results))


if __name__ == "__main__":
    main()
