"""`samplescope serve` in a real browser: Debian's Chromium, driven by Playwright (no
browser is downloaded), loads the page, a message is typed and the real default model
replies, the same reply `samplescope generate` gives.

xterm.js draws the app on a canvas, so the page holds no text to read: the app the
page runs saves its chat (in the test's own data folder), and the reply is read there;
the page is checked to have drawn it (its pixels change).

Chromium is found at $SAMPLESCOPE_CHROMIUM, else /usr/bin/chromium (`make test`
installs Debian's package when it is missing and it can). Without it the browser test
fails saying how to get it, unless SAMPLESCOPE_SKIP_BROWSER=1 (then it is skipped).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import pytest

from backend.config.paths import default_store_path
from backend.store.store import ChatStore
from tui.cli.commands.serve import app_command, checked_app_args, is_loopback
from tui.cli.main import main

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

CHROMIUM = os.environ.get("SAMPLESCOPE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
PROMPT = "Name three fruits."
APP_OPTIONS = ["--max-tokens", "8", "--temperature", "0", "--threads", "1", "--ctx", "512"]
START_SECONDS = 60.0
REPLY_SECONDS = 120.0
PORT_TRIES = 5
"""textual-serve takes a port number, not a bound socket: a port found free may be
taken before the server binds it, and then another is tried."""


def check_chromium(path: str, environ: Mapping[str, str]) -> None:
    """Fail when there is no Chromium at `path`, saying how to get one; skip instead
    when SAMPLESCOPE_SKIP_BROWSER=1."""
    if Path(path).is_file():
        return
    hint = (
        f"no Chromium at {path}: install it (Debian: apt-get install chromium), set"
        " SAMPLESCOPE_CHROMIUM to a Chromium binary, or set SAMPLESCOPE_SKIP_BROWSER=1 to"
        " skip the browser test"
    )
    if environ.get("SAMPLESCOPE_SKIP_BROWSER") == "1":
        pytest.skip(hint)
    pytest.fail(hint)


@pytest.fixture
def chromium() -> str:
    """The Chromium binary the browser test drives (see `check_chromium`)."""
    check_chromium(CHROMIUM, os.environ)
    return CHROMIUM


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


class PortTaken(Exception):
    """The server could not bind its port (another process took it meanwhile)."""


def wait_for_port(
    port: int, server: subprocess.Popen[bytes], timeout: float, log_path: Path, query: str = ""
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            output = log_path.read_text(errors="replace")
            if "address already in use" in output.lower():
                raise PortTaken(output)
            raise AssertionError(f"the server exited with {server.returncode}:\n{output}")
        try:  # the server's page: not whatever else may listen on the port
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/{query}", timeout=1) as page:
                if page.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"nothing listened on port {port} after {timeout} s")


def stop(process: subprocess.Popen[bytes]) -> None:
    """End the process's whole group (the server and the app each tab starts)."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=15)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=15)


