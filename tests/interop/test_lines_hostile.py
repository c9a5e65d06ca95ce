"""A hostile server cannot reach the terminal through `--lines`: escape sequences and bidi
controls in a nickname, an ERROR reason or a refusal are shown as text."""
import socket
import subprocess
import threading

from conftest import BINARY, free_port


def fake_server(port, script):
    """Accepts one client, waits for its USER, then sends the scripted lines."""
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(1)

    def serve():
        conn, _ = listener.accept()
        received = b""
        while b"USER" not in received:
            data = conn.recv(4096)
            if not data:
                return
            received += data
        for line in script:
            conn.sendall(line.encode() + b"\r\n")
        # Keep the socket open until the client goes.
        try:
            while conn.recv(4096):
                pass
        except OSError:
            pass
        conn.close()
        listener.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread


def run_lines(port, until, timeout=15):
    process = subprocess.Popen([BINARY, "--host", "127.0.0.1", "--port", str(port), "--nick", "vic", "--lines"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    output = b""
    try:
        process.stdout.flush()
        while until not in output:
            chunk = process.stdout.read1(4096)
            if not chunk:
                break
            output += chunk
    finally:
        process.kill()
        process.wait(timeout)
    return output


def assert_harmless(output):
    for byte in (b"\x1b", b"\x07", b"\xe2\x80\xae", b"\xc2\x9b"):
        assert byte not in output, f"{byte!r} reached the terminal: {output!r}"


def test_escape_in_nickname_and_error_reason():
    port = free_port()
    fake_server(port, [
        ":srv 001 vic\x1b]2;WELCOME\x07 :Welcome",
        ":m\u202eallory!m@h PRIVMSG vic\x1b]2;WELCOME\x07 :hi \x1b[2J there \u202e",
        "ERROR :Closing link \x1b[31m(evil)\u009b",
    ])
    output = run_lines(port, b"evil")
    assert_harmless(output)
    text = output.decode("utf-8", "replace")
    assert "registered as vic^[]2;WELCOME^G" in text, text
    assert "<m<U+202E>allory> hi ^[[2J there <U+202E>" in text, text
    assert "^[[31m(evil)<U+009B>" in text, text


def test_escape_in_refusal_reason():
    port = free_port()
    fake_server(port, [":srv 432 * vic :no \x1b]2;pwned\x07 names"])
    output = run_lines(port, b"names")
    assert_harmless(output)
    assert "no ^[]2;pwned^G names" in output.decode("utf-8", "replace")
