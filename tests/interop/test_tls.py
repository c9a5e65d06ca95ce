"""TLS on the server: a raw `openssl s_client` registers, catgirl (TLS only) joins a room,
a TLS hello on the plain port is answered in plain text, a stalled handshake delays nobody,
and the self-signed certificate is made once and kept."""
import os
import shutil
import socket
import ssl
import subprocess
import time

import pytest

from conftest import BINARY, RawClient, Server, free_port, sha256, wait_for, end_tmux

SOCKET = f"chat-tui-tls-{os.getpid()}"


@pytest.fixture
def tls_server(tmp_path):
    tls_port = free_port()
    server = Server("--tls-port", str(tls_port), "--data-dir", str(tmp_path / "data"))
    server.tls_port = tls_port
    server.data = tmp_path / "data"
    yield server
    server.stop()


def tls_socket(port):
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    return context.wrap_socket(raw)


def read_until(sock, text, limit=1 << 16):
    seen = b""
    while text.encode() not in seen and len(seen) < limit:
        chunk = sock.recv(4096)
        if not chunk:
            break
        seen += chunk
    return seen.decode(errors="replace")


def test_openssl_s_client_registers_and_the_key_is_private(tls_server):
    session = subprocess.run(
        ["openssl", "s_client", "-connect", f"127.0.0.1:{tls_server.tls_port}", "-quiet", "-verify_quiet"],
        input="NICK viaopenssl\r\nUSER u 0 * :u\r\nQUIT :done\r\n", capture_output=True, text=True, timeout=20)
    assert " 001 viaopenssl " in session.stdout, session.stdout + session.stderr
    key = tls_server.data / "tls-key.pem"
    assert oct(os.stat(key).st_mode & 0o777) == "0o600"
    log = tls_server.log_text()
    assert "(made now, self-signed), SHA-256 " in log and "registered as viaopenssl" in log


def test_the_certificate_is_kept_across_restarts(tmp_path):
    data = tmp_path / "data"
    fingerprints, made = [], []
    for _ in range(2):
        server = Server("--tls-port", str(free_port()), "--data-dir", str(data))
        wait_for(lambda: "SHA-256" in server.log_text(), 10, "the TLS line", server.log_text)
        log = server.log_text()
        fingerprints.append(log.split("SHA-256 ")[1].split()[0])
        made.append("made now" in log)
        server.stop()
    assert fingerprints[0] == fingerprints[1] and made == [True, False]


def test_a_tls_hello_on_the_plain_port_is_told_where_tls_is(tls_server):
    sock = socket.create_connection(("127.0.0.1", tls_server.port), timeout=10)
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with pytest.raises((ssl.SSLError, OSError)):
        context.wrap_socket(sock)
    # The same again by hand, to read the answer: a ClientHello's first bytes, then the reply.
    raw = socket.create_connection(("127.0.0.1", tls_server.port), timeout=10)
    raw.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
    answer = read_until(raw, "\r\n")
    assert answer == f"ERROR :This is the plain-text port; TLS is on port {tls_server.tls_port}\r\n"
    assert f"spoke TLS to the plain port; told: This is the plain-text port; TLS is on port {tls_server.tls_port}" in tls_server.log_text()


def test_a_stalled_handshake_delays_nobody(tls_server):
    # Half a ClientHello, then silence: the loop must not wait on it.
    stalled = socket.create_connection(("127.0.0.1", tls_server.tls_port), timeout=10)
    stalled.sendall(b"\x16\x03\x01\x02\x00\x01\x00")
    silent = socket.create_connection(("127.0.0.1", tls_server.tls_port), timeout=10)
    bystander = tls_socket(tls_server.tls_port)
    bystander.sendall(b"NICK bystander\r\nUSER b 0 * :b\r\nPING :still-here\r\n")
    assert "PONG" in read_until(bystander, "still-here")
    plain = RawClient(tls_server.port)
    plain.register("plainuser")
    bystander.sendall(b"PRIVMSG #lobby :over tls\r\n")
    plain.wait_for(lambda l: l.endswith("PRIVMSG #lobby :over tls"))
    for s in (stalled, silent, bystander):
        s.close()


