"""The page as an app people keep open (issue 47), in headless Chromium against our server:
the message list stays at the bottom through a smaller window, 200 % zoom, a reaction and the
typing line; scrolled up, new lines wait behind a "N new messages" button; a "new messages" line
marks where the reader stopped; an outage is a banner with a countdown and "Retry now", the room
keeps its people (greyed) and never says "You are not in this room", a line typed meanwhile is
held and sent once when the server is back. Screenshots go to CHAT_TUI_SCREENS (else tmp_path)."""
import json
import os
import shutil
import subprocess
import time

import pytest

from conftest import BINARY, RawClient, free_port, stop_process, wait_for_port
from test_web_page import chromium, wait_until


class Host:
    """Our server on fixed ports, so that it can be stopped and started again as the same host."""

    def __init__(self, tmp_path):
        self.port, self.web_port = free_port(), free_port()
        self.data = tmp_path / "data"
        self.log = open(tmp_path / "server.log", "a")
        self.process = None

    def start(self):
        self.process = subprocess.Popen(
            [BINARY, "--serve", "--headless", "--bind", "127.0.0.1", "--port", str(self.port), "--tls-port", "0",
             "--web-port", str(self.web_port), "--data-dir", str(self.data)], stdout=self.log, stderr=subprocess.STDOUT)
        wait_for_port(self.port)
        wait_for_port(self.web_port)

    def stop(self):
        if self.process:
            stop_process(self.process)
            self.process = None


@pytest.fixture
def app(tmp_path):
    for tool in ("chromium", "chromedriver"):
        if not shutil.which(tool):
            pytest.fail(f"{tool} is missing: make deps installs it")
    host = Host(tmp_path)
    host.start()
    host.driver = chromium()
    host.shots = os.environ.get("CHAT_TUI_SCREENS") or str(tmp_path)
    os.makedirs(host.shots, exist_ok=True)
    try:
        yield host
    finally:
        host.driver.quit()
        host.stop()
        host.log.close()


def shoot(app, name):
    app.driver.save_screenshot(os.path.join(app.shots, f"web-app-{name}.png"))


def gap(driver):
    """Pixels between the bottom of what is shown and the bottom of the list (0: at the bottom)."""
    return driver.execute_script("const b = document.getElementById('messages'); return b.scrollHeight - b.scrollTop - b.clientHeight;")


def settled(driver):
    """After two frames: what ResizeObservers and layout do runs before the next check."""
    driver.execute_async_script("const done = arguments[0]; requestAnimationFrame(() => requestAnimationFrame(() => done()));")


def at_bottom(driver, what):
    settled(driver)
    wait_until(lambda: gap(driver) <= 1, f"the list at the bottom after {what}", shows=lambda: f"gap {gap(driver)} px")


def guest(app, nick):
    """The page opened and joined as a guest called `nick`."""
    from selenium.webdriver.common.by import By
    driver = app.driver
    driver.get(f"http://127.0.0.1:{app.web_port}/")
    wait_until(lambda: driver.find_element(By.ID, "nick").is_displayed(), "the login form")
    driver.find_element(By.ID, "nick").send_keys(nick)
    driver.find_element(By.ID, "guest").click()


def texts(driver):
    """Each message's text as shown (one round trip to the browser, not one per message)."""
    return driver.execute_script("return [...document.querySelectorAll('#messages .text')].map((e) => e.innerText)")


