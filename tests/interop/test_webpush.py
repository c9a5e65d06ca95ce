"""Web Push from our server (issue 47, item 3) to a local push service over HTTPS: an account
subscribes with WEBPUSH REGISTER (the VAPID key from 005), leaves (always-on keeps it present),
and a direct message, a mention in a room and an invitation each reach the push service as one
POST: RFC 8291 aes128gcm that this test decrypts with the subscription's private key, an RFC 8292
VAPID JWT it verifies with PyPI's `cryptography`, TTL 7 days, urgency high. A subscription whose
service answers 410 is forgotten; a MARKREAD from another device is pushed as a dismissal. The
push service's certificate is trusted through SSL_CERT_FILE, as an operator's CA would be."""
import base64
import datetime
import http.server
import json
import os
import queue
import socket
import ssl
import subprocess
import threading
import time

import pytest

from conftest import BINARY, RawClient, free_port, stop_process, wait_for_port

from cryptography import x509  # noqa: E402  (make test installs it from PyPI)
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec, utils  # noqa: E402
from cryptography.hazmat.primitives.ciphers.aead import AESGCM  # noqa: E402
from cryptography.hazmat.primitives.kdf.hkdf import HKDF  # noqa: E402
from cryptography.x509.oid import NameOID  # noqa: E402
import ipaddress  # noqa: E402


def b64u(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64u(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def certificate(directory):
    """A self-signed certificate for 127.0.0.1: the push service's, trusted by the server through SSL_CERT_FILE."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "local push service")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = directory / "push.pem", directory / "push.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return cert_path, key_path


class PushService:
    """An HTTPS server that takes POSTs as a push service does: 201, or 410 under /gone/."""

    def __init__(self, cert_path, key_path):
        self.received = queue.Queue()
        service = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                service.received.put((self.path, dict(self.headers), body, time.monotonic()))
                self.send_response(410 if self.path.startswith("/gone/") else 201)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert_path, key_path)
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def next(self, timeout=15):
        return self.received.get(timeout=timeout)

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class Subscription:
    """A browser's side of a subscription: its P-256 key and authentication secret."""

    def __init__(self, endpoint):
        self.endpoint = endpoint
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.public = self.key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
        self.auth = os.urandom(16)

    def keys(self):
        return f"p256dh={b64u(self.public)};auth={b64u(self.auth)}"

    def decrypt(self, body):
        """RFC 8291: salt, record size, the sender's key, then one aes128gcm record."""
        salt, size, idlen = body[:16], int.from_bytes(body[16:20], "big"), body[20]
        sender = body[21:21 + idlen]
        assert size >= len(body) - 21 - idlen and idlen == 65
        secret = self.key.exchange(ec.ECDH(), ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), sender))
        ikm = HKDF(hashes.SHA256(), 32, self.auth, b"WebPush: info\x00" + self.public + sender).derive(secret)
        cek = HKDF(hashes.SHA256(), 16, salt, b"Content-Encoding: aes128gcm\x00").derive(ikm)
        nonce = HKDF(hashes.SHA256(), 12, salt, b"Content-Encoding: nonce\x00").derive(ikm)
        record = AESGCM(cek).decrypt(nonce, body[21 + idlen:], None).rstrip(b"\x00")
        assert record.endswith(b"\x02"), "the last record's delimiter"
        return record[:-1].decode()


def check_vapid(headers, vapid_key, audience):
    """The Authorization header: a JWT for the push service's origin, signed by the key in 005."""
    auth = headers["Authorization"]
    assert auth.startswith("vapid t=")
    fields = dict(part.strip().split("=", 1) for part in auth[len("vapid "):].split(","))
    assert fields["k"] == vapid_key
    header, claims, signature = fields["t"].split(".")
    assert json.loads(unb64u(header)) == {"typ": "JWT", "alg": "ES256"}
    body = json.loads(unb64u(claims))
    assert body["aud"] == audience and body["sub"].startswith("mailto:") and 0 < body["exp"] - time.time() <= 24 * 3600
    raw = unb64u(signature)
    der = utils.encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), unb64u(vapid_key))
    public.verify(der, (header + "." + claims).encode(), ec.ECDSA(hashes.SHA256()))  # raises if forged
    assert headers["Content-Encoding"] == "aes128gcm" and headers["TTL"] == str(7 * 86400)


