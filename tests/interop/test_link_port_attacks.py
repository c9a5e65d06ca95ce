"""Issue 43, items 1, 2 and 8: the link port under attack, the attacker on 127.0.0.2 (loopback's
127.0.0.1 is exempt from limits by design; .2 is treated like anyone), a bystander on 127.0.0.1.
Each test prints its figure. No timing assertions: every wait is for an event."""
import os
import socket
import time

from conftest import RawClient, Server, free_port, wait_for_port

PASSWORD = "link-secret"


def link_server():
    port = free_port()
    server = Server("--name", "a.chat", "--sid", "1AA", "--link-password", PASSWORD, "--link", "hub.test",
                    "--link-port", str(port), "--link-tls", "off")
    server.link_port = port
    try:
        wait_for_port(port)
    except Exception:
        server.stop()
        raise
    return server


def attacker(port):
    return socket.create_connection(("127.0.0.1", port), timeout=10, source_address=("127.0.0.2", 0))


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def read_all(sock, limit=1 << 20):
    """What the peer sends until it closes (or 10 s of silence)."""
    seen = b""
    sock.settimeout(10)
    try:
        while len(seen) < limit:
            chunk = sock.recv(65536)
            if not chunk:
                break
            seen += chunk
    except (socket.timeout, ConnectionResetError):
        pass
    return seen


def test_an_endless_capab_is_refused_and_holds_no_memory():
    server = link_server()
    try:
        before = rss_kib(server.process.pid)
        s = attacker(server.link_port)
        s.sendall(b"CAPAB START 1205\r\n")
        line = b"CAPAB MODULES :" + b" ".join([b"m_module%05d.so" % i for i in range(900)]) + b"\r\n"
        sent = 0
        try:
            for _ in range(2000):  # 30 MiB if nothing stopped it
                s.sendall(line)
                sent += len(line)
        except (BrokenPipeError, ConnectionResetError):
            pass
        answer = read_all(s)
        s.close()
        after = rss_kib(server.process.pid)
        print(f"\nendless CAPAB: {sent} bytes sent before the close; server RSS {before} KiB -> {after} KiB")
        assert b"more than a handshake" in answer or sent < 2000 * len(line), answer[-300:]
        assert after - before < 32 * 1024, "the server kept what it was sent"
        bystander = RawClient(server.port)
        bystander.register("bystander")
    finally:
        server.stop()


def test_one_address_holds_a_few_link_handshakes_not_every_descriptor():
    server = link_server()
    held = []
    try:
        for _ in range(300):
            held.append(attacker(server.link_port))
        # Each one the server kept is sent our CAPAB at once; one it refused is closed at once.
        kept = 0
        for s in held:
            s.settimeout(5)
            try:
                data = s.recv(4096)
            except (socket.timeout, ConnectionResetError):
                data = b""
            if data.startswith(b"CAPAB"):
                kept += 1
        print(f"\n300 connections to the link port from 127.0.0.2: {kept} kept")
        assert kept <= 4
        assert "link handshakes from 127.0.0.2 under way already" in server.log_text()
        bystander = RawClient(server.port)
        bystander.register("bystander")
    finally:
        for s in held:
            s.close()
        server.stop()


def test_password_guessing_gets_one_answer_and_is_slowed():
    server = link_server()
    try:
        answers = []
        for guess in (b"SERVER hub.test wrong 0 9ZZ :x", b"SERVER nobody.test wrong 0 9ZZ :x", b"SERVER hub.test alsowrong 0 9ZZ :x"):
            s = attacker(server.link_port)
            s.sendall(b"CAPAB START 1205\r\nCAPAB END\r\n" + guess + b"\r\n")
            answers.append([l for l in read_all(s).split(b"\r\n") if l.startswith(b"ERROR")][-1])
            s.close()
        print(f"\nthe refusals: {answers}")
        assert len(set(answers)) == 1, "an unknown name and a wrong password answered alike"
        s = attacker(server.link_port)
        assert read_all(s) == b"", "the fourth try is closed before a word"
        s.close()
        assert "failed to authenticate 3 times in a minute" in server.log_text()
    finally:
        server.stop()