def test_the_list_stays_with_the_reader_and_an_outage_is_said_and_survived(app):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    driver = app.driver
    bob = RawClient(app.port)
    bob.register("bob")

    guest(app, "ann")
    wait_until(lambda: driver.find_element(By.CSS_SELECTOR, '#members li[data-nick="bob"]'), "bob in #lobby")
    for n in range(60):
        bob.send(f"PRIVMSG #lobby :line {n} " + "words " * (n % 7))
    wait_until(lambda: any(t.startswith("line 59") for t in texts(driver)), "the last line")
    at_bottom(driver, "60 lines")

    # A smaller window, then 200 % zoom: still at the bottom.
    driver.set_window_size(1280, 480)
    at_bottom(driver, "the window shrank")
    driver.execute_script("document.body.style.zoom = '2'")
    at_bottom(driver, "200 % zoom")
    shoot(app, "zoom-200")
    driver.execute_script("document.body.style.zoom = ''")
    driver.set_window_size(1280, 800)
    at_bottom(driver, "the window grew")

    # A reaction grows the last message; bob typing adds a line to the status bar.
    last = driver.find_elements(By.CSS_SELECTOR, "#messages li.message")[-1].get_attribute("data-msgid")
    bob.send(f"@+draft/react=🎉;+draft/reply={last} TAGMSG #lobby")
    wait_until(lambda: driver.find_elements(By.CSS_SELECTOR, f'#messages li[data-msgid="{last}"] .reaction'), "the reaction")
    at_bottom(driver, "a reaction")
    bob.send("@+typing=active TAGMSG #lobby")
    wait_until(lambda: "bob is typing" in driver.find_element(By.ID, "typing").text, "bob typing")
    at_bottom(driver, "the typing line")

    # At phone width the typing line never wraps the status bar over the messages; a phone's
    # screen (the mobile emulation, a taller viewport) keeps the bottom too.
    driver.set_window_size(390, 844)
    at_bottom(driver, "phone width")

    status = driver.find_element(By.ID, "status")
    line = driver.execute_script("return parseFloat(getComputedStyle(arguments[0]).lineHeight) || 20", status)
    assert status.size["height"] < 2 * line, f"the status bar wrapped: {status.size['height']} px for a {line} px line"
    typing = driver.find_element(By.ID, "typing")
    assert typing.is_displayed() and typing.size["width"] > 0, "narrow, who is typing still shows"
    time.sleep(0.3)  # the drawer's slide out, for the picture only
    shoot(app, "phone-typing")
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": 390, "height": 844, "deviceScaleFactor": 3, "mobile": True})
    at_bottom(driver, "the phone's screen")
    bob.send("PRIVMSG #lobby :seen on the phone")
    wait_until(lambda: "seen on the phone" in texts(driver), "a line on the phone")
    at_bottom(driver, "a line arriving on the phone")
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    driver.set_window_size(1280, 800)

    # Scrolled up: new lines wait behind a button; the button takes the reader down.
    # The reader scrolls up (a wheel turned, then the list at its top).
    driver.execute_script("const b = document.getElementById('messages'); b.dispatchEvent(new WheelEvent('wheel', {deltaY: -500})); b.scrollTop = 0")
    settled(driver)
    for n in range(3):
        bob.send(f"PRIVMSG #lobby :while you read {n}")
    button = driver.find_element(By.ID, "new-below")
    wait_until(lambda: button.is_displayed() and button.text == "3 new messages ↓", "the new messages button",
               shows=lambda: repr(button.text))
    assert gap(driver) > 100, "the view stayed where the reader was"
    shoot(app, "new-below")
    button.click()
    at_bottom(driver, "the button")
    assert not button.is_displayed()

    # Away in the server window while bob talks: back in #lobby a line says where reading stopped.
    driver.find_element(By.CSS_SELECTOR, '#conversations li[data-target="*"]').click()
    bob.send("PRIVMSG #lobby :said while you were away")
    driver.find_element(By.CSS_SELECTOR, '#conversations li[data-target="#lobby"]').click()
    divider = wait_until(lambda: driver.find_element(By.CSS_SELECTOR, "#messages li.unread-line"), "the new messages line")
    following = driver.execute_script("return arguments[0].nextElementSibling.querySelector('.text').textContent", divider)
    assert following == "said while you were away"
    shoot(app, "unread-line")

    # The server goes away: a banner says so and counts down; the room keeps its people.
    app.stop()
    banner = driver.find_element(By.ID, "banner")
    wait_until(lambda: banner.is_displayed() and "Connection lost — retrying in" in banner.text, "the outage banner",
               shows=lambda: banner.text)
    assert driver.find_element(By.ID, "topic").text != "You are not in this room"
    assert "stale" in driver.find_element(By.ID, "members").get_attribute("class")
    assert driver.find_element(By.ID, "retry-now").is_displayed()
    box = driver.find_element(By.ID, "input")
    box.send_keys("typed while the server was away")
    box.send_keys(Keys.ENTER)
    wait_until(lambda: driver.find_elements(By.CSS_SELECTOR, "#messages li.local.held"), "the held line")
    assert box.get_attribute("value") == ""
    wait_until(lambda: "1 line to send when it is back" in banner.text, "the banner counting the held line", shows=lambda: banner.text)
    shoot(app, "outage")

    # Back: the page reconnects by itself; the held line reaches bob once, before what is typed next.
    app.start()
    back = time.monotonic()
    bob = RawClient(app.port)
    bob.register("bob")
    wait_until(lambda: not banner.is_displayed(), "the banner gone after the server came back", timeout=30)
    print(f"the page was back {time.monotonic() - back:.1f} s after the server")
    wait_until(lambda: not driver.find_elements(By.CSS_SELECTOR, "#messages li.local.held"), "the held note replaced by the line")
    box.send_keys("and this after it")
    box.send_keys(Keys.ENTER)
    # bob hears ann's lines live, or in the room's history on joining when the page was back first:
    # either way each once, in order.
    said = []
    bob.wait_for(lambda l: (said.append(l) if ":ann!" in l and "PRIVMSG #lobby" in l else None) or "and this after it" in l, timeout=15)
    assert [l.split("PRIVMSG #lobby :", 1)[1] for l in said] == ["typed while the server was away", "and this after it"], said
    shoot(app, "back")
    bob.close()