@pytest.fixture
def setup(tmp_path):
    cert_path, key_path = certificate(tmp_path)
    service = PushService(cert_path, key_path)
    port = free_port()
    log = open(tmp_path / "server.log", "w")
    env = dict(os.environ, SSL_CERT_FILE=str(cert_path), HOME=str(tmp_path))
    process = subprocess.Popen([BINARY, "--serve", "--headless", "--bind", "127.0.0.1", "--port", str(port), "--tls-port", "0",
                                "--web-port", "0", "--data-dir", str(tmp_path / "data"), "--webpush-allow-private"],
                               stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        wait_for_port(port)
        yield port, service, tmp_path / "server.log"
    finally:
        stop_process(process)
        log.close()
        service.stop()


def register_with_caps(client, nick, caps):
    client.send("CAP LS 302")
    client.send(f"NICK {nick}")
    client.send(f"USER {nick} 0 * :{nick}")
    ls = ""
    while True:  # CAP LS 302 may take several lines: `LS * :…` until the last
        line = client.wait_for(lambda l: " CAP " in l and " LS " in l)
        ls += " " + line.split(" :", 1)[1]
        if " LS * " not in line:
            break
    client.send("CAP REQ :" + " ".join(caps))
    client.wait_for(lambda l: " CAP " in l and " ACK " in l)
    client.send("CAP END")
    lines = []
    client.wait_for(lambda l: lines.append(l) or " 366 " in l, timeout=10)
    return ls, lines


def test_pushes_reach_an_account_with_no_session_encrypted_and_signed(setup):
    port, service, log_path = setup
    alice = RawClient(port)
    ls, welcome = register_with_caps(alice, "alice", ["draft/webpush", "message-tags", "draft/read-marker"])
    assert "draft/webpush" in ls and "soju.im/webpush" in ls
    vapid = next(t.split("=", 1)[1] for l in welcome if " 005 " in l for t in l.split() if t.startswith("VAPID="))
    alice.send("REGISTER * * correct-horse-battery")
    alice.wait_for(lambda l: "REGISTER SUCCESS" in l)
    alice.send("WEBPUSH VAPIDPUBKEY")
    assert alice.wait_for(lambda l: "WEBPUSH VAPIDPUBKEY" in l).split()[-1] == vapid
    phone = Subscription(f"https://127.0.0.1:{service.port}/sub/alice-phone")
    gone = Subscription(f"https://127.0.0.1:{service.port}/gone/alice-old")
    for sub in (phone, gone):
        alice.send(f"WEBPUSH REGISTER {sub.endpoint} {sub.keys()}")
        alice.wait_for(lambda l, e=sub.endpoint: f"WEBPUSH REGISTER {e}" in l)
    alice.send("WEBPUSH REGISTER http://127.0.0.1/plain " + phone.keys())
    assert "FAIL WEBPUSH INVALID_PARAMS" in alice.wait_for(lambda l: "FAIL WEBPUSH" in l)
    alice.send("QUIT :off to lunch")
    alice.close()

    bob = RawClient(port)
    bob.register("bob")
    # Always-on keeps alice present with no session: a direct message is pushed to both subscriptions.
    sent = time.monotonic()
    bob.send("PRIVMSG alice :are you coming?")
    posts = {}
    for _ in range(2):
        path, headers, body, at = service.next()
        posts[path] = (headers, body, at)
    assert set(posts) == {"/sub/alice-phone", "/gone/alice-old"}
    headers, body, at = posts["/sub/alice-phone"]
    print(f"a direct message reached the push service {1000 * (at - sent):.1f} ms after it was sent")
    check_vapid(headers, vapid, f"https://127.0.0.1:{service.port}")
    assert headers["Urgency"] == "high"
    line = phone.decrypt(body)
    assert line.startswith("@msgid=") and ";time=" in line.split(" ")[0] and line.endswith(" PRIVMSG alice :are you coming?")
    assert " :bob!" in line
    # The 410 made the server forget that one.
    deadline = time.monotonic() + 10
    while "the subscription is gone" not in log_path.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "the subscription is gone" in log_path.read_text()

    # A mention in a room she is in, and an invitation: one push each (only the phone now).
    bob.send("PRIVMSG #lobby :alice: the build is green")
    path, headers, body, _ = service.next()
    assert path == "/sub/alice-phone" and phone.decrypt(body).endswith(" PRIVMSG #lobby :alice: the build is green")
    bob.send("PRIVMSG #lobby :nobody named here")
    bob.send("JOIN #ops")
    bob.wait_for(lambda l: " 366 " in l)
    bob.send("INVITE alice #ops")
    path, headers, body, _ = service.next()
    assert phone.decrypt(body).endswith(" INVITE alice #ops"), "the room line naming nobody was not pushed"

    # Alice back on another device: no pushes while she is connected; her MARKREAD is pushed as a dismissal.
    laptop = RawClient(port)
    laptop.send("CAP LS 302")
    laptop.send("CAP REQ :sasl draft/read-marker server-time")
    laptop.send("AUTHENTICATE PLAIN")
    laptop.wait_for(lambda l: l.startswith("AUTHENTICATE +"))
    laptop.send("AUTHENTICATE " + base64.b64encode(b"\0alice\0correct-horse-battery").decode())
    laptop.wait_for(lambda l: " 903 " in l)
    laptop.send("NICK alice")
    laptop.send("USER alice 0 * :alice")
    laptop.send("CAP END")
    laptop.wait_for(lambda l: " 001 " in l)
    laptop.send("MARKREAD bob timestamp=" + datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z"))
    path, headers, body, _ = service.next()
    dismissal = phone.decrypt(body)
    assert " MARKREAD bob timestamp=" in dismissal and headers["Urgency"] == "normal"
    bob.send("PRIVMSG alice :are you there now?")
    laptop.wait_for(lambda l: "are you there now?" in l)
    laptop.send("PING :after")
    laptop.wait_for(lambda l: "PONG" in l and "after" in l)
    assert service.received.empty(), "nothing is pushed while a session of hers is connected"
    bob.close()
    laptop.close()
