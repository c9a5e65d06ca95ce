"""Issue 44, item 4: the Debian package (built with dpkg-deb from the test build's binary), its
files, the unpacked binary started as its systemd unit starts it (ExecStart, STATE_DIRECTORY,
the unit's CHAT_TUI_CONFIG, NOTIFY_SOCKET answered READY=1) serving a client, and the unit
accepted by systemd-analyze verify."""
import os
import shutil
import socket
import subprocess

from conftest import BINARY, ROOT, RawClient, free_port, wait_for_port


def build_package(tmp_path):
    made = subprocess.run(["sh", os.path.join(ROOT, "scripts", "deb.sh"), BINARY, str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    return made.stdout.strip()


def test_the_package_holds_the_program_its_pages_its_unit_and_its_settings(tmp_path):
    package = build_package(tmp_path)
    listing = subprocess.run(["dpkg-deb", "-c", package], capture_output=True, text=True, check=True).stdout
    files = {line.split()[-1] for line in listing.splitlines()}
    for path in ("./usr/bin/chat-tui", "./usr/share/man/man1/chat-tui.1.gz", "./usr/share/man/man5/chat-tui.conf.5.gz",
                 "./lib/systemd/system/chat-tui.service", "./etc/chat-tui/server.conf"):
        assert path in files, listing
    control = subprocess.run(["dpkg-deb", "-f", package, "Depends", "Package"], capture_output=True, text=True, check=True).stdout
    assert "libsqlite3-0" in control and "libssl3" in control and "libncursesw6" in control, control
    conffiles = subprocess.run(["dpkg-deb", "-I", package, "conffiles"], capture_output=True, text=True, check=True).stdout
    assert conffiles.strip() == "/etc/chat-tui/server.conf"


def test_the_unpacked_program_runs_as_its_unit_starts_it(tmp_path):
    package = build_package(tmp_path)
    root = tmp_path / "root"
    subprocess.run(["dpkg-deb", "-x", package, str(root)], check=True)
    program = str(root / "usr/bin/chat-tui")
    version = subprocess.run([program, "--version"], capture_output=True, text=True, timeout=30)
    assert version.returncode == 0 and version.stdout.startswith("chat-tui-"), version
    unit = (root / "lib/systemd/system/chat-tui.service").read_text()
    exec_start = next(l.split("=", 1)[1] for l in unit.splitlines() if l.startswith("ExecStart="))
    config = next(l.split("=", 2)[2] for l in unit.splitlines() if l.startswith("Environment=CHAT_TUI_CONFIG="))
    assert config == "/etc/chat-tui/server.conf" and os.path.exists(root / config.lstrip("/"))
    # The shipped settings (all comments) with the test's ports after them, where the unit points.
    port = free_port()
    settings = tmp_path / "server.conf"
    settings.write_text((root / config.lstrip("/")).read_text() + f"\nport = {port}\ntls-port = 0\nweb-port = 0\nbind = 127.0.0.1\n")
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    notify_path = str(tmp_path / "notify")
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(notify_path)
    notify.settimeout(20)
    argv = exec_start.replace("/usr/bin/chat-tui", program).split()
    env = dict(os.environ, STATE_DIRECTORY=str(state), NOTIFY_SOCKET=notify_path, CHAT_TUI_CONFIG=str(settings))
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        ready = notify.recv(4096).decode()
        assert ready.startswith("READY=1"), ready
        wait_for_port(port)
        client = RawClient(port)
        client.register("visitor")
        assert os.path.exists(state / "server.db"), "its data in STATE_DIRECTORY"
        process.send_signal(1)  # systemctl reload: SIGHUP
        assert notify.recv(4096).decode() == "RELOADING=1"
        assert notify.recv(4096).decode() == "READY=1"
        client.close()
    finally:
        process.terminate()
        process.wait(timeout=10)
        notify.close()


def test_systemd_analyze_verifies_the_unit(tmp_path):
    if not shutil.which("systemd-analyze"):
        import pytest
        pytest.fail("systemd-analyze is missing: make deps installs systemd")
    unit = open(os.path.join(ROOT, "packaging", "chat-tui.service")).read().replace("/usr/bin/chat-tui", BINARY)
    path = tmp_path / "chat-tui.service"
    path.write_text(unit)
    # --man=no: the pages are not installed on this machine (the package has them).
    checked = subprocess.run(["systemd-analyze", "verify", "--man=no", str(path)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0 and "chat-tui.service" not in checked.stderr, checked.stderr