def test_the_page_installs_as_an_app_and_opens_offline(app):
    """The manifest and service worker pass Chromium's installability checks; with the server
    gone the page still opens, from the service worker's copy, and says the server cannot be reached."""
    from selenium.webdriver.common.by import By
    driver = app.driver
    driver.get(f"http://127.0.0.1:{app.web_port}/")
    scope = driver.execute_async_script(
        "const done = arguments[0]; navigator.serviceWorker.ready.then((r) => done(r.scope), () => done(null));")
    assert scope == f"http://127.0.0.1:{app.web_port}/"
    manifest = driver.execute_cdp_cmd("Page.getAppManifest", {})
    assert manifest.get("errors") == [], manifest
    assert manifest["url"].endswith("/manifest.webmanifest")
    errors = driver.execute_cdp_cmd("Page.getInstallabilityErrors", {})
    assert errors.get("installabilityErrors") == [], errors
    # The shell is in the cache once the worker is active.
    cached = driver.execute_async_script(
        "const done = arguments[0]; caches.open('chat-tui-shell').then((c) => c.keys()).then((k) => done(k.map((r) => new URL(r.url).pathname).sort()));")
    assert cached == ["/", "/app.js", "/icon-192.png", "/icon-512.png", "/manifest.webmanifest", "/style.css"], cached
    shoot(app, "installable")

    app.stop()
    driver.refresh()
    note = wait_until(lambda: driver.find_element(By.ID, "login-error").text, "the page from the cache saying the server is away")
    assert "cannot be reached" in note and driver.find_element(By.ID, "nick").is_displayed()
    shoot(app, "offline")


