"""Linking figures for `make bench` (issue 25): a room of 500 split over two linked servers with
5 senders on one side, server CPU per million deliveries on each node, ours against two linked
InspIRCd 3.15 in the same run; and a burst: the time and bytes for a fresh link to receive a
node holding 10,000 users in 100 rooms, ours and InspIRCd's. Uses run.py's Server and bench."""
import os
import socket
import statistics
import subprocess
import time

PASSWORD = "bench-link-secret"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def inspircd_link_config(name, sid, link_port, peer_name, peer_port=None):
    """Lines added to the bench's InspIRCd config: a server name, a link port, a link block."""
    lines = [f'<server name="{name}" description="bench" id="{sid}" network="bench">',
             f'<bind address="127.0.0.1" port="{link_port}" type="servers">',
             '<module name="spanningtree">',
             f'<link name="{peer_name}" ipaddr="127.0.0.1" port="{peer_port or 1}" allowmask="127.0.0.0/8" timeout="20" '
             f'sendpass="{PASSWORD}" recvpass="{PASSWORD}">']
    if peer_port:
        lines.append(f'<autoconnect period="1s" server="{peer_name}">')
    return "\n".join(lines) + "\n"


def linked_pair(Server, kind):
    """Two linked servers of `kind`; waits until a client on the second sees one on the first."""
    if kind == "chat-tui":
        link_port = free_port()
        a = Server(kind, extra=["--history-days", "0", "--name", "a.bench", "--sid", "0AA", "--link-port", str(link_port),
                                "--link", "b.bench", "--link-password", PASSWORD, "--link-tls", "off"])
        b = Server(kind, extra=["--history-days", "0", "--name", "b.bench", "--sid", "0BB",
                                "--link", f"a.bench=127.0.0.1:{link_port}", "--link-password", PASSWORD, "--link-tls", "off"])
    else:
        link_a, link_b = free_port(), free_port()
        a = Server(kind, append=inspircd_link_config("a.bench", "1AA", link_a, "b.bench"))
        b = Server(kind, append=inspircd_link_config("b.bench", "1BB", link_b, "a.bench", link_a))
    wait_linked(a.port, b.port)
    return a, b


def wait_linked(port_a, port_b, timeout=30):
    """A client on each; until the one on B sees the one on A in WHOIS."""
    def register(port, nick):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(f"NICK {nick}\r\nUSER {nick} 0 * :{nick}\r\n".encode())
        buffer = b""
        while b" 001 " not in buffer:
            buffer += s.recv(65536)
        return s
    a, b = register(port_a, "probea"), register(port_b, "probeb")
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            b.sendall(b"WHOIS probea\r\n")
            buffer = b""
            while b" 318 " not in buffer:
                buffer += b.recv(65536)
            if b" 311 " in buffer:
                return
            time.sleep(0.2)
        raise RuntimeError("the two servers did not link")
    finally:
        a.close()
        b.close()


