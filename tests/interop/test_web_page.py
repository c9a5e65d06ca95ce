"""The page `chat-tui --serve` serves on its web port, in headless Chromium (Debian's `chromium`
and `chromium-driver`, through PyPI's `selenium`): it loads, registers, shows #lobby's members,
sends a direct message to a chat-tui user in tmux and gets the answer, uploads a file that the
chat-tui user downloads with the same SHA-256; irssi and WeeChat see the browser's user as a
member like any other. Screenshots are kept with the test's output (in CHAT_TUI_SCREENS when
set, else the test's tmp_path): look at them."""
import hashlib
import os
import shlex
import shutil
import socket
import time

import pytest

from conftest import BINARY, Server, Tmux, end_tmux, free_port, wait_for_port

SOCKET = f"chat-tui-web-page-{os.getpid()}"


def chromium():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,800"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=options)


def wait_until(predicate, what, timeout=20, shows=lambda: ""):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = predicate()
        except Exception:  # an element not there yet, or replaced while read
            value = None
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}\n{shows()}")


@pytest.fixture
def web(tmp_path):
    for tool in ("chromium", "chromedriver", "tmux"):
        if not shutil.which(tool):
            pytest.fail(f"{tool} is missing: make deps installs it")
    port = free_port()
    server = Server("--web-port", str(port), "--data-dir", str(tmp_path / "data"))
    server.web_port = port
    wait_for_port(port)
    driver = chromium()
    server.driver = driver
    server.shots = os.environ.get("CHAT_TUI_SCREENS") or str(tmp_path)
    os.makedirs(server.shots, exist_ok=True)
    try:
        yield server
    finally:
        driver.quit()
        end_tmux(SOCKET)
        server.stop()


def shoot(web, name):
    path = os.path.join(web.shots, f"web-{name}.png")
    web.driver.save_screenshot(path)
    return path


def join(web, nick):
    from selenium.webdriver.common.by import By
    driver = web.driver
    driver.get(f"http://127.0.0.1:{web.web_port}/")
    wait_until(lambda: driver.find_element(By.ID, "nick").is_displayed(), "the login form")
    notice = driver.find_element(By.ID, "tls-notice").text
    assert "not encrypted" in notice.lower(), f"plain HTTP is said to be plain: {notice!r}"
    shoot(web, "login")
    driver.find_element(By.ID, "nick").send_keys(nick)
    driver.find_element(By.ID, "guest").click()
    return driver


def members(driver):
    from selenium.webdriver.common.by import By
    return [li.get_attribute("data-nick") for li in driver.find_elements(By.CSS_SELECTOR, "#members li[data-nick]")]