def test_an_account_made_on_the_page_settings_notifications_and_plain_words(app):
    """A visitor makes an account from the login form; the server window is in words; /help
    speaks of files; a direct message while the page is hidden asks (with a button) to notify,
    then notifies, and the tab's icon gets a dot; the settings panel changes the theme, lines,
    colours and time and is kept across a reload, which logs the account in again by itself; a long line is one message; deleting asks."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    driver = app.driver
    bob = RawClient(app.port)
    bob.register("bob")
    url = f"http://127.0.0.1:{app.web_port}/"
    driver.get(url)
    wait_until(lambda: driver.find_element(By.ID, "create-account").is_displayed(), "the create-account button")
    driver.find_element(By.ID, "nick").send_keys("cara")
    driver.find_element(By.ID, "password").send_keys("correct horse battery")
    driver.find_element(By.ID, "create-account").click()
    wait_until(lambda: any("Your account cara is made" in e.text for e in driver.find_elements(By.CSS_SELECTOR, "#messages li.local")),
               "the account made", shows=lambda: driver.find_element(By.ID, "messages").text)
    shoot(app, "account-made")

    # The server window: sentences, not parameters.
    driver.find_element(By.CSS_SELECTOR, '#conversations li[data-target="*"]').click()
    server = wait_until(lambda: driver.find_element(By.ID, "messages").text, "the server window")
    assert "This is " in server and "are supported" not in server and "CHANTYPES" not in server, server
    box = driver.find_element(By.ID, "input")
    box.send_keys("/help")
    box.send_keys(Keys.ENTER)
    wait_until(lambda: "Files: the paper-clip button" in driver.find_element(By.ID, "messages").text, "/help on files")
    # A command the page does not know is the server's: /whois gets the server's answer.
    box.send_keys("/whois cara")
    box.send_keys(Keys.ENTER)
    wait_until(lambda: "cara is in #lobby" in driver.find_element(By.ID, "messages").text, "the server's WHOIS answer, in words",
               shows=lambda: driver.find_element(By.ID, "messages").text[-400:])
    shoot(app, "server-window")
    driver.find_element(By.CSS_SELECTOR, '#conversations li[data-target="#lobby"]').click()

    # Hidden, a direct message: the page asks (a button: a browser grants only on a click) ...
    driver.execute_script("""
        document.hasFocus = () => false;
        window.__shown = [];
        const Real = window.Notification;
        window.Notification = class extends Real {
            constructor(title, options) { super(title, options); window.__shown.push(title + ' | ' + options.body); }
        };""")
    bob.send("PRIVMSG cara :are you there?")
    ask = driver.find_element(By.ID, "notify-ask")
    wait_until(lambda: ask.is_displayed(), "the question whether to notify")
    shoot(app, "notify-ask")
    driver.execute_cdp_cmd("Browser.grantPermissions", {"origin": url.rstrip("/"), "permissions": ["notifications"]})
    driver.find_element(By.ID, "notify-yes").click()
    wait_until(lambda: not ask.is_displayed(), "the question answered")
    # ... and from then on notifies; the tab's icon has a dot.
    bob.send("PRIVMSG cara :second try")
    wait_until(lambda: driver.execute_script("return window.__shown") == ["bob | second try"], "the notification",
               shows=lambda: str(driver.execute_script("return window.__shown")))
    wait_until(lambda: driver.find_element(By.CSS_SELECTOR, 'link[rel="icon"]').get_attribute("href").startswith("data:image/png"),
               "the icon's dot")
    driver.execute_script("delete document.hasFocus")

    # Settings: light, compact, no nick colours, a 12-hour clock; kept after a reload.
    driver.find_element(By.ID, "settings-button").click()
    dialog = driver.find_element(By.ID, "settings")
    wait_until(lambda: dialog.is_displayed(), "the settings panel")
    from selenium.webdriver.support.ui import Select
    Select(driver.find_element(By.ID, "set-theme")).select_by_value("light")
    driver.find_element(By.ID, "set-compact").click()
    driver.find_element(By.ID, "set-colors").click()
    Select(driver.find_element(By.ID, "set-clock")).select_by_value("12")
    shoot(app, "settings")
    driver.find_element(By.ID, "settings-close").click()
    assert driver.execute_script("return document.documentElement.dataset.theme") == "light"
    assert driver.execute_script("return document.body.className").split() == ["compact", "plain-nicks", "clock12"]
    wait_until(lambda: any(t.text.endswith(("am", "pm")) for t in driver.find_elements(By.CSS_SELECTOR, "#messages .time")), "a 12-hour time")
    shoot(app, "light-compact")
    driver.refresh()
    assert driver.execute_script("return document.documentElement.dataset.theme") == "light"
    assert "compact" in driver.execute_script("return document.body.className")
    driver.execute_script("localStorage.removeItem('chat-tui.settings')")

    # The reload logged the account in again by itself (kept for this tab), back in its rooms;
    # a long line goes as one message: bob, who has no multiline, gets its parts, which join back into it.
    box = wait_until(lambda: driver.find_element(By.ID, "input") if driver.find_element(By.ID, "input").is_displayed() else None, "the chat")
    # What the tab keeps is the server's login token, never the password.
    kept = driver.execute_script("return JSON.stringify([Object.entries(sessionStorage), Object.entries(localStorage)])")
    assert "correct horse battery" not in kept, kept
    login = json.loads(driver.execute_script("return localStorage.getItem('chat-tui.login')"))
    assert sorted(login) == ["account", "token"] and login["account"] == "cara" and len(login["token"]) == 48, login
    # A new tab of the same browser is logged in as well, without the password.
    first = driver.current_window_handle
    driver.switch_to.new_window("tab")
    driver.get(url)
    wait_until(lambda: driver.find_element(By.ID, "input").is_displayed() and "cara" in driver.find_element(By.ID, "status-nick").text,
               "the new tab logged in by itself")
    driver.close()
    driver.switch_to.window(first)
    wait_until(lambda: driver.find_elements(By.CSS_SELECTOR, '#conversations li[data-target="#lobby"]'), "#lobby")
    driver.find_element(By.CSS_SELECTOR, '#conversations li[data-target="#lobby"]').click()
    long = " ".join(f"word{n}" for n in range(140))
    box = driver.find_element(By.ID, "input")
    driver.execute_script("arguments[0].value = arguments[1]", box, long)
    box.send_keys(Keys.ENTER)
    parts = []
    bob.wait_for(lambda l: (parts.append(l.split("PRIVMSG #lobby :", 1)[1]) if ":cara!" in l and "PRIVMSG #lobby" in l else None)
                 or "".join(parts) == long, timeout=15)
    assert len(parts) > 1
    wait_until(lambda: long in texts(driver), "the long line as one message in the page", shows=lambda: str(texts(driver)[-3:]))

    # Deleting asks first; bob's message has no delete button for cara, who does not run the room.
    bob.send("PRIVMSG #lobby :bob's own words")
    wait_until(lambda: "bob's own words" in texts(driver), "bob's line")
    # IRC formatting shows as formatting (bold, colours, italics), its codes never as text.
    bob.send("PRIVMSG #lobby :\x02loud\x02 and \x0304,01red\x03 and \x1ditalic https://example.org/x\x0f done")
    wait_until(lambda: "loud and red and italic https://example.org/x done" in texts(driver), "the formatted line",
               shows=lambda: str(texts(driver)[-2:]))
    row = driver.find_elements(By.CSS_SELECTOR, "#messages li.message")[-1]
    assert row.find_element(By.CSS_SELECTOR, ".text span.f-b").text == "loud"
    assert row.find_element(By.CSS_SELECTOR, ".text span.f4.k1").text == "red"
    italic = row.find_element(By.CSS_SELECTOR, ".text span.f-i")
    assert italic.text == "italic https://example.org/x"
    assert italic.find_element(By.CSS_SELECTOR, "a").get_attribute("href") == "https://example.org/x"
    shoot(app, "formatting")
    # A www. address is a link too (opened as https), without its trailing full stop.
    bob.send("PRIVMSG #lobby :docs at www.example.org/guide.")
    wait_until(lambda: "docs at www.example.org/guide." in texts(driver), "the www line")
    link = driver.find_elements(By.CSS_SELECTOR, "#messages li.message")[-1].find_element(By.CSS_SELECTOR, ".text a")
    assert link.get_attribute("href") == "https://www.example.org/guide" and link.text == "www.example.org/guide"
    rows = driver.find_elements(By.CSS_SELECTOR, "#messages li.message")
    mine = next(r for r in rows if r.find_element(By.CSS_SELECTOR, ".text").text == long)
    theirs = next(r for r in rows if r.find_element(By.CSS_SELECTOR, ".text").text == "bob's own words")
    theirs.click()
    assert not driver.find_element(By.CSS_SELECTOR, ".tools .tool[aria-label='Delete (d)']").is_displayed()
    mine.click()
    driver.find_element(By.CSS_SELECTOR, ".tools .tool[aria-label='Delete (d)']").click()
    ask = driver.find_element(By.ID, "confirm-bar")
    assert ask.is_displayed() and driver.find_element(By.ID, "confirm-text").text.startswith("Delete your message")
    shoot(app, "delete-asks")
    driver.switch_to.active_element.send_keys("n")
    assert not ask.is_displayed()
    assert long in texts(driver)
    mine.click()
    driver.find_element(By.CSS_SELECTOR, ".tools .tool[aria-label='Delete (d)']").click()
    driver.switch_to.active_element.send_keys("y")
    wait_until(lambda: long not in texts(driver), "the message deleted")
    bob.close()

    # Sign out: the server forgets the tab's token; nobody who copied it logs in with it.
    driver.find_element(By.ID, "settings-button").click()
    driver.find_element(By.ID, "sign-out").click()
    wait_until(lambda: driver.find_element(By.ID, "nick").is_displayed(), "the login form after signing out")
    assert driver.execute_script("return localStorage.getItem('chat-tui.login')") is None
    thief = RawClient(app.port)
    for line in ["CAP LS 302", "CAP REQ :chat-tui.org/resume", "RESUME " + login["token"], "NICK thief", "USER t 0 * :t", "CAP END"]:
        thief.send(line)
    thief.wait_for(lambda l: "FAIL RESUME INVALID_TOKEN" in l, timeout=10)
    thief.close()


def test_an_uploaded_image_shows_as_a_thumbnail_the_page_draws(app, tmp_path):
    """An image sent through the host's file button shows as a thumbnail drawn by the page from
    the file (from the host only), at most 320×240; a click shows it whole; a file named .png
    that is no image keeps its link and gets no thumbnail."""
    from selenium.webdriver.common.by import By
    driver = app.driver
    guest(app, "pix")
    wait_until(lambda: not driver.find_element(By.ID, "file-button").get_attribute("hidden"), "the file button (FILEHOST offered)")
    chooser = driver.find_element(By.ID, "file-input")
    driver.execute_script("arguments[0].hidden = false", chooser)
    page = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Sources", "ChatWeb", "Page")
    image = tmp_path / "the icon.png"
    image.write_bytes(open(os.path.join(page, "icon-512.png"), "rb").read())
    chooser.send_keys(str(image))
    thumb = wait_until(lambda: driver.find_element(By.CSS_SELECTOR, "#messages button.thumb img"), "the thumbnail")
    size = wait_until(lambda: driver.execute_script("return arguments[0].complete && [arguments[0].naturalWidth, arguments[0].naturalHeight]", thumb),
                      "the thumbnail decoded")
    assert size == [240, 240], size
    assert driver.execute_script("return arguments[0].src", thumb).startswith("blob:")
    shoot(app, "thumbnail")
    thumb.click()
    whole = wait_until(lambda: driver.find_element(By.ID, "image-view") if driver.find_element(By.ID, "image-view").is_displayed() else None, "the image whole")
    assert driver.execute_script("return document.getElementById('image-view-img').naturalWidth") == 512
    shoot(app, "image-whole")
    whole.find_element(By.CSS_SELECTOR, "button.close").click()

    fake = tmp_path / "not really.png"
    fake.write_bytes(b"this is text, not a picture" * 10)
    chooser.send_keys(str(fake))
    wait_until(lambda: any("not really.png" in a.text for a in driver.find_elements(By.CSS_SELECTOR, "#messages a.file-link")), "the second file's link")
    # Its thumbnail's place is made hidden at once and dropped when the decode fails.
    wait_until(lambda: not driver.find_elements(By.CSS_SELECTOR, "#messages button.thumb[hidden]"), "the failed thumbnail dropped")
    assert len(driver.find_elements(By.CSS_SELECTOR, "#messages button.thumb")) == 1


def test_the_search_box_asks_the_server_and_opens_a_result(app):
    """The 🔍 box (and /search) asks the server (soju.im/search); a result opens its conversation."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    driver = app.driver
    bob = RawClient(app.port)
    bob.register("bob")
    guest(app, "sue")
    wait_until(lambda: driver.find_element(By.CSS_SELECTOR, '#members li[data-nick="bob"]'), "bob in #lobby")
    bob.send("PRIVMSG #lobby :the release notes are in the wiki")
    for n in range(40):
        bob.send(f"PRIVMSG #lobby :filler {n}")
    wait_until(lambda: "filler 39" in texts(driver), "the last line")
    driver.find_element(By.ID, "search-button").click()
    box = driver.find_element(By.ID, "search-input")
    box.send_keys("release notes")
    box.send_keys(Keys.ENTER)
    result = wait_until(lambda: driver.find_element(By.CSS_SELECTOR, "#search-results li"), "a search result")
    assert "bob: the release notes are in the wiki" in result.text
    assert driver.find_element(By.ID, "search-status").text == "1 message, newest first"
    shoot(app, "search")
    result.click()
    wait_until(lambda: not driver.find_element(By.ID, "search").is_displayed(), "the search closed")
    wait_until(lambda: driver.execute_script("""
        const li = [...document.querySelectorAll('#messages li.message')].find((e) => e.textContent.includes('release notes'));
        if (!li) return false;
        const r = li.getBoundingClientRect(), b = document.getElementById('messages').getBoundingClientRect();
        return r.top >= b.top && r.bottom <= b.bottom;"""), "the message found, in view")
    box = driver.find_element(By.ID, "input")
    box.send_keys("/search nothing-like-this")
    box.send_keys(Keys.ENTER)
    wait_until(lambda: driver.find_element(By.ID, "search-status").text == "Nothing found", "an empty search said")
    bob.close()


