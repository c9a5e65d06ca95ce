"""The command line: --help made from the flag table, conflicting flags refused, the config file."""
import os
import re
import subprocess

from conftest import BINARY, ROOT


def run(*args, env=None, input_text=None, timeout=10):
    return subprocess.run([BINARY, *args], capture_output=True, text=True, env=env, input=input_text, timeout=timeout)


def test_conflicting_flags_are_refused_with_a_reason():
    cases = {
        ("--serve", "--host", "x"): "cannot be used together",
        ("--serve", "--lines"): "--lines is for joining",
        ("--host", "x", "--room", "#a"): "--room is a hosting option",
        ("--host", "x", "--headless"): "--headless is a hosting option",
        ("--bogus",): "unknown option --bogus",
        ("--port",): "--port needs a value",
    }
    for args, message in cases.items():
        result = run(*args)
        assert result.returncode == 2, (args, result)
        assert message in result.stderr, (args, result.stderr)


def test_help_names_every_flag_the_guide_documents():
    help_text = run("--help").stdout
    readme = open(os.path.join(ROOT, "docs", "GUIDE.md"), encoding="utf-8").read()
    documented = set(re.findall(r"\| `(--[a-z-]+)", readme))
    assert documented, "the guide's flag tables were not found"
    for flag in documented:
        assert flag in help_text, f"{flag} is in the guide but not in --help"
    assert "until the chat screen exists" not in help_text
    # The subcommands too, not only the flags.
    assert "chat-tui account add" in help_text and "chat-tui search WORDS" in help_text


def test_with_no_arguments_the_config_file_decides(tmp_path, server):
    config = tmp_path / "chat-tui"
    config.mkdir()
    (config / "config").write_text(f"host = 127.0.0.1\nport = {server.port}\nnick = fromfile\nlines = true\n")
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path))
    process = subprocess.Popen([BINARY], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    seen = []
    try:
        for line in process.stdout:
            seen.append(line)
            if "registered as fromfile" in line:
                break
        assert any("registered as fromfile" in line for line in seen), "".join(seen)
        process.stdin.write("/quit bye\n")
        process.stdin.flush()
        assert process.wait(10) == 0
    finally:
        process.kill()
    # With flags on the command line, a joining-only setting in the file does not break --serve.
    (config / "config").write_text("lines = true\n")
    assert run("--serve", "--headless", "--port", "99999", env=env).stderr.strip().endswith("not \"99999\"")


def test_hash_password_makes_a_pbkdf2_hash_that_oper_accepts():
    from conftest import RawClient, Server
    made = subprocess.run([BINARY, "--hash-password"], input="s3cret\n", capture_output=True, text=True, timeout=30)
    digest = made.stdout.strip()
    assert digest.startswith("pbkdf2-sha256:100000:") and len(digest.split(":")) == 4, digest
    server = Server("--oper", f"root:{digest}")
    try:
        client = RawClient(server.port)
        client.register("admin")
        client.send("OPER root wrong")
        client.wait_for(lambda l: " 464 " in l)
        client.send("OPER root s3cret")
        client.wait_for(lambda l: " 381 " in l)
    finally:
        server.stop()


def test_the_man_pages_render_without_a_warning():
    """Issue 44, item 3: both pages through groff with every warning on, and through man -l."""
    import shutil
    for page in ("chat-tui.1", "chat-tui.conf.5"):
        path = os.path.join(ROOT, "man", page)
        rendered = subprocess.run(["groff", "-ww", "-man", "-Tutf8", path], capture_output=True, text=True, timeout=60)
        assert rendered.returncode == 0 and rendered.stderr == "", rendered.stderr
        if shutil.which("man"):
            shown = subprocess.run(["man", "-l", path], capture_output=True, text=True, timeout=60,
                                   env=dict(os.environ, MANPAGER="cat", MANWIDTH="80", LC_ALL="C.UTF-8"))
            assert shown.returncode == 0 and "warning" not in shown.stderr, shown.stderr
            assert ("--serve" in shown.stdout) if page.endswith(".1") else ("[network NAME]" in shown.stdout)