def fanout_across(Server, bench, cpu_seconds, kind, clients=500, senders=5, messages=5000):
    a, b = linked_pair(Server, kind)
    try:
        before = (cpu_seconds(a.pid), cpu_seconds(b.pid))
        result = bench(["fanout", "--clients", str(clients), "--senders", str(senders), "--messages", str(messages),
                        "--port2", str(b.port)], a.port, timeout=600)
        spent = (cpu_seconds(a.pid) - before[0], cpu_seconds(b.pid) - before[1])
        deliveries = result.get("deliveries") or 0
        # Deliveries each node made: to its own half of the room (the senders are all on A).
        on_a = deliveries * (clients // 2 - 1) / (clients - 1) if deliveries else 0
        on_b = deliveries - on_a
        return {"deliveries": deliveries, "seconds": result.get("seconds"), "complete": result.get("complete"),
                "cpu_a": spent[0], "cpu_b": spent[1],
                "cpu_per_million_a": spent[0] / on_a * 1e6 if on_a else None,
                "cpu_per_million_b": spent[1] / on_b * 1e6 if on_b else None,
                "cpu_per_million_total": (spent[0] + spent[1]) / deliveries * 1e6 if deliveries else None}
    finally:
        a.stop()
        b.stop()


def burst(Server, chat_bench, load_core, kind, users=10_000, rooms=100):
    """A node holding `users` in `rooms`; a peer (this script) links to it and reads its burst:
    seconds from our SERVER line to its ENDBURST, and the bytes received."""
    link_port = free_port()
    if kind == "chat-tui":
        node = Server(kind, extra=["--history-days", "0", "--room", "none", "--name", "a.bench", "--sid", "0AA",
                                   "--link-port", str(link_port), "--link", "peer.bench", "--link-password", PASSWORD,
                                   "--link-tls", "off"])
    else:
        node = Server(kind, append=inspircd_link_config("a.bench", "1AA", link_port, "peer.bench"))
    holder = subprocess.Popen(["taskset", "-c", load_core, chat_bench, "idle", "--count", str(users), "--batch", "500",
                               "--rooms", str(rooms), "--hold", "600", "--port", str(node.port), "--time-limit", "700"],
                              stdout=subprocess.PIPE, text=True)
    try:
        ready = holder.stdout.readline()
        if '"ready"' not in ready:
            raise RuntimeError("the users did not all register")
        s = socket.create_connection(("127.0.0.1", link_port), timeout=60)
        start = time.monotonic()
        s.sendall(b"CAPAB START 1205\r\nCAPAB CAPABILITIES :CASEMAPPING=rfc1459\r\nCAPAB END\r\n"
                  + f"SERVER peer.bench {PASSWORD} 0 9PB :bench peer\r\n".encode())
        received = 0
        buffer = b""
        sent_burst = False
        while True:
            data = s.recv(1 << 20)
            if not data:
                raise RuntimeError("the node closed the link: " + buffer[-300:].decode(errors="replace"))
            received += len(data)
            buffer = (buffer + data)[-4096:]
            if not sent_burst and b"SERVER a.bench" in buffer:
                # InspIRCd waits for the burst of the side that connected before it sends its own.
                s.sendall(b":9PB BURST " + str(int(time.time())).encode() + b"\r\n:9PB ENDBURST\r\n")
                sent_burst = True
            if b" ENDBURST" in buffer:
                break
        seconds = time.monotonic() - start
        s.close()
        return {"seconds": seconds, "bytes": received, "users": users, "rooms": rooms}
    finally:
        holder.kill()
        holder.wait()
        node.stop()


def repeated(repeats, measure):
    """`repeats` runs of `measure`; a run that fails is an error in the results, not the end."""
    runs = []
    for _ in range(repeats):
        try:
            runs.append(measure())
        except Exception as error:
            runs.append({"error": str(error)})
    return runs


def run(Server, bench, cpu_seconds, chat_bench, load_core, repeats):
    results = {"fanout": {}, "burst": {}}
    for kind in ("chat-tui", "inspircd"):
        runs = results["fanout"][kind] = repeated(repeats, lambda: fanout_across(Server, bench, cpu_seconds, kind))
        print(f"{kind:9} link fanout: " + ", ".join(f"{r.get('cpu_per_million_total') or 0:.3f}" if "error" not in r else "error"
                                                    for r in runs), flush=True)
        runs = results["burst"][kind] = repeated(repeats, lambda: burst(Server, chat_bench, load_core, kind))
        print(f"{kind:9} burst: " + ", ".join(f"{r.get('seconds', 0):.2f} s" if "error" not in r else "error" for r in runs), flush=True)
    return results


def median(runs, key):
    values = [r[key] for r in runs if "error" not in r and r.get(key) is not None]
    return statistics.median(values) if values else None


def report(results):
    out = ["| two linked servers, 500 in a room (250 on each), 5 on A send 5,000 each | chat-tui | InspIRCd 3.15 | chat-tui ÷ InspIRCd |",
           "|---|---|---|---|"]
    fan = results.get("fanout", {})
    for key, label in (("cpu_per_million_a", "node A's CPU s per million of its deliveries"),
                       ("cpu_per_million_b", "node B's CPU s per million of its deliveries (all from the link)"),
                       ("cpu_per_million_total", "both nodes' CPU s per million deliveries")):
        ours, theirs = median(fan.get("chat-tui", []), key), median(fan.get("inspircd", []), key)
        ratio = f"{ours / theirs:.2f}" if ours and theirs else "—"
        out.append(f"| {label} | {ours or 0:.3f} | {theirs or 0:.3f} | {ratio} |")
    errors = [r["error"] for k in fan for r in fan[k] if "error" in r]
    bursts = results.get("burst", {})
    out += ["", "| a link receiving the burst of a node with 10,000 users in 100 rooms | chat-tui | InspIRCd 3.15 |", "|---|---|---|"]
    for key, label, fmt in (("seconds", "seconds from SERVER to ENDBURST", lambda v: f"{v:.2f}"),
                            ("bytes", "bytes of the burst", lambda v: f"{v / 1e6:.2f} MB")):
        ours, theirs = median(bursts.get("chat-tui", []), key), median(bursts.get("inspircd", []), key)
        out.append(f"| {label} | {fmt(ours) if ours else '—'} | {fmt(theirs) if theirs else '—'} |")
    errors += [r["error"] for k in bursts for r in bursts[k] if "error" in r]
    if errors:
        out += ["", "Errors: " + "; ".join(sorted(set(errors)))]
    return "\n".join(out)


if __name__ == "__main__":
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import run as harness
    results = run(harness.Server, harness.bench, harness.cpu_seconds, harness.CHAT_BENCH, harness.LOAD_CORE,
                  int(os.environ.get("BENCH_REPEATS", "3")))
    print(report(results))