def tmux(*args):
    return subprocess.run(["tmux", "-u", "-L", SOCKET, *args], check=True, capture_output=True, text=True).stdout


def test_catgirl_joins_over_tls(tls_server, tmp_path):
    if not shutil.which("catgirl") or not shutil.which("tmux"):
        pytest.fail("catgirl and tmux are needed: make deps installs them")
    # catgirl -o prints the server's certificate; -t trusts that one (it is self-signed).
    printed = subprocess.run(["catgirl", "-o", "-h", "127.0.0.1", "-p", str(tls_server.tls_port)],
                             capture_output=True, text=True, timeout=20)
    assert "BEGIN CERTIFICATE" in printed.stdout, printed.stderr
    trusted = tmp_path / "chat-tui.pem"
    trusted.write_text(printed.stdout)
    assert open(tls_server.data / "tls-certificate.pem").read().strip() in printed.stdout
    peer = RawClient(tls_server.port)
    peer.register("peer")
    home = tmp_path / "home"
    home.mkdir()
    try:
        tmux("new-session", "-d", "-s", "catgirl", "-x", "100", "-y", "30",
             f"HOME={home} LANG=C.UTF-8 TERM=xterm-256color catgirl -h 127.0.0.1 -p {tls_server.tls_port} "
             f"-t {trusted} -n kitty -j '#lobby'")
        peer.wait_for(lambda l: l.startswith(":kitty!") and " JOIN " in l, timeout=20)
        peer.send("PRIVMSG #lobby :hello kitty")
        wait_for(lambda: "hello kitty" in tmux("capture-pane", "-p", "-t", "catgirl"), 20, "catgirl to show the message",
                 lambda: tmux("capture-pane", "-p", "-t", "catgirl"))
        tmux("send-keys", "-t", "catgirl", "-l", "meow from catgirl")
        tmux("send-keys", "-t", "catgirl", "Enter")
        peer.wait_for(lambda l: l.startswith(":kitty!") and l.endswith("PRIVMSG #lobby :meow from catgirl"), timeout=20)
    finally:
        end_tmux(SOCKET)


def make_ca_signed(directory, name="chat.example"):
    """A CA and a certificate it signed for `name`, with the openssl command-line tool."""
    directory.mkdir(parents=True, exist_ok=True)
    run = lambda *args: subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=directory)
    run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "ca.key",
        "-out", "ca.pem", "-days", "2", "-subj", "/CN=test CA")
    run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "leaf.key",
        "-out", "leaf.csr", "-subj", f"/CN={name}")
    (directory / "ext.cnf").write_text(f"subjectAltName=DNS:{name},IP:127.0.0.1\n")
    run("x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", "leaf.pem", "-days", "2", "-extfile", "ext.cnf")
    return directory / "leaf.pem", directory / "leaf.key", directory / "ca.pem"


def cap_ls(sock):
    sock.sendall(b"CAP LS 302\r\n")
    return read_until(sock, "\r\n").strip()


def test_a_verifiable_certificate_advertises_sts_and_whois_says_secure(tmp_path, monkeypatch):
    cert, key, ca = make_ca_signed(tmp_path / "pki")
    # The server checks its chain against the system store: here, a store of this CA alone.
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))
    tls_port = free_port()
    server = Server("--tls-port", str(tls_port), "--tls-cert", str(cert), "--tls-key", str(key), "--data-dir", str(tmp_path / "data"))
    try:
        plain = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        assert f"sts=port={tls_port},duration=2592000" in cap_ls(plain)
        secure = tls_socket(tls_port)
        listed = cap_ls(secure)
        assert "sts=duration=2592000" in listed and "sts=port" not in listed
        secure.sendall(b"CAP END\r\nNICK shielded\r\nUSER s 0 * :s\r\nWHOIS shielded\r\n")
        assert "671 shielded shielded :is using a secure connection" in read_until(secure, " 318 ")
    finally:
        server.stop()


