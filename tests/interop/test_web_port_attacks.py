"""Issue 43, items 5 and 6: the web port shared fairly. The attacker on 127.0.0.2 and beyond
(127.0.0.1 is exempt from limits by design), a bystander on 127.0.0.1. No timing assertions."""
import resource
import socket

from conftest import RawClient, free_port, wait_for_port
from hole_attacks import Host
from conftest import BINARY


def web_host(*extra, preexec=None):
    web_port = free_port()
    host = Host(BINARY, "--web-port", str(web_port), *extra, preexec=preexec)
    host.web_port = web_port
    try:
        wait_for_port(web_port)
    except Exception:
        host.stop()
        raise
    return host


def statuses(sock, count):
    """The status codes of up to `count` responses on a keep-alive connection."""
    seen, buffer = [], b""
    sock.settimeout(5)
    while len(seen) < count:
        try:
            chunk = sock.recv(65536)
        except (socket.timeout, ConnectionResetError):
            break
        if not chunk:
            break
        buffer += chunk
        while b"\r\n\r\n" in buffer:
            head, rest = buffer.split(b"\r\n\r\n", 1)
            status = int(head.split(b" ", 2)[1])
            length = next((int(l.split(b":", 1)[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")), 0)
            if len(rest) < length:
                break
            seen.append(status)
            buffer = rest[length:]
    return seen


def test_http_requests_are_paced_per_address():
    host = web_host()
    try:
        answered = []
        for _ in range(4):  # keep-alive connections from one address, requests as fast as they go
            s = socket.create_connection(("127.0.0.1", host.web_port), timeout=5, source_address=("127.0.0.2", 0))
            for _ in range(60):
                s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                got = statuses(s, 1)
                answered += got
                if not got or got[-1] == 429:
                    break
            s.close()
        ok, slowed = answered.count(200), answered.count(429)
        print(f"\n240 requests at once from 127.0.0.2: {ok} answered, {slowed} told to slow down (429)")
        assert slowed >= 1 and ok <= 130, answered
        b = socket.create_connection(("127.0.0.1", host.web_port), timeout=5)
        b.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert statuses(b, 1) == [200], "the bystander is served"
        b.close()
    finally:
        host.stop()


def test_http_connections_take_a_share_of_the_descriptors_not_all():
    def small_files():
        resource.setrlimit(resource.RLIMIT_NOFILE, (400, 400))
    host = web_host(preexec=small_files)
    held = []
    try:
        refused = 0
        for n in range(8):  # 8 addresses x 16 (each address's own limit) = 128 > 100, the share of 400
            for _ in range(16):
                s = socket.create_connection(("127.0.0.1", host.web_port), timeout=5, source_address=(f"127.0.0.{2 + n}", 0))
                held.append(s)
        for s in held:
            s.settimeout(0.3)
            try:
                if s.recv(64).startswith(b"HTTP/1.1 503"):
                    refused += 1
            except (socket.timeout, ConnectionResetError):
                pass
        print(f"\n128 idle HTTP connections from 8 addresses with 400 descriptors: {refused} refused (503)")
        assert refused >= 28
        bystander = RawClient(host.port)
        bystander.register("bystander")
        assert "HTTP connections are open (a quarter of the descriptors)" in host.log_text()
    finally:
        for s in held:
            s.close()
        host.stop()