@contextmanager
def serving(
    log_path: Path,
    ports: Callable[[], int] = free_port,
    serve_options: tuple[str, ...] = (),
    token: str | None = None,
) -> Iterator[str]:
    """`samplescope serve` on a free port (another one when the port is taken before
    the server binds it), on loopback unless `serve_options` say otherwise; its URL on
    127.0.0.1. `token` is given as $SAMPLESCOPE_SERVE_TOKEN."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(Path(__file__).resolve().parents[2]), env.get("PYTHONPATH")) if p
    )
    if token is not None:
        env["SAMPLESCOPE_SERVE_TOKEN"] = token
    query = "" if token is None else f"?token={token}"
    for _ in range(PORT_TRIES):
        port = ports()
        command = [sys.executable, "-m", "tui.cli.main", "serve", "--port", str(port)]
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                [*command, *serve_options, "--", *APP_OPTIONS],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        try:
            try:
                wait_for_port(port, process, START_SECONDS, log_path, query)
            except PortTaken:
                continue
            yield f"http://127.0.0.1:{port}"
            return
        finally:
            stop(process)
    raise AssertionError(f"no free port bound in {PORT_TRIES} tries")


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """`samplescope serve` with the test's own data and config folders (this process's
    too); the whole process group ends after."""
    monkeypatch.setenv("SAMPLESCOPE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("SAMPLESCOPE_CONFIG_DIR", str(tmp_path / "config"))
    with serving(tmp_path / "serve.log") as url:
        yield url


class Traffic:
    """What a page asked for: every request, the ones that failed or got an error
    status, and its websockets."""

    def __init__(self, page: Page) -> None:
        self.requests: list[str] = []
        self.failed: list[str] = []
        self.websockets: list[str] = []
        page.on("request", lambda request: self.requests.append(request.url))
        page.on("requestfailed", lambda request: self.failed.append(request.url))
        page.on(
            "response",
            lambda response: response.status >= 400 and self.failed.append(response.url),
        )
        page.on("websocket", lambda socket: self.websockets.append(socket.url))

    def foreign(self, origin: str) -> list[str]:
        """The requests to anywhere but `origin` (its page's own)."""
        return [url for url in self.requests if urlsplit(url).netloc != urlsplit(origin).netloc]


def open_app(browser: Browser, url: str) -> tuple[Page, Traffic]:
    """A page opened at `url`, once the app's websocket is open and its first bytes
    arrived."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    traffic = Traffic(page)
    page.goto(url, wait_until="domcontentloaded", timeout=START_SECONDS * 1000)
    # The page shows the app once the app's first bytes arrive.
    page.wait_for_selector("body.-first-byte", timeout=START_SECONDS * 1000)
    page.wait_for_selector("#terminal.-connected", timeout=START_SECONDS * 1000)
    return page, traffic


ERROR_STATUS = re.compile(r'"GET (\S+)" [45]\d\d\b')
"""An access log line of a request that got an error status."""


def served_urls(log_path: Path) -> list[str]:
    """The addresses `serve` printed, each on its line under "serving the app at"."""
    lines = log_path.read_text(errors="replace").splitlines()
    start = lines.index("samplescope: serving the app at") + 1
    end = lines.index("Press Ctrl+C to stop.")
    return [line.strip() for line in lines[start:end]]


def expected_reply(capsys: pytest.CaptureFixture[str]) -> str:
    """The reply the same options give headless."""
    assert main(["generate", PROMPT, *APP_OPTIONS, "--json"]) == 0
    text: str = json.loads(capsys.readouterr().out)["text"]
    return text


def saved_turns() -> list[tuple[str, str]]:
    """(role, text) of the turns of the chats saved so far."""
    path = default_store_path()
    if not path.exists():
        return []
    with ChatStore(path) as store:
        return [
            (message.role, message.content)
            for summary in store.list_chats()
            for message in store.load_chat(summary.id).messages
        ]


def test_the_page_loads_and_a_message_gets_the_models_reply(
    chromium: str, server: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from playwright.sync_api import sync_playwright

    reply = expected_reply(capsys)
    assert reply.strip(), reply
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium, args=CHROMIUM_ARGS, headless=True
        )
        try:
            page, traffic = open_app(browser, server)
            time.sleep(1)
            before = page.screenshot()
            page.focus("textarea.xterm-helper-textarea")  # xterm.js takes the keys there
            page.keyboard.type(PROMPT, delay=20)
            # Enter sends once the model is loaded (before, the app keeps the text and
            # says so): press it until the message is saved as the reply starts.
            deadline = time.monotonic() + START_SECONDS
            while ("user", PROMPT) not in saved_turns():
                assert time.monotonic() < deadline, "the message was never sent"
                page.keyboard.press("Enter")
                for _ in range(20):
                    if ("user", PROMPT) in saved_turns():
                        break
                    time.sleep(0.25)
            deadline = time.monotonic() + REPLY_SECONDS
            while ("assistant", reply) not in saved_turns():
                assert time.monotonic() < deadline, f"no reply saved: {saved_turns()}"
                time.sleep(0.5)
            time.sleep(1)  # the last frame reaches the page
            after = page.screenshot()
        finally:
            browser.close()
    assert saved_turns() == [("user", PROMPT), ("assistant", reply)]
    assert after != before
    # Nothing from another site (no web fonts: textual-serve's own), nothing missing.
    assert traffic.foreign(server) == [] and traffic.failed == []
    assert any("/static/fonts/RobotoMono" in url for url in traffic.requests)
    errors = ERROR_STATUS.findall((tmp_path / "serve.log").read_text(errors="replace"))
    assert errors == []  # the favicon's 404 the browser asks for unseen, too


def test_on_every_address_the_printed_addresses_and_any_other_give_a_working_app(
    chromium: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`serve --host 0.0.0.0`: each printed address, and 127.0.0.2 (printed nowhere),
    opens the app: the page finds its websocket at its own address, and asks nothing of
    another site."""
    from playwright.sync_api import sync_playwright

    monkeypatch.setenv("SAMPLESCOPE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("SAMPLESCOPE_CONFIG_DIR", str(tmp_path / "config"))
    token = "Tok-" + "x" * 28
    log_path = tmp_path / "serve.log"
    options = ("--host", "0.0.0.0", "--max-tabs", "3")
    with serving(log_path, serve_options=options, token=token) as loopback:
        printed = served_urls(log_path)
        assert printed[0] == f"{loopback}/?token={token}"
        assert all(urlsplit(url).hostname != "0.0.0.0" for url in printed)
        # textual.js fetches a page's `ping` address, of any site, unless the page drops it.
        other = printed[0].replace("127.0.0.1", "127.0.0.2") + "&ping=http://ping.invalid/"
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=chromium, args=CHROMIUM_ARGS, headless=True
            )
            try:
                for url in [*printed, other]:
                    page, traffic = open_app(browser, url)
                    page.close()
                    host = urlsplit(url).netloc
                    assert [urlsplit(ws).netloc for ws in traffic.websockets] == [host], url
                    assert traffic.foreign(url) == [] and traffic.failed == [], url
            finally:
                browser.close()
    access = log_path.read_text(errors="replace").split("Press Ctrl+C to stop.")[1]
    assert token not in access  # the access log shows paths without the token
    assert ERROR_STATUS.findall(access) == []


def test_serve_listens_on_loopback_unless_asked_and_checks_the_apps_options(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.2")
    assert checked_app_args(["--", "--no-save", "-t", "0.5"]) == ["--no-save", "-t", "0.5"]
    command = app_command(["--model", "a b.gguf"], python="/py")
    assert command == "/py -P -m tui.cli.main --served --model 'a b.gguf'"
    assert main(["serve", "--port", "0"]) == 2
    assert "invalid port 0" in capsys.readouterr().err
    assert main(["serve", "--", "--no-such-option"]) == 2
    assert "not an option of the app: --no-such-option" in capsys.readouterr().err


def test_without_chromium_the_browser_test_fails_saying_how_unless_skipped(
    tmp_path: Path,
) -> None:
    missing = str(tmp_path / "chromium")
    with pytest.raises(pytest.fail.Exception, match="apt-get install chromium"):
        check_chromium(missing, {})
    with pytest.raises(pytest.skip.Exception, match="SAMPLESCOPE_SKIP_BROWSER=1"):
        check_chromium(missing, {"SAMPLESCOPE_SKIP_BROWSER": "1"})


def test_a_port_taken_before_the_server_binds_it_is_traded_for_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SAMPLESCOPE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("SAMPLESCOPE_CONFIG_DIR", str(tmp_path / "config"))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        offered = iter([busy, free_port()])
        with serving(tmp_path / "serve.log", lambda: next(offered)) as url:
            assert not url.endswith(f":{busy}")
            with socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1])), 5):
                pass
