"""`samplescope serve` in a real browser: Debian's Chromium, driven by Playwright (no
browser is downloaded), loads the page, a message is typed and the real default model
replies, the same reply `samplescope generate` gives.

xterm.js draws the app on a canvas, so the page holds no text to read: the app the
page runs saves its chat (in the test's own data folder), and the reply is read there;
the page is checked to have drawn it (its pixels change).

Chromium is found at $SAMPLESCOPE_CHROMIUM, else /usr/bin/chromium (`make test`
installs Debian's package when it is missing).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from backend.config.paths import default_store_path
from backend.store.store import ChatStore
from tui.cli.main import main
from tui.cli.serve import app_command, checked_app_args, is_loopback

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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def wait_for_port(port: int, server: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"the server exited with {server.returncode}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise AssertionError(f"nothing listened on port {port} after {timeout} s")


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """`samplescope serve` on a free loopback port, with the test's own data and config
    folders (this process's too); the whole process group (the server and the app each
    tab starts) ends after."""
    monkeypatch.setenv("SAMPLESCOPE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("SAMPLESCOPE_CONFIG_DIR", str(tmp_path / "config"))
    port = free_port()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(Path(__file__).resolve().parents[2]), env.get("PYTHONPATH")) if p
    )
    command = [sys.executable, "-m", "tui.cli.main", "serve", "--port", str(port)]
    log = (tmp_path / "serve.log").open("wb")
    process = subprocess.Popen(
        [*command, "--", *APP_OPTIONS],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_for_port(port, process, START_SECONDS)
        yield f"http://127.0.0.1:{port}"
    finally:
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=15)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=15)
        log.close()


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
    server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from playwright.sync_api import sync_playwright

    reply = expected_reply(capsys)
    assert reply.strip(), reply
    assert Path(CHROMIUM).is_file(), f"no Chromium at {CHROMIUM}: apt-get install chromium"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
        )
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(server, wait_until="domcontentloaded", timeout=START_SECONDS * 1000)
            # The page shows the app once the app's first bytes arrive.
            page.wait_for_selector("body.-first-byte", timeout=START_SECONDS * 1000)
            page.wait_for_selector("#terminal.-connected", timeout=START_SECONDS * 1000)
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


def test_serve_listens_on_loopback_unless_asked_and_checks_the_apps_options(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.2")
    assert checked_app_args(["--", "--no-save", "-t", "0.5"]) == ["--no-save", "-t", "0.5"]
    command = app_command(["--model", "a b.gguf"], python="/py")
    assert command == "/py -m tui.cli.main --model 'a b.gguf'"
    assert main(["serve", "--port", "0"]) == 2
    assert "invalid port 0" in capsys.readouterr().err
    assert main(["serve", "--", "--no-such-option"]) == 2
    assert "not an option of the app: --no-such-option" in capsys.readouterr().err
