"""Files through the host and HTTPS on the web port: an IRC connection is given an upload URL
(`soju.im/FILEHOST`), POSTs a file there and anyone downloads it by its link, as an attachment
with its bytes unchanged; sizes, quotas, retention, hostile names and traversal in the URLs; the
same port speaking HTTP and HTTPS, told apart by the first byte."""
import base64
import hashlib
import http.client
import json
import os
import re
import socket
import ssl
import time
import urllib.parse

import pytest

from conftest import RawClient, Server, free_port, wait_for_port


def web_server(*extra):
    port = free_port()
    server = Server("--web-port", str(port), *extra)
    server.web_port = port
    wait_for_port(port)
    return server


@pytest.fixture
def web(tmp_path):
    server = web_server("--data-dir", str(tmp_path / "data"), "--upload-max-size", "64K", "--upload-quota", "100K")
    server.data = tmp_path / "data"
    yield server
    server.stop()


def filehost(client):
    """The soju.im/FILEHOST URL from the client's 005 lines."""
    client.send("VERSION")
    line = client.wait_for(lambda l: "soju.im/FILEHOST=" in l or " 351 " in l)
    if "soju.im/FILEHOST=" not in line:
        line = client.wait_for(lambda l: "soju.im/FILEHOST=" in l)
    return re.search(r"soju\.im/FILEHOST=(\S+)", line).group(1)


def request(url, method="GET", body=None, headers=None, context=None):
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "https":
        connection = http.client.HTTPSConnection(parts.hostname, parts.port, timeout=10, context=context)
    else:
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    connection.request(method, parts.path + (("?" + parts.query) if parts.query else ""), body=body, headers=headers or {})
    response = connection.getresponse()
    data = response.read()
    connection.close()
    return response, data


def upload(url, data, name, content_type="application/octet-stream"):
    quoted = urllib.parse.quote(name, safe="")
    return request(url, "POST", data, {"Content-Type": content_type, "Content-Disposition": f"attachment; filename*=UTF-8''{quoted}"})


def test_an_upload_is_served_back_whole_as_an_attachment(web):
    alice = RawClient(web.port)
    alice.register("alice")
    url = filehost(alice)
    assert url.startswith(f"http://127.0.0.1:{web.web_port}/upload/"), url
    # OPTIONS says what the URL takes (the FILEHOST spec).
    response, _ = request(url, "OPTIONS")
    assert response.status == 204 and "POST" in response.getheader("Allow")
    # A page that would run if it were rendered, under a name that tries to climb out.
    page = b"<html><script>alert(1)</script></html>" * 100
    response, body = upload(url, page, "../../etc/\u202egnp.html", "text/html")
    assert response.status == 201, body
    location = response.getheader("Location")
    info = json.loads(body)
    assert info["url"] == location and info["size"] == len(page)
    assert info["sha256"] == hashlib.sha256(page).hexdigest()
    assert info["name"] == "gnp.html", "only the last part of the name, without bidi controls"
    assert re.fullmatch(rf"http://127\.0\.0\.1:{web.web_port}/files/[0-9a-f]{{24}}/gnp\.html", location), location
    response, got = request(location)
    assert response.status == 200 and got == page
    assert response.getheader("Content-Type") == "application/octet-stream", "never served as HTML"
    assert response.getheader("Content-Disposition").startswith("attachment;")
    assert response.getheader("X-Content-Type-Options") == "nosniff"
    assert "sandbox" in response.getheader("Content-Security-Policy")
    # HEAD: the same headers, no body.
    response, got = request(location, "HEAD")
    assert response.status == 200 and got == b"" and response.getheader("Content-Length") == str(len(page))
    # Stored in the data directory, readable by the server alone, with no part left over.
    files = os.listdir(web.data / "uploads")
    assert len([f for f in files if f.endswith(".meta")]) == 1 and not any(f.endswith(".part") for f in files)
    alice.send("QUIT")