def test_self_signed_advertises_no_sts(tls_server):
    plain = socket.create_connection(("127.0.0.1", tls_server.port), timeout=10)
    assert "sts=" not in cap_ls(plain)


def test_a_private_ca_advertises_no_sts(tmp_path):
    cert, key, _ = make_ca_signed(tmp_path / "pki")
    server = Server("--tls-port", str(free_port()), "--tls-cert", str(cert), "--tls-key", str(key), "--data-dir", str(tmp_path / "data"))
    try:
        plain = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        assert "sts=" not in cap_ls(plain)
    finally:
        server.stop()


def test_a_peer_closing_without_close_notify_harms_no_one_else(tls_server):
    # Handshake, then a bare FIN: OpenSSL calls it an unexpected EOF. It must not leave an
    # error behind that a later read or write on another connection would take for its own.
    for _ in range(5):
        raw = socket.create_connection(("127.0.0.1", tls_server.tls_port), timeout=10)
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        wrapped = context.wrap_socket(raw)
        # Close the descriptor under the TLS layer: a FIN with no close_notify before it.
        socket.socket(fileno=wrapped.detach()).close()
    # A record split across two TCP writes: the server's read wants more bytes in between.
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    tls = context.wrap_bio(incoming, outgoing)
    raw = socket.create_connection(("127.0.0.1", tls_server.tls_port), timeout=10)
    while True:
        try:
            tls.do_handshake()
            break
        except ssl.SSLWantReadError:
            raw.sendall(outgoing.read())
            incoming.write(raw.recv(65536))
    raw.sendall(outgoing.read())
    tls.write(b"NICK splitter\r\nUSER s 0 * :s\r\nPING :split-record\r\n")
    record = outgoing.read()
    raw.sendall(record[:7])
    time.sleep(0.2)  # best effort, not synchronisation: gives the server the first part alone
    raw.sendall(record[7:])
    seen = b""
    while b"split-record" not in seen:
        chunk = raw.recv(65536)
        assert chunk, "the server dropped the connection"
        incoming.write(chunk)
        # Every record that arrived: one recv may bring several (the server writes a long
        # reply and the lines after it as records of their own), and read() gives one at a time.
        while True:
            try:
                seen += tls.read(65536)
            except ssl.SSLWantReadError:
                break
    assert b"PONG" in seen
    assert "Protocol error" not in tls_server.log_text()


def test_no_plaintext_closes_the_plain_port(tmp_path):
    tls_port = free_port()
    server = Server.__new__(Server)
    # Started by hand: the fixture waits for the plain port, which must stay closed here.
    server.port = free_port()
    log = open(tmp_path / "log", "w")
    process = subprocess.Popen([BINARY, "--serve", "--headless", "--bind", "127.0.0.1", "--port", str(server.port),
                                "--tls-port", str(tls_port), "--no-plaintext", "--web-port", "0", "--data-dir", str(tmp_path / "data")],
                               stdout=log, stderr=subprocess.STDOUT)
    try:
        from conftest import wait_for_port
        wait_for_port(tls_port)
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", server.port), timeout=2)
        secure = tls_socket(tls_port)
        secure.sendall(b"NICK only\r\nUSER o 0 * :o\r\n")
        assert " 001 only " in read_until(secure, " 001 ")
    finally:
        process.terminate()
        process.wait(timeout=5)
        log.close()


