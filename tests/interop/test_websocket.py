"""IRC over WebSocket on the web port (`--web-port`), with the `websockets` client from PyPI:
both subprotocols, fragmented messages, ping and pong, a 1 MiB frame refused, another page's
origin refused, a close in the middle of a message; and the port's HTTP bounds."""
import base64
import os
import socket
import subprocess

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from conftest import BINARY, RawClient, Server, free_port, wait_for_port


@pytest.fixture
def web():
    port = free_port()
    server = Server("--web-port", str(port))
    server.web_port = port
    wait_for_port(port)
    yield server
    server.stop()


def until(ws, predicate, what):
    seen = []
    while True:
        try:
            message = ws.recv(timeout=10)
        except TimeoutError:
            raise AssertionError(f"never got {what}; saw:\n" + "\n".join(map(str, seen)))
        seen.append(message)
        if predicate(message):
            return message


def register(ws, nick, text=True):
    encode = (lambda s: s) if text else (lambda s: s.encode())
    ws.send(encode(f"NICK {nick}"))
    ws.send(encode(f"USER {nick} 0 * :{nick} on the web"))
    return until(ws, lambda m: (" 366 " in m) if text else (b" 366 " in m), "the end of the room's names")


@pytest.mark.parametrize("subprotocol", ["text.ircv3.net", "binary.ircv3.net"])
def test_a_web_client_is_an_irc_client_in_either_subprotocol(web, subprotocol):
    text = subprotocol.startswith("text")
    peer = RawClient(web.port)
    peer.register("peer")
    with connect(f"ws://127.0.0.1:{web.web_port}/irc", subprotocols=[subprotocol]) as ws:
        assert ws.subprotocol == subprotocol
        register(ws, "webby", text)
        peer.wait_for(lambda l: "webby" in l and " JOIN " in l)
        peer.send("PRIVMSG webby :hello web")
        got = until(ws, lambda m: (m if text else m.decode()).endswith("PRIVMSG webby :hello web"), "peer's message")
        assert isinstance(got, str) == text, "text frames for text.ircv3.net, binary for binary.ircv3.net"
        assert not (got if text else got.decode()).endswith("\r\n"), "one IRC line per message, without CR LF"
        # A message in fragments is one line.
        ws.send(["PRIVMSG peer ", ":frag", "mented"] if text else [b"PRIVMSG peer ", b":frag", b"mented"])
        peer.wait_for(lambda l: l.endswith("PRIVMSG peer :fragmented"))
        assert ws.ping(b"are you there").wait(5), "a ping is answered with a pong"
        # Others see the web user as any member (irssi and WeeChat ask the same NAMES and WHOIS).
        peer.send("WHOIS webby")
        assert "webby on the web" in peer.wait_for(lambda l: " 311 " in l)
    peer.close()