def test_a_jump_back_fills_its_hole_the_room_list_reads_and_a_reload_keeps_the_conversation(app):
    """A search result older than what is loaded: the page loads the lines around it and then
    every line between them and the newest (no silent hole); /list names each room with its
    people; a reload comes back to the conversation that was in view; the toolbar's icons are
    drawn, not emoji."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    driver = app.driver
    bob = RawClient(app.port)
    bob.register("bob")
    bob.send("JOIN #kilo")
    bob.send("PRIVMSG #lobby :the release notes are in the wiki")
    for n in range(150):
        bob.send(f"PRIVMSG #lobby :filler {n}")
    bob.send("PING sync")
    bob.wait_for(lambda l: "PONG" in l and "sync" in l)
    guest(app, "tia")
    wait_until(lambda: "filler 149" in texts(driver), "the newest line")
    assert "filler 20" not in texts(driver), "only the newest page is loaded on joining"
    # Scrolled to the top, the page before comes: in order before the lines shown, though the
    # burst's lines share their milliseconds.
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.actions.wheel_input import ScrollOrigin
    def wheel_up():
        ActionChains(driver).scroll_from_origin(ScrollOrigin.from_element(driver.find_element(By.ID, "messages")), 0, -30000).perform()
        return "filler 90" in texts(driver)
    wait_until(wheel_up, "the page before, on scrolling up", shows=lambda: str(texts(driver)[:3]))
    shown = [int(t.split()[1]) for t in texts(driver) if t.startswith("filler ")]
    assert shown == sorted(shown) and len(shown) == len(set(shown)), shown
    assert driver.find_elements(By.CSS_SELECTOR, "#search-button svg.icon"), "the search button is drawn"
    driver.find_element(By.ID, "search-button").click()
    box = driver.find_element(By.ID, "search-input")
    box.send_keys("release notes")
    box.send_keys(Keys.ENTER)
    wait_until(lambda: driver.find_element(By.CSS_SELECTOR, "#search-results li"), "a search result").click()
    wait_until(lambda: "the release notes are in the wiki" in texts(driver), "the old line loaded")
    wait_until(lambda: all(f"filler {n}" in set(texts(driver)) for n in range(150)), "every line between it and the newest",
               shows=lambda: str([n for n in range(150) if f"filler {n}" not in set(texts(driver))][:10]))
    shoot(app, "jump-filled")

    # /list: each room with its people, in the conversation where it was typed.
    box = driver.find_element(By.ID, "input")
    box.send_keys("/list")
    box.send_keys(Keys.ENTER)
    wait_until(lambda: any(t.startswith("#lobby — 2 people") for t in [x.strip() for x in texts(driver)]), "the room list",
               shows=lambda: str(texts(driver)[-4:]))
    # A room's name there is a button: a click joins it and shows it.
    shoot(app, "room-list")
    next(b for b in driver.find_elements(By.CSS_SELECTOR, "#messages .room-link") if b.text == "#kilo").click()
    wait_until(lambda: driver.execute_script("return (document.querySelector('#conversations li[aria-selected=\"true\"]') || {dataset: {}}).dataset.target") == "#kilo",
               "#kilo joined from the list and in view")

    # A second room in view, then a reload: back in it.
    box.send_keys("/join #zulu")
    box.send_keys(Keys.ENTER)
    wait_until(lambda: driver.find_element(By.CSS_SELECTOR, '#conversations li[data-target="#zulu"]'), "#zulu")
    driver.find_element(By.CSS_SELECTOR, '#conversations li[data-target="#zulu"]').click()
    driver.refresh()
    wait_until(lambda: driver.execute_script("return (document.querySelector('#conversations li[aria-selected=\"true\"]') || {dataset: {}}).dataset.target") == "#zulu",
               "#zulu in view again after the reload",
               shows=lambda: driver.execute_script("return document.getElementById('conversations').innerHTML")[:800])
    bob.close()


def test_a_guest_keeps_its_direct_messages_across_a_reload_and_signing_out_leaves_nothing(app):
    """A guest's direct conversations are the tab's (the server keeps none for a guest): a reload
    brings them back, still unread; Sign out then a new guest in the same tab sees none of them."""
    from selenium.webdriver.common.by import By
    driver = app.driver
    bob = RawClient(app.port)
    bob.register("bob")
    guest(app, "una")
    wait_until(lambda: driver.find_element(By.CSS_SELECTOR, '#members li[data-nick="bob"]'), "bob in #lobby")
    bob.send("PRIVMSG una :the code is 1234")
    badge = lambda: driver.execute_script("const li = document.querySelector('#conversations li[data-target=\"bob\"]'); return li ? li.querySelector('.badge').textContent : null")
    wait_until(lambda: badge() == "1!", "bob's message counted, for una", shows=lambda: str(badge()))
    driver.refresh()
    wait_until(lambda: badge() == "1!", "bob's message still there and unread after the reload", shows=lambda: str(badge()))
    driver.find_element(By.ID, "settings-button").click()
    driver.find_element(By.ID, "sign-out").click()
    wait_until(lambda: driver.find_element(By.ID, "nick").is_displayed(), "the login form after signing out")
    nick = driver.find_element(By.ID, "nick")
    nick.clear()
    nick.send_keys("vic")
    driver.find_element(By.ID, "guest").click()
    wait_until(lambda: driver.find_elements(By.CSS_SELECTOR, '#conversations li[data-target="#lobby"]'), "vic in #lobby")
    assert badge() is None, "the last guest's direct conversation is gone"
    assert not any("1234" in t for t in texts(driver))
    bob.close()
