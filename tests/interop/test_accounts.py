"""`chat-tui account …`: the host manages accounts from the shell; the database keeps SCRAM
credentials only, readable by the host alone."""
import os
import subprocess

from conftest import BINARY


def account(data, *words, stdin=None):
    return subprocess.run([BINARY, "account", *words, "--data-dir", str(data)], input=stdin,
                          capture_output=True, text=True, timeout=60)


def test_accounts_from_the_shell(tmp_path):
    data = tmp_path / "data"
    added = account(data, "add", "Alice", stdin="from stdin\n")
    assert added.returncode == 0 and added.stdout.strip() == "account Alice added", added.stderr
    short = account(data, "add", "bob", "--password", "pw5ch")
    assert short.returncode == 2 and "at least 8 characters" in short.stderr, "one rule with REGISTER: " + short.stderr
    assert account(data, "add", "bob", "--password", "bobs password").returncode == 0
    duplicate = account(data, "add", "ALICE", "--password", "long enough")
    assert duplicate.returncode == 2 and "an account named ALICE exists already" in duplicate.stderr
    bad = account(data, "add", "9lives", "--password", "x")
    assert bad.returncode == 2 and "cannot be an account name" in bad.stderr
    assert account(data, "cert", "add", "bob", ":".join(["AB"] * 32)).returncode == 0
    assert account(data, "passwd", "alice", "--password", "newer password").stdout.strip() == "password of alice changed"
    listed = account(data, "list").stdout.splitlines()
    assert listed == ["Alice", "bob  certificates: " + "AB" * 32]
    assert account(data, "delete", "ALICE").returncode == 0
    assert account(data, "list").stdout.splitlines() == ["bob  certificates: " + "AB" * 32]
    assert oct(os.stat(data / "server.db").st_mode & 0o777) == "0o600"
    for name in os.listdir(data):
        with open(data / name, "rb") as f:
            assert b"from stdin" not in f.read(), f"{name} holds a password"


def test_home_decides_where_the_data_goes(tmp_path):
    # $HOME, not the password database: isolating a run with HOME=… must work.
    env = dict(os.environ, HOME=str(tmp_path))
    made = subprocess.run([BINARY, "account", "add", "carol", "--password", "carols password"], env=env, capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    assert (tmp_path / ".local/share/chat-tui/server/server.db").exists()


def test_account_added_while_the_server_runs_logs_in_at_once(tmp_path):
    """Issue 42, item 3: `chat-tui account add` while the server runs, then SASL at once: 903,
    not the 904 a login got until the next reload a second later."""
    import base64
    from test_room_restart import Client
    from conftest import Server
    data = tmp_path / "data"
    assert account(data, "add", "first", "--password", "first password").returncode == 0
    server = Server("--data-dir", str(data))
    try:
        for name in ["carol", "dave", "erin"]:
            assert account(data, "add", name, "--password", f"{name}s password").returncode == 0
            c = Client(server.port)
            c.send("CAP REQ :sasl")
            c.send(f"NICK {name}")
            c.send(f"USER {name} 0 * :{name}")
            c.wait_for(lambda l: " ACK " in l)
            c.send("AUTHENTICATE PLAIN")
            c.wait_for(lambda l: l.startswith("AUTHENTICATE +"))
            c.send("AUTHENTICATE " + base64.b64encode(f"\0{name}\0{name}s password".encode()).decode())
            answer = c.wait_for(lambda l: " 903 " in l or " 904 " in l)
            assert " 903 " in answer, answer
    finally:
        server.stop()