def test_refusals_1009_for_a_huge_frame_403_for_another_origin_and_a_close_mid_message_leaves_others_served(web):
    with connect(f"ws://127.0.0.1:{web.web_port}/irc", subprotocols=["text.ircv3.net"], max_size=None) as ws:
        ws.send("A" * (1 << 20))
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
    with pytest.raises(InvalidStatus) as refused:
        connect(f"ws://127.0.0.1:{web.web_port}/irc", subprotocols=["text.ircv3.net"], origin="http://evil.example")
    assert refused.value.response.status_code == 403
    # The page's own origin is let in.
    with connect(f"ws://127.0.0.1:{web.web_port}/irc", subprotocols=["text.ircv3.net"], origin=f"http://127.0.0.1:{web.web_port}") as ws:
        register(ws, "samesite")
    # By hand: the handshake, half of a fragmented message, then the socket closes.
    raw = socket.create_connection(("127.0.0.1", web.web_port), timeout=5)
    key = base64.b64encode(os.urandom(16)).decode()
    raw.sendall((f"GET /irc HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: text.ircv3.net\r\n\r\n").encode())
    assert raw.recv(4096).startswith(b"HTTP/1.1 101 ")
    mask = b"\x01\x02\x03\x04"
    payload = b"NICK hal"
    raw.sendall(bytes([0x01, 0x80 | len(payload)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))
    raw.close()
    other = RawClient(web.port)
    other.register("stillhere")
    other.send("PING :alive")
    other.wait_for(lambda l: "PONG" in l and "alive" in l)
    other.close()


def http(port, request):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(request)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return data.decode(errors="replace")
            data += chunk
            if b"\r\n\r\n" in data and b"Connection: close" not in data and data.count(b"\r\n\r\n") >= 1 and len(data) > 0:
                head, _, body = data.partition(b"\r\n\r\n")
                length = next((int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")), 0)
                if len(body) >= length:
                    return data.decode(errors="replace")


def test_http_on_the_web_port_is_bounded_and_safe(web):
    page = http(web.web_port, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert page.startswith("HTTP/1.1 200 ") and "X-Content-Type-Options: nosniff" in page and "Content-Security-Policy:" in page
    assert http(web.web_port, b"GET /../server.db HTTP/1.1\r\nHost: x\r\n\r\n").startswith("HTTP/1.1 400 ")
    assert http(web.web_port, b"GET /files/%2e%2e%2fserver.db HTTP/1.1\r\nHost: x\r\n\r\n").startswith("HTTP/1.1 400 ")
    assert http(web.web_port, b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"y" * 40000 + b"\r\n\r\n").startswith("HTTP/1.1 431 ")
    assert http(web.web_port, b"DELETE / HTTP/1.1\r\nHost: x\r\n\r\n").startswith("HTTP/1.1 405 ")
    assert http(web.web_port, b"GET /irc HTTP/1.1\r\nHost: x\r\n\r\n").startswith("HTTP/1.1 426 "), "the chat address without an upgrade"
    assert http(web.web_port, b"NICK alice\r\n\r\n").startswith("HTTP/1.1 400 "), "IRC on the web port"


def test_the_web_port_is_never_an_irc_port():
    done = subprocess.run([BINARY, "--serve", "--headless", "--port", str(free_port()), "--web-port", "6667"],
                          capture_output=True, text=True, timeout=20)
    assert done.returncode != 0 and "browsers refuse the IRC ports" in done.stdout + done.stderr


def test_web_connections_waiting_for_a_request_count_against_their_address():
    port = free_port()
    server = Server("--web-port", str(port), "--limit-loopback", "--limits", "2:100")
    try:
        wait_for_port(port)
        # wait_for_port's own connection has closed; two more wait without a request.
        import time
        deadline = time.monotonic() + 10
        held = []
        while True:
            held = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(2)]
            third = socket.create_connection(("127.0.0.1", port), timeout=5)
            answer = third.recv(4096)
            third.close()
            if answer.startswith(b"HTTP/1.1 429 "):
                break
            for s in held:
                s.close()
            assert time.monotonic() < deadline, f"the third was not refused: {answer!r}"
        # One goes: another may come.
        held[0].close()
        deadline = time.monotonic() + 10
        while True:
            fourth = socket.create_connection(("127.0.0.1", port), timeout=5)
            fourth.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            answer = fourth.recv(4096)
            fourth.close()
            if answer.startswith(b"HTTP/1.1 200 "):
                break
            assert time.monotonic() < deadline, f"never let in again: {answer!r}"
        for s in held[1:]:
            s.close()
    finally:
        server.stop()


def test_a_page_under_another_name_is_refused_and_pipelining_is_bounded(web):
    """DNS rebinding: a page at evil.example, pointed at this machine, sends its own name as Host and Origin."""
    key = base64.b64encode(os.urandom(16)).decode()
    for host, allowed in ((f"evil.example:{web.web_port}", False), (f"127.0.0.1:{web.web_port}", True), (f"localhost:{web.web_port}", True)):
        answer = http(web.web_port, (f"GET /irc HTTP/1.1\r\nHost: {host}\r\nOrigin: http://{host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                                     f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nConnection: close\r\n\r\n").encode()) if not allowed else None
        if not allowed:
            assert answer.startswith("HTTP/1.1 403 "), answer
        else:
            with connect(f"ws://{host}/irc", subprotocols=["text.ircv3.net"], origin=f"http://{host}") as ws:
                assert ws.subprotocol == "text.ircv3.net"
    # Twelve requests in one write: eight answered, then 429 and closed.
    with socket.create_connection(("127.0.0.1", web.web_port), timeout=5) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" * 12)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    text = data.decode(errors="replace")
    assert text.count("HTTP/1.1 200 ") == 8 and "HTTP/1.1 429 " in text, text[:500]
