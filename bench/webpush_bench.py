"""Web Push figures (issue 47): how long a direct message takes to reach the push service, and
how many pushes a second the server sends. The release server with --webpush-allow-private, a
local HTTPS push service on this machine (tests/interop/test_webpush.py's, trusted through
SSL_CERT_FILE), an account with one subscription and no session; a guest sends it direct
messages: 50 one at a time (each waits for its POST), then a burst of 200 (they must all
arrive: the workers keep at most 256 waiting). Run by `make bench` after run.py; alone:
`python3 bench/webpush_bench.py [BINARY]`."""
import os
import statistics
import subprocess
import sys
import tempfile
import time
import pathlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "interop"))

from conftest import RawClient, free_port, stop_process, wait_for_port  # noqa: E402
from test_webpush import PushService, Subscription, certificate, register_with_caps  # noqa: E402


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", ".build", "release", "chat-tui")
    directory = pathlib.Path(tempfile.mkdtemp(prefix="chat-tui-webpush-bench-"))
    cert_path, key_path = certificate(directory)
    service = PushService(cert_path, key_path)
    port = free_port()
    env = dict(os.environ, SSL_CERT_FILE=str(cert_path))
    with open(directory / "server.log", "w") as log:
        process = subprocess.Popen([binary, "--serve", "--headless", "--bind", "127.0.0.1", "--port", str(port), "--tls-port", "0",
                                    "--web-port", "0", "--data-dir", str(directory / "data"), "--webpush-allow-private"],
                                   stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        wait_for_port(port)
        alice = RawClient(port)
        register_with_caps(alice, "alice", ["draft/webpush"])
        alice.send("REGISTER * * correct-horse-battery")
        alice.wait_for(lambda l: "REGISTER SUCCESS" in l)
        phone = Subscription(f"https://127.0.0.1:{service.port}/sub/alice")
        alice.send(f"WEBPUSH REGISTER {phone.endpoint} {phone.keys()}")
        alice.wait_for(lambda l: "WEBPUSH REGISTER" in l)
        alice.send("QUIT")
        alice.close()
        bob = RawClient(port)
        bob.register("bob")
        latencies = []
        for n in range(50):
            sent = time.monotonic()
            bob.send(f"PRIVMSG alice :one at a time {n}")
            _, _, _, at = service.next()
            latencies.append((at - sent) * 1000)
        started = time.monotonic()
        for n in range(200):
            bob.send(f"PRIVMSG alice :burst {n}")
        last = started
        for _ in range(200):
            _, _, _, last = service.next(timeout=60)
        rate = 200 / (last - started)
        latencies.sort()
        print(f"web push: a direct message to an account with no session reached a local push service in "
              f"{statistics.median(latencies):.1f} ms (median of 50; 95th percentile {latencies[int(0.95 * len(latencies)) - 1]:.1f} ms), "
              f"encrypted (RFC 8291) and signed (VAPID); a burst of 200 was sent at {rate:.0f} pushes a second (4 push threads, TLS each)")
        bob.close()
    finally:
        stop_process(process)
        service.stop()
        subprocess.run(["rm", "-rf", str(directory)])


if __name__ == "__main__":
    main()