def texts(driver):
    from selenium.webdriver.common.by import By
    return [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#messages .text")]


def test_a_browser_chats_with_a_terminal_user_and_shares_a_file(web, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    tmux = Tmux(SOCKET, "bob")
    home = tmp_path / "bob"
    home.mkdir()
    downloads = tmp_path / "bob-downloads"
    tmux.run("new-session", "-d", "-s", "bob", "-x", "120", "-y", "30",
             f"HOME={home} LANG=C.UTF-8 TERM=xterm-256color {BINARY} --host 127.0.0.1 --port {web.port} --nick bob "
             f"--download-dir {shlex.quote(str(downloads))}; sleep 60")
    tmux.wait(lambda s: "connected" in s, "bob connected")

    driver = join(web, "webby")
    wait_until(lambda: {"webby", "bob"} <= set(members(driver)), "webby and bob in #lobby's members",
               shows=lambda: str(members(driver)))
    tmux.wait(lambda s: "webby" in s, "webby in bob's sidebar")
    shoot(web, "lobby")

    # A direct message: bob picked in the member list, a line typed, Enter.
    driver.find_element(By.CSS_SELECTOR, '#members li[data-nick="bob"]').click()
    box = driver.find_element(By.ID, "input")
    box.send_keys("hello from the browser")
    box.send_keys(Keys.ENTER)
    # bob looks at the conversation with webby (it may have opened already, unread).
    tmux.type("/query webby")
    tmux.wait(lambda s: "<webby> hello from the browser" in s, "the browser's message on bob's screen")
    tmux.type("/msg webby hello back from the terminal")
    wait_until(lambda: "hello back from the terminal" in texts(driver), "bob's answer in the page", shows=lambda: str(texts(driver)))
    shoot(web, "direct")
    # /msg from the room: the message goes, and the room's input is empty when one comes back
    # (the command was once kept there as the room's draft, ready to be sent again).
    lobby = '#conversations li[data-target="#lobby"]'
    driver.find_element(By.CSS_SELECTOR, lobby).click()
    box = driver.find_element(By.ID, "input")
    box.send_keys("/msg bob via msg")
    box.send_keys(Keys.ENTER)
    tmux.wait(lambda s: "<webby> via msg" in s, "the /msg on bob's screen")
    driver.find_element(By.CSS_SELECTOR, lobby).click()
    assert driver.find_element(By.ID, "input").get_attribute("value") == ""
    driver.find_element(By.CSS_SELECTOR, '#conversations li[data-target="bob"]').click()

    # A file: the page's file input (what its button and drag-and-drop feed) uploads it to the host.
    payload = os.urandom(30_000) + "ünïcode".encode()
    source = tmp_path / "holiday photo.bin"
    source.write_bytes(payload)
    chooser = driver.find_element(By.ID, "file-input")
    wait_until(lambda: not driver.find_element(By.ID, "file-button").get_attribute("hidden"), "the file button (FILEHOST offered)")
    driver.execute_script("arguments[0].hidden = false", chooser)
    chooser.send_keys(str(source))
    shared = tmux.wait(lambda s: "webby shared holiday photo.bin" in s, "the shared file on bob's screen")
    assert "— /download 1" in shared
    tmux.type("/download 1")
    done = tmux.wait(lambda s: "Downloaded holiday photo.bin" in s, "bob's download")
    digest = hashlib.sha256(payload).hexdigest()
    assert digest[:16] in done.replace("\n", "")
    assert (downloads / "holiday photo.bin").read_bytes() == payload
    shoot(web, "shared")

    # A phone's screen, and 200 % zoom (the same page in half as many CSS pixels, each drawn
    # twice as large): nothing runs off the side, and the screenshots are there to look at.
    driver.execute_script("arguments[0].hidden = true", chooser)
    for name, width, height, scale in (("phone", 390, 844, 3), ("zoom200", 640, 400, 2)):
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                               {"width": width, "height": height, "deviceScaleFactor": scale, "mobile": name == "phone"})
        wait_until(lambda: driver.execute_script("return window.innerWidth") == width, f"the {name} viewport")
        # On a narrow screen the sidebar is a drawer: closed, once its slide has ended.
        wait_until(lambda: driver.execute_script(
            "const s = document.getElementById('sidebar'); return s.getBoundingClientRect().right <= 0 || getComputedStyle(s).visibility === 'hidden'"),
            f"the {name} drawer closed")
        overflow = driver.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"{name}: the page is {overflow} px wider than the screen"
        shoot(web, name)
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def test_the_page_is_never_served_on_the_irc_port(web):
    with socket.create_connection(("127.0.0.1", web.port), timeout=10) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        answer = b""
        s.settimeout(5)
        try:
            while b"\n" not in answer:
                chunk = s.recv(4096)
                if not chunk:
                    break
                answer += chunk
        except socket.timeout:
            pass
    assert not answer.startswith(b"HTTP/"), answer
    assert b"<html" not in answer.lower()


def test_irssi_and_weechat_see_the_browser_user_as_a_member(web, tmp_path):
    for tool in ("irssi", "weechat-curses"):
        if not shutil.which(tool):
            pytest.fail(f"{tool} is missing: make deps installs it")
    tmux = Tmux(SOCKET, "irssi")
    env = "LANG=C.UTF-8 TERM=xterm-256color"
    irssi_home = tmp_path / "irssi"
    irssi_home.mkdir()
    tmux.run("new-session", "-d", "-s", "irssi", "-x", "140", "-y", "40", f"{env} irssi --home={irssi_home} -n oldirssi")
    tmux.wait(lambda s: "[(status)]" in s, "irssi to start")
    tmux.type(f"/connect 127.0.0.1 {web.port}")
    weechat_home = tmp_path / "weechat"
    weechat_home.mkdir()
    startup = ";".join([f"/server add room 127.0.0.1/{web.port} -notls -nicks=oldwee", "/connect room"])
    tmux.run("new-session", "-d", "-s", "weechat", "-x", "140", "-y", "40",
             f"{env} weechat-curses --dir {shlex.quote(str(weechat_home))} -r {shlex.quote(startup)}")
    deadline = time.monotonic() + 30
    while not all(f"registered as {n}" in web.log_text() for n in ("oldirssi", "oldwee")):
        assert time.monotonic() < deadline, "irssi and WeeChat never registered:\n" + web.log_text()
        time.sleep(0.1)

    driver = join(web, "webby")
    wait_until(lambda: {"webby", "oldirssi", "oldwee"} <= set(members(driver)), "everyone in the page's member list",
               shows=lambda: str(members(driver)))
    box = driver.find_element(By_ID(), "input")
    box.send_keys("hi from a browser\n")
    # irssi: window 2 is #lobby, its nick list by /names; WeeChat: buffer 3 with its nicklist.
    tmux.type("/window 2")
    tmux.type("/names")
    irssi = tmux.wait(lambda s: "webby> hi from a browser" in s and "[ webby]" in s.split("webby> hi from a browser")[-1],
                      "webby's line and webby in irssi's names of #lobby")
    assert "oldirssi" in irssi
    weechat = Tmux(SOCKET, "weechat")
    weechat.run("send-keys", "-t", "weechat", "M-3")
    shown = weechat.wait(lambda s: "hi from a browser" in s, "webby's line in WeeChat")
    weechat.type("/names")
    # WeeChat's nick list is the column at the right of the buffer.
    shown = weechat.wait(lambda s: any(row.rstrip().endswith("x webby") for row in s.splitlines()), "webby in WeeChat's nick list of #lobby")
    if os.environ.get("CHAT_TUI_SCREENS"):
        for name, text in (("irssi", irssi), ("weechat", shown)):
            with open(os.path.join(os.environ["CHAT_TUI_SCREENS"], f"web-{name}.txt"), "w") as f:
                f.write(text)


def By_ID():
    from selenium.webdriver.common.by import By
    return By.ID