def test_sighup_reloads_the_certificate_without_dropping_anyone(tmp_path):
    cert, key, _ = make_ca_signed(tmp_path / "first")
    live = tmp_path / "live"
    live.mkdir()
    shutil.copy(cert, live / "cert.pem")
    shutil.copy(key, live / "key.pem")
    tls_port = free_port()
    server = Server("--tls-port", str(tls_port), "--tls-cert", str(live / "cert.pem"), "--tls-key", str(live / "key.pem"),
                    "--data-dir", str(tmp_path / "data"))
    try:
        before = tls_socket(tls_port)
        first = before.getpeercert(binary_form=True)
        before.sendall(b"NICK stayer\r\nUSER s 0 * :s\r\n")
        read_until(before, " 366 ")
        renewed, renewed_key, _ = make_ca_signed(tmp_path / "second")
        shutil.copy(renewed, live / "cert.pem")
        shutil.copy(renewed_key, live / "key.pem")
        server.process.send_signal(1)
        wait_for(lambda: "TLS certificate reloaded" in server.log_text(), 10, "the reload", server.log_text)
        after = tls_socket(tls_port)
        assert after.getpeercert(binary_form=True) != first, "a new connection gets the new certificate"
        before.sendall(b"PING :still-here\r\n")
        assert "still-here" in read_until(before, "still-here"), "the connection from before is still up"
    finally:
        server.stop()


def test_lines_pipelined_over_tls_all_arrive(tls_server):
    watcher = RawClient(tls_server.port)
    watcher.register("watcher")
    sender = tls_socket(tls_server.tls_port)
    sender.sendall(b"NICK piper\r\nUSER p 0 * :p\r\n")
    read_until(sender, " 366 ")
    # Many records in one burst, then a PING: every line must be read, none left in the session.
    burst = b"".join(b"PRIVMSG #lobby :line %d\r\n" % i for i in range(3000))
    sender.sendall(burst + b"PING :after-burst\r\n")
    assert "after-burst" in read_until(sender, "after-burst", limit=1 << 22)
    seen = []
    watcher.wait_for(lambda l: seen.append(l) or l.endswith(":line 2999"), timeout=20)
    numbers = [int(l.rsplit(" ", 1)[1]) for l in seen if " PRIVMSG #lobby :line " in l]
    assert numbers == list(range(3000))


def test_sslscan_finds_only_modern_forward_secret_tls(tls_server, tmp_path):
    """The TLS port and the web port (which speaks the same TLS) as Debian's sslscan sees them:
    TLS 1.2 and 1.3 only, every suite forward secret (ECDHE) and AEAD, elliptic-curve groups
    only, no renegotiation, no Heartbleed (issue 28's security figures)."""
    if not shutil.which("sslscan"):
        pytest.fail("sslscan is missing: make deps installs it")
    import xml.etree.ElementTree as ET
    web_port = free_port()
    web = Server("--web-port", str(web_port), "--tls-port", str(free_port()), "--data-dir", str(tmp_path / "web"))
    try:
        for port in (tls_server.tls_port, web_port):
            out = subprocess.run(["sslscan", "--no-colour", f"--xml={tmp_path}/scan-{port}.xml", f"127.0.0.1:{port}"],
                                 capture_output=True, text=True, timeout=180)
            report = ET.parse(tmp_path / f"scan-{port}.xml").getroot().find("ssltest")
            enabled = {p.get("type") + p.get("version"): p.get("enabled") for p in report.findall("protocol")}
            assert enabled == {"ssl2": "0", "ssl3": "0", "tls1.0": "0", "tls1.1": "0", "tls1.2": "1", "tls1.3": "1"}, enabled
            ciphers = [c.get("cipher") for c in report.findall("cipher")]
            assert ciphers, out.stdout
            for cipher in ciphers:
                aead = "GCM" in cipher or "CHACHA20" in cipher
                forward_secret = cipher.startswith(("ECDHE-", "TLS_"))
                assert aead and forward_secret, f"port {port} accepts {cipher}:\n{out.stdout}"
            groups = [g.get("name") for g in report.findall("group")]
            assert groups and not any("ffdhe" in g for g in groups), groups
            for heartbleed in report.findall("heartbleed"):
                assert heartbleed.get("vulnerable") == "0"
            renegotiation = report.find("renegotiation")
            assert renegotiation is None or renegotiation.get("supported") == "0"
            if os.environ.get("CHAT_TUI_SCREENS"):
                with open(os.path.join(os.environ["CHAT_TUI_SCREENS"], f"sslscan-{port}.txt"), "w") as f:
                    f.write(out.stdout)
    finally:
        web.stop()