def test_sizes_quotas_tokens_and_traversal_are_refused(web):
    bob = RawClient(web.port)
    bob.register("bob")
    url = filehost(bob)
    # Past --upload-max-size (64K): refused from the headers, before the body is sent.
    with socket.create_connection(("127.0.0.1", web.web_port), timeout=10) as s:
        path = urllib.parse.urlsplit(url).path
        s.sendall(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {1 << 20}\r\n\r\n".encode())
        answer = s.recv(4096).decode()
        assert answer.startswith("HTTP/1.1 413 "), answer
    # The quota (100K): one of 60K fits, a second does not (507), and nothing is left of it.
    response, _ = upload(url, b"a" * 60_000, "one.bin")
    assert response.status == 201
    response, body = upload(url, b"b" * 60_000, "two.bin")
    assert response.status == 507 and b"quota" in body
    # A token nobody was given, and no token at all.
    base = url.rsplit("/", 1)[0]
    response, _ = upload(base + "/" + "0" * 32, b"x", "x.txt")
    assert response.status == 403
    response, _ = upload(base, b"x", "x.txt")
    assert response.status == 401
    # Traversal in the download URLs is refused or finds nothing; the database is never served.
    for path in ["/files/../server.db", "/files/%2e%2e/server.db", "/files/..%2fserver.db", "/files/" + "f" * 24 + "/x",
                 "/files/uploads/../../server.db"]:
        with socket.create_connection(("127.0.0.1", web.web_port), timeout=10) as s:
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
            answer = b""
            while chunk := s.recv(65536):
                answer += chunk
            status = answer.split(b"\r\n", 1)[0].decode()
            assert status in ("HTTP/1.1 400 Bad Request", "HTTP/1.1 404 Not Found"), (path, status)
            assert b"SQLite" not in answer
    # The link lasts as long as its IRC connection.
    bob.send("QUIT :bye")
    bob.wait_for(lambda l: l.startswith("ERROR"))
    deadline = time.monotonic() + 10
    while True:
        response, _ = upload(url, b"late", "late.txt")
        if response.status == 403 or time.monotonic() > deadline:
            break
    assert response.status == 403


def test_an_upload_cut_off_leaves_nothing_and_the_server_serves_on(web):
    carol = RawClient(web.port)
    carol.register("carol")
    url = filehost(carol)
    path = urllib.parse.urlsplit(url).path
    s = socket.create_connection(("127.0.0.1", web.web_port), timeout=10)
    s.sendall(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 50000\r\n\r\n".encode() + b"z" * 20_000)
    # The part is on disk while it arrives...
    deadline = time.monotonic() + 10
    while not any(f.endswith(".part") for f in os.listdir(web.data / "uploads")):
        assert time.monotonic() < deadline, "the upload's part never appeared"
        time.sleep(0.02)
    s.close()
    # ...and gone when the sender vanishes mid-file; the next upload works.
    deadline = time.monotonic() + 10
    while any(f.endswith(".part") for f in os.listdir(web.data / "uploads")):
        assert time.monotonic() < deadline, "a cut-off upload's part was left behind"
        time.sleep(0.02)
    response, _ = upload(url, b"fine", "fine.txt", "text/plain")
    assert response.status == 201
    carol.send("PING :still")
    carol.wait_for(lambda l: "PONG" in l and "still" in l)


def test_files_past_their_days_are_deleted_at_start(tmp_path):
    uploads = tmp_path / "data" / "uploads"
    uploads.mkdir(parents=True)
    old, fresh = "a" * 24, "b" * 24
    for name, when in [(old, time.time() - 10 * 86400), (fresh, time.time() - 3600)]:
        (uploads / name).write_bytes(b"data")
        (uploads / (name + ".meta")).write_text(f"4\t{when}\taddress:127.0.0.1\t{'0' * 64}\ttext/plain\tnote.txt\n")
    (uploads / ("c" * 24 + ".part")).write_bytes(b"half")
    (uploads / ("d" * 24)).write_bytes(b"no description: a crash between the rename and the meta")
    server = web_server("--data-dir", str(tmp_path / "data"), "--upload-days", "7")
    try:
        response, _ = request(f"http://127.0.0.1:{server.web_port}/files/{old}/note.txt")
        assert response.status == 404
        response, got = request(f"http://127.0.0.1:{server.web_port}/files/{fresh}/note.txt")
        assert response.status == 200 and got == b"data"
        assert sorted(os.listdir(uploads)) == [fresh, fresh + ".meta"], "the old file, its meta, the part and the orphan are gone"
    finally:
        server.stop()


def test_the_web_port_speaks_http_and_https_by_the_first_byte(tmp_path):
    tls_port = free_port()
    server = web_server("--data-dir", str(tmp_path / "data"), "--tls-port", str(tls_port))
    try:
        wait_for_port(tls_port)
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        response, body = request(f"http://127.0.0.1:{server.web_port}/info.json")
        plain = json.loads(body)
        assert response.status == 200 and plain["tls"] is False and plain["selfSigned"] is True
        assert re.fullmatch(r"([0-9A-F]{2}:){31}[0-9A-F]{2}", plain["fingerprint"])
        response, body = request(f"https://127.0.0.1:{server.web_port}/info.json", context=context)
        secure = json.loads(body)
        assert response.status == 200 and secure["tls"] is True and secure["fingerprint"] == plain["fingerprint"]
        # The certificate on the web port is the server's own (the fingerprint the page shows).
        with socket.create_connection(("127.0.0.1", server.web_port)) as raw, context.wrap_socket(raw) as tls:
            digest = hashlib.sha256(tls.getpeercert(binary_form=True)).hexdigest().upper()
            assert ":".join(digest[i:i + 2] for i in range(0, 64, 2)) == plain["fingerprint"]
        # An IRC client over TLS is given an https upload URL, and the upload works over it.
        raw = socket.create_connection(("127.0.0.1", tls_port), timeout=10)
        client = RawClient.__new__(RawClient)
        client.sock = context.wrap_socket(raw)
        client.buffer = b""
        client.register("tina")
        url = filehost(client)
        assert url.startswith(f"https://127.0.0.1:{server.web_port}/upload/"), url
        response, body = request(url, "POST", b"secret", {"Content-Disposition": "attachment; filename=\"s.txt\""}, context=context)
        assert response.status == 201, body
        response, got = request(response.getheader("Location"), context=context)
        assert got == b"secret"
        # An account uploads with HTTP Basic over HTTPS (soju's way), to /upload; a wrong password
        # is 401 and the same password over plain HTTP is refused before it is looked at.
        client.send("REGISTER tina * correct-horse-battery")
        client.wait_for(lambda l: "REGISTER SUCCESS" in l)
        good = base64.b64encode(b"tina:correct-horse-battery").decode()
        bad = base64.b64encode(b"tina:wrong-password!").decode()
        response, body = request(f"https://127.0.0.1:{server.web_port}/upload", "POST", b"by account",
                                 {"Authorization": "Basic " + good, "Content-Disposition": "attachment; filename=\"a.txt\""}, context=context)
        assert response.status == 201, body
        response, got = request(response.getheader("Location"), context=context)
        assert got == b"by account"
        response, _ = request(f"https://127.0.0.1:{server.web_port}/upload", "POST", b"x", {"Authorization": "Basic " + bad}, context=context)
        assert response.status == 401 and response.getheader("WWW-Authenticate").startswith("Basic ")
        response, _ = request(f"http://127.0.0.1:{server.web_port}/upload", "POST", b"x", {"Authorization": "Basic " + good})
        assert response.status == 403
        # A WebSocket over TLS on the same port.
        from websockets.sync.client import connect
        with connect(f"wss://127.0.0.1:{server.web_port}/irc", subprotocols=["text.ircv3.net"], ssl=context) as ws:
            ws.send("NICK wss")
            ws.send("USER wss 0 * :over tls")
            deadline = time.monotonic() + 10
            while "001" not in (message := ws.recv(timeout=10)).split(" ")[1:2]:
                assert time.monotonic() < deadline
        client.send("QUIT")
    finally:
        server.stop()


def test_chat_tui_uploads_a_file_another_downloads_it_with_the_same_sha256(web, tmp_path):
    from test_lines_mode import LinesClient
    source = tmp_path / "report 2026.pdf"
    payload = os.urandom(50_000)
    source.write_bytes(payload)
    alice = LinesClient(web.port, "alice", "--download-dir", str(tmp_path / "alice-dl"), "--no-logs")
    bob = LinesClient(web.port, "bob", "--download-dir", str(tmp_path / "bob-dl"), "--no-logs")
    try:
        alice.wait_for("[#lobby] -!- You joined #lobby")
        bob.wait_for("[#lobby] -!- You joined #lobby")
        alice.type(f"/upload {source}")
        alice.wait_for("Uploaded report 2026.pdf (48.8 KiB); SHA-256 " + hashlib.sha256(payload).hexdigest())
        shared = bob.wait_for("shared report 2026.pdf")
        assert shared.endswith("* alice shared report 2026.pdf (48.8 KiB) — /download 1"), shared
        bob.type("/download 1")
        done = bob.wait_for("Downloaded report 2026.pdf")
        assert hashlib.sha256(payload).hexdigest() in done
        assert (tmp_path / "bob-dl" / "report 2026.pdf").read_bytes() == payload
        # A second download of the same file never overwrites the first.
        bob.type("/download 1")
        bob.wait_for("saved as " + str(tmp_path / "bob-dl" / "report 2026 (1).pdf"))
        bob.type("/download 7")
        bob.wait_for("No shared file 7")
        # A message that only looks like a share (other words, another host) stays what it was.
        peer = RawClient(web.port)
        peer.register("mallory")
        fake = "https://evil.example/files/0123456789abcdef01234567/x.exe"
        peer.send(f"PRIVMSG #lobby :do not open {fake}")
        peer.send(f"PRIVMSG #lobby :x.exe (1 KiB) {fake}")
        bob.wait_for(f"<mallory> do not open {fake}")
        bob.wait_for(f"<mallory> x.exe (1 KiB) {fake}")
        assert not any("mallory shared" in line for line in bob.output)
    finally:
        for client in (alice, bob):
            client.type("/quit")
            try:
                client.process.wait(timeout=10)
            except Exception:
                client.process.kill()


def test_an_upload_that_expects_100_continue_is_told_to_go_on(web):
    dana = RawClient(web.port)
    dana.register("dana")
    path = urllib.parse.urlsplit(filehost(dana)).path
    with socket.create_connection(("127.0.0.1", web.web_port), timeout=10) as s:
        s.sendall(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n".encode())
        assert s.recv(4096).startswith(b"HTTP/1.1 100 Continue\r\n\r\n"), "curl waits a second for this before a large body"
        s.sendall(b"hello")
        answer = b""
        while b"\r\n\r\n" not in answer:
            answer += s.recv(4096)
        assert answer.startswith(b"HTTP/1.1 201 ")


def test_a_stalled_upload_is_closed_and_the_disk_and_total_are_bounded(tmp_path):
    server = web_server("--data-dir", str(tmp_path / "data"), "--upload-quota", "1M", "--upload-total", "100K",
                        "--web-url", "http://chat.example.org:8443")
    try:
        erin = RawClient(server.port)
        erin.register("erin")
        url = filehost(erin)
        # --web-url: the address others reach, whatever this client connected to.
        assert url.startswith("http://chat.example.org:8443/upload/"), url
        local = f"http://127.0.0.1:{server.web_port}" + urllib.parse.urlsplit(url).path
        response, _ = upload(local, b"a" * 60_000, "one.bin")
        assert response.status == 201 and response.getheader("Location").startswith("http://chat.example.org:8443/files/")
        # Under the owner's quota, past everyone's total: 507.
        response, body = upload(local, b"b" * 60_000, "two.bin")
        assert response.status == 507 and b"no room" in body
        # A sender that stops sending (under 64 KiB in 10 s) is answered 408 and its part removed.
        with socket.create_connection(("127.0.0.1", server.web_port), timeout=40) as s:
            path = urllib.parse.urlsplit(local).path
            s.sendall(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 30000\r\n\r\n".encode() + b"z" * 100)
            answer = s.recv(4096)
            assert answer.startswith(b"HTTP/1.1 408 "), answer
        assert not any(f.endswith(".part") for f in os.listdir(tmp_path / "data" / "uploads"))
    finally:
        server.stop()


def test_a_file_shared_over_tls_downloads_over_plain_text_and_the_reverse(tmp_path):
    """Issue 42, item 4: one chat-tui on the TLS port, one on the plain port: each sees the other's
    upload as `/download N` and fetches it whole (the same SHA-256), the TLS one over HTTPS checked
    against the IRC connection's certificate, the plain one over HTTP."""
    from test_lines_mode import LinesClient
    web_port, tls_port = free_port(), free_port()
    server = Server("--web-port", str(web_port), "--tls-port", str(tls_port), "--data-dir", str(tmp_path / "data"),
                    "--upload-max-size", "1M")
    clients = []
    try:
        wait_for_port(web_port)
        wait_for_port(tls_port)
        from conftest import wait_for
        wait_for(lambda: "SHA-256" in server.log_text(), 10, "the TLS line", server.log_text)
        fingerprint = server.log_text().split("SHA-256 ")[1].split()[0]
        secure = LinesClient(tls_port, "secure", "--tls", "--tls-fingerprint", fingerprint, "--download-dir", str(tmp_path / "secure-dl"),
                             "--no-logs")
        clients.append(secure)
        plain = LinesClient(server.port, "plain", "--download-dir", str(tmp_path / "plain-dl"), "--no-logs")
        clients.append(plain)
        secure.wait_for("[#lobby] -!- You joined #lobby")
        plain.wait_for("[#lobby] -!- You joined #lobby")
        for sender, receiver, name in ((secure, plain, "over-tls.bin"), (plain, secure, "over-plain.bin")):
            payload = os.urandom(40_000)
            (tmp_path / name).write_bytes(payload)
            digest = hashlib.sha256(payload).hexdigest()
            sender.type(f"/upload {tmp_path / name}")
            sender.wait_for(f"Uploaded {name}")
            shared = receiver.wait_for(f"shared {name}")
            number = shared.rsplit("/download ", 1)[1].strip()
            receiver.type(f"/download {number}")
            done = receiver.wait_for(f"Downloaded {name}", timeout=20)
            assert digest in done, done
        assert (tmp_path / "plain-dl" / "over-tls.bin").exists() and (tmp_path / "secure-dl" / "over-plain.bin").exists()
    finally:
        for client in clients:
            client.type("/quit")
            try:
                client.process.wait(timeout=10)
            except Exception:
                client.process.kill()
        server.stop()


def test_trickling_uploads_hold_two_slots_an_address_and_are_closed(tmp_path):
    """Issue 43, item 3: uploads trickling 4.2 KB every few seconds held all 16 slots from two
    addresses. Now one address holds two at most, whatever owners it uses; everyone else
    uploads; and a body under 64 KiB in 10 s is answered 408 and its slot freed."""
    server = web_server("--data-dir", str(tmp_path / "data"), "--upload-max-size", "100M")
    held = []
    try:
        def token_url(source):
            c = RawClient.__new__(RawClient)
            c.sock = socket.create_connection(("127.0.0.1", server.port), timeout=5, source_address=(source, 0))
            c.buffer = b""
            c.register(f"g{len(held)}{source.replace('.', '')[-3:]}")
            held.append(c)
            return urllib.parse.urlsplit(filehost(c)).path

        def start_upload(source, path):
            s = socket.create_connection(("127.0.0.1", server.web_port), timeout=15, source_address=(source, 0))
            s.sendall(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {100 << 20}\r\n\r\n".encode() + b"t" * 4200)
            held.append(s)
            s.settimeout(0.5)
            try:
                return s.recv(4096)
            except socket.timeout:
                return b""  # taken: the server waits for the rest

        answers = []
        for source in ("127.0.0.2", "127.0.0.3"):
            for owner in range(4):  # four guests (four owners) on one address, two uploads each
                path = token_url(source)
                answers += [start_upload(source, path) for _ in range(2)]
        taken = sum(1 for a in answers if a == b"")
        refused = sum(1 for a in answers if a.startswith(b"HTTP/1.1 429 "))
        print(f"\n16 trickling uploads from two addresses: {taken} taken, {refused} refused (429)")
        assert taken == 4 and refused == 12, answers
        # Everyone else still uploads.
        bystander = RawClient(server.port)
        bystander.register("bystander")
        response, _ = upload(f"http://127.0.0.1:{server.web_port}" + urllib.parse.urlsplit(filehost(bystander)).path, b"x" * 10_000, "mine.txt")
        assert response.status == 201
        # A trickle under the floor is closed with 408 when its window ends (waited for, not timed).
        stalled = next(s for s, a in zip([h for h in held if isinstance(h, socket.socket)], answers) if a == b"")
        stalled.settimeout(30)
        answer = stalled.recv(4096)
        assert answer.startswith(b"HTTP/1.1 408 ") and b"under 64 KiB" in answer, answer
    finally:
        for h in held:
            try:
                h.close()
            except Exception:
                pass
        server.stop()


def test_an_upload_and_a_request_sent_behind_it_are_answered_in_order(web):
    """The file is stored by the upload worker, off the loop: a request sent right behind its body
    on the same kept-alive connection is answered after the upload's 201, never before; a body
    sent in pieces arrives whole."""
    dana = RawClient(web.port)
    dana.register("dana")
    path = urllib.parse.urlsplit(filehost(dana)).path
    body = os.urandom(60 * 1024)
    with socket.create_connection(("127.0.0.1", web.web_port), timeout=10) as s:
        head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{web.web_port}\r\nContent-Length: {len(body)}\r\nContent-Disposition: attachment; filename=a.bin\r\n\r\n"
        s.sendall(head.encode() + body[:1000])
        for n in range(1000, len(body), 7000):
            s.sendall(body[n:n + 7000])
        s.sendall(b"GET /info.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        answers = b""
        while answers.count(b"HTTP/1.1 ") < 2 or not answers.rstrip().endswith(b"}"):
            chunk = s.recv(65536)
            assert chunk, f"closed after {answers!r}"
            answers += chunk
    first, second = answers.split(b"HTTP/1.1 ")[1:3]
    assert first.startswith(b"201 "), answers[:300]
    assert second.startswith(b"200 "), answers[:600]
    stored = json.loads(first.split(b"\r\n\r\n", 1)[1].split(b"HTTP/1.1")[0])
    assert stored["sha256"] == hashlib.sha256(body).hexdigest()
    response, data = request(stored["url"])
    assert response.status == 200 and data == body
    dana.close()
