"""The page as one person on every device (issue 45), in headless Chromium: a guest who reloads
the tab comes back as itself, in its rooms (a resume token the tab keeps); two windows logged in
to one account are one member, and a line to it shows in both; after both are closed the account
stays in its room, and a new window comes back to it. Screenshots are kept (CHAT_TUI_SCREENS)."""
import os
import shutil
import subprocess

import pytest

from conftest import BINARY, RawClient, Server, free_port, wait_for_port
from test_web_page import chromium, members, texts, wait_until

PASSWORD = "correct-horse-battery"


@pytest.fixture
def web(tmp_path):
    for tool in ("chromium", "chromedriver"):
        if not shutil.which(tool):
            pytest.fail(f"{tool} is missing: make deps installs it")
    data = tmp_path / "data"
    done = subprocess.run([BINARY, "account", "add", "alice", "--password", PASSWORD, "--data-dir", str(data)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    port = free_port()
    server = Server("--web-port", str(port), "--data-dir", str(data))
    server.web_port = port
    wait_for_port(port)
    server.drivers = []
    server.shots = os.environ.get("CHAT_TUI_SCREENS") or str(tmp_path)
    os.makedirs(server.shots, exist_ok=True)
    try:
        yield server
    finally:
        for driver in server.drivers:
            driver.quit()
        server.stop()


def shoot(web, driver, name):
    driver.save_screenshot(os.path.join(web.shots, f"web-{name}.png"))


def browser(web):
    driver = chromium()
    web.drivers.append(driver)
    return driver


def open_page(web, driver, nick, account=None):
    from selenium.webdriver.common.by import By
    driver.get(f"http://127.0.0.1:{web.web_port}/")
    wait_until(lambda: driver.find_element(By.ID, "nick").is_displayed(), "the login form")
    driver.find_element(By.ID, "nick").send_keys(nick)
    if account:
        driver.find_element(By.ID, "account").send_keys(account)
        driver.find_element(By.ID, "password").send_keys(PASSWORD)
        driver.find_element(By.ID, "login-button").click()
    else:
        driver.find_element(By.ID, "guest").click()


def rooms(driver):
    from selenium.webdriver.common.by import By
    return [li.get_attribute("data-target") for li in driver.find_elements(By.CSS_SELECTOR, "#conversations li[data-target]")]


def type_line(driver, text):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    box = driver.find_element(By.ID, "input")
    box.send_keys(text)
    box.send_keys(Keys.ENTER)


def test_a_guest_reloads_and_is_still_itself_in_its_rooms(web):
    driver = browser(web)
    open_page(web, driver, "visitor")
    wait_until(lambda: "visitor" in members(driver), "the guest in #lobby", shows=lambda: driver.page_source[:2000])
    type_line(driver, "/join #dev")
    wait_until(lambda: "#dev" in rooms(driver), "#dev in the sidebar", shows=lambda: str(rooms(driver)))
    peer = RawClient(web.port)
    peer.register("peer")
    driver.refresh()
    # The page asks for the nickname again only if it lost it: a resumed guest goes straight back in.
    wait_until(lambda: "#dev" in rooms(driver), "#dev after the reload", shows=lambda: str(rooms(driver)) + web.log_text()[-2000:])
    assert "a guest resuming" in web.log_text()
    assert "visitor" in members(driver)
    shoot(web, driver, "presence-guest-reloaded")
    peer.send("NAMES #dev")
    line = peer.wait_for(lambda l: " 353 " in l or " 366 " in l, timeout=10)
    assert "visitor" in line, line
    # Nobody saw the guest leave and come back.
    peer.send("PING :done")
    seen = []
    peer.wait_for(lambda l: seen.append(l) or "PONG" in l, timeout=10)
    assert not any(" QUIT " in l for l in seen), seen
    peer.close()


def test_two_windows_of_an_account_are_one_person_and_the_account_stays(web):
    laptop, phone = browser(web), browser(web)
    open_page(web, laptop, "alice", account="alice")
    wait_until(lambda: "alice" in members(laptop), "alice in #lobby on the laptop", shows=lambda: web.log_text()[-2000:])
    open_page(web, phone, "alice", account="alice")
    wait_until(lambda: "alice" in members(phone), "alice in #lobby on the phone", shows=lambda: web.log_text()[-2000:])
    assert "registered as a session of alice" in web.log_text()
    peer = RawClient(web.port)
    peer.register("peer")
    peer.send("NAMES #lobby")
    line = peer.wait_for(lambda l: " 353 " in l, timeout=10)
    assert len([n for n in line.split(" :", 1)[1].split() if "alice" in n]) == 1, line
    peer.send("PRIVMSG #lobby :hello to every window")
    wait_until(lambda: "hello to every window" in texts(laptop), "the line on the laptop")
    wait_until(lambda: "hello to every window" in texts(phone), "the line on the phone")
    type_line(phone, "typed on the phone")
    wait_until(lambda: "typed on the phone" in texts(laptop), "the phone's line on the laptop")
    shoot(web, phone, "presence-two-windows")
    # Both closed: alice stays in #lobby (away); a new window comes back to it.
    laptop.quit()
    phone.quit()
    web.drivers.clear()
    wait_until(lambda: "kept present (always-on)" in web.log_text(), "alice kept present", shows=lambda: web.log_text()[-2000:])
    peer.send("NAMES #lobby")
    line = peer.wait_for(lambda l: " 353 " in l, timeout=10)
    assert "alice" in line, line
    again = browser(web)
    open_page(web, again, "alice", account="alice")
    wait_until(lambda: "alice" in members(again), "alice back in #lobby", shows=lambda: web.log_text()[-2000:])
    peer.close()


def test_the_chat_screen_and_the_page_are_two_devices_of_one_account(web, tmp_path):
    """chat-tui in tmux as alice@laptop and the page as alice: one member, each line on both."""
    from conftest import Tmux, end_tmux
    if not shutil.which("tmux"):
        pytest.fail("tmux is missing: make deps installs it")
    socket_name = f"chat-tui-web-presence-{os.getpid()}"
    screen = Tmux(socket_name, "laptop")
    home = tmp_path / "laptop-home"
    home.mkdir()
    try:
        screen.run("new-session", "-d", "-s", "laptop", "-x", "110", "-y", "30",
                   f"HOME={home} LANG=C.UTF-8 TERM=xterm-256color {BINARY} --host 127.0.0.1 --port {web.port} "
                   f"--nick alice --sasl-user alice --sasl-password {PASSWORD} --device laptop; sleep 60")
        screen.wait(lambda s: "#lobby" in s and "connected" in s, "the chat screen to join")
        page = browser(web)
        open_page(web, page, "alice", account="alice")
        wait_until(lambda: "alice" in members(page), "alice on the page", shows=lambda: web.log_text()[-2000:])
        assert "registered as a session of alice (account alice, device web-" in web.log_text()
        peer = RawClient(web.port)
        peer.register("peer")
        peer.send("PRIVMSG #lobby :seen on the screen and the page")
        screen.wait(lambda s: "seen on the screen and the page" in s, "the line on the chat screen")
        wait_until(lambda: "seen on the screen and the page" in texts(page), "the line on the page")
        type_line(page, "typed on the page")
        screen.wait(lambda s: "typed on the page" in s, "the page's line on the chat screen")
        shoot(web, page, "presence-screen-and-page")
        peer.close()
    finally:
        end_tmux(socket_name)
