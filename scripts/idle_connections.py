#!/usr/bin/env python3
"""Holds N registered, idle IRC connections against a server on 127.0.0.1 and reports
how long connecting and registering them all took and the server's memory per connection.

Usage: idle_connections.py PORT COUNT [SERVER_PID]

Everyone auto-joins the room on our server, so each arrival is announced to all who came
before it: the clients read (and count) what they are sent, as live clients would.
Connections are opened in waves of 500 so no listen backlog overflows.
"""
import os
import resource
import selectors
import socket
import sys
import time


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main():
    port, count = int(sys.argv[1]), int(sys.argv[2])
    pid = int(sys.argv[3]) if len(sys.argv) > 3 else None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if count + 64 > hard:
        sys.exit(f"need {count + 64} file descriptors, the limit is {hard}")

    base_rss = rss_kib(pid) if pid else 0
    selector = selectors.EpollSelector()
    registered = set()
    received = {}
    start = time.monotonic()
    wave = 500
    opened = 0
    deadline = start + 300
    while len(registered) < count and time.monotonic() < deadline:
        # Open the next wave once most of the previous one has registered.
        while opened < count and opened - len(registered) < wave:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setblocking(False)
            sock.connect_ex(("127.0.0.1", port))
            nick = f"idle{opened}"
            selector.register(sock, selectors.EVENT_WRITE, (nick, True))
            received[sock] = b""
            opened += 1
        for key, events in selector.select(timeout=1.0):
            sock = key.fileobj
            nick, connecting = key.data
            if connecting:
                err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if err:
                    sys.exit(f"{nick}: connect failed: {os.strerror(err)}")
                sock.send(f"NICK {nick}\r\nUSER {nick} 0 * :idle\r\n".encode())
                selector.modify(sock, selectors.EVENT_READ, (nick, False))
                continue
            try:
                data = sock.recv(1 << 20)
            except BlockingIOError:
                continue
            if not data:
                sys.exit(f"{nick}: the server closed the connection")
            if sock not in registered:
                buffered = received[sock] + data
                if b" 001 " in buffered:
                    registered.add(sock)
                    received[sock] = b""
                else:
                    received[sock] = buffered[-512:]
    elapsed = time.monotonic() - start
    if len(registered) < count:
        sys.exit(f"only {len(registered)} of {count} registered in {elapsed:.1f} s")

    # Let the announcements settle, reading as we go, then measure.
    settle_end = time.monotonic() + 2
    while time.monotonic() < settle_end:
        for key, _ in selector.select(timeout=0.2):
            try:
                key.fileobj.recv(1 << 20)
            except BlockingIOError:
                pass
    rss = rss_kib(pid) if pid else 0

    # The server must still answer a newcomer promptly.
    probe_start = time.monotonic()
    probe = socket.create_connection(("127.0.0.1", port), timeout=30)
    probe.sendall(b"NICK probe\r\nUSER probe 0 * :probe\r\n")
    data = b""
    while b" 001 " not in data:
        chunk = probe.recv(65536)
        if not chunk:
            sys.exit("the server closed the probe connection")
        data += chunk
    probe_seconds = time.monotonic() - probe_start
    probe.close()

    print(f"connections: {count}")
    print(f"time to connect and register all: {elapsed:.2f} s ({count / elapsed:.0f} per second)")
    print(f"a newcomer registered afterwards in: {probe_seconds * 1000:.0f} ms")
    if pid:
        print(f"server RSS: {base_rss} KiB before, {rss} KiB with {count} connections")
        print(f"server memory per connection: {(rss - base_rss) / count:.1f} KiB")
    for key in list(selector.get_map().values()):
        key.fileobj.close()


if __name__ == "__main__":
    main()
