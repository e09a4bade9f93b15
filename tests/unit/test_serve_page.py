"""`samplescope serve`'s page and terminal: the addresses it prints are ones a browser
can open, each on its own line; the page asks nothing of another site and every asset it
names is served; the access log shows no token (against a real server on a loopback
port)."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from aiohttp import ClientSession

from tests.unit.test_serve_security import apps_started, free_port, serve_and


def test_the_addresses_printed_are_ones_a_browser_can_open() -> None:
    from tui.cli.commands.serve.server import open_urls, outgoing_address

    assert open_urls("127.0.0.1", 8000, None, None) == ["http://127.0.0.1:8000"]
    assert open_urls("::1", 8000, None, "t" * 16) == [f"http://[::1]:8000/?token={'t' * 16}"]
    assert open_urls("0.0.0.0", 8000, "https://scope.example/", "t" * 16) == [
        f"https://scope.example/?token={'t' * 16}"
    ]
    # Every address: this machine's loopback one, and the one its traffic leaves by
    # (never 0.0.0.0, which names no machine a browser can reach).
    lan = outgoing_address(socket.AF_INET)
    assert open_urls("0.0.0.0", 8000, None, None) == [
        f"http://{name}:8000" for name in ["127.0.0.1", *([lan] if lan else [])]
    ]


def test_the_page_asks_nothing_of_another_site_and_every_asset_it_names_is_served(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "apps"
    token = "k" * 32

    async def check(base: str) -> None:
        async with ClientSession() as session:
            async with session.get(f"http://{base}/?token={token}") as page:
                html = await page.text()
            assets = re.findall(r'(?:href|src|url\()="?([^"\s)]+)', html)
            assert "static/js/textual.js" in assets and "data:," in assets
            assert not [a for a in assets if "//" in a or a.startswith("/")], assets
            for asset in assets:
                if not asset.startswith("data:"):  # relative to the page: no token needed
                    async with session.get(f"http://{base}/{asset}") as answer:
                        assert answer.status == 200, asset
            assert "googleapis" not in html

    asyncio.run(serve_and(marker, token, 2, check))
    assert apps_started(marker) == 0


def test_the_access_log_shows_no_token(tmp_path: Path) -> None:
    token = "Secret-" + "x" * 25
    port = free_port()
    env = {
        **os.environ,
        "SAMPLESCOPE_SERVE_TOKEN": token,
        "SAMPLESCOPE_DATA_DIR": str(tmp_path / "data"),
        "SAMPLESCOPE_CONFIG_DIR": str(tmp_path / "config"),
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
    }
    command = [sys.executable, "-m", "tui.cli.main", "serve", "--port", str(port)]
    log_path = tmp_path / "serve.log"
    with log_path.open("wb") as log:
        server = subprocess.Popen(
            command, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(f"{base}/static/css/xterm.css", timeout=1).close()
                break
            except OSError:
                assert server.poll() is None, log_path.read_text()
                time.sleep(0.1)
        statuses = []
        for path in (f"/?token={token}", f"/static/js/textual.js?token={token}", f"/ws/{token}x"):
            try:
                with urllib.request.urlopen(f"{base}{path}", timeout=10) as answer:
                    statuses.append(answer.status)
            except urllib.error.HTTPError as error:
                statuses.append(error.code)
        assert statuses == [200, 200, 401]
    finally:
        server.terminate()
        server.wait(timeout=30)
    lines = log_path.read_text().splitlines()
    assert lines[:3] == [  # the banner: the address to open on a line of its own
        "samplescope: serving the app at",
        f"  {base}/?token={token}",
        "Press Ctrl+C to stop.",
    ]
    access = "\n".join(lines[3:])
    assert "Secret" not in access, access
    assert '"GET /" 200' in access
    assert '"GET /static/js/textual.js" 200' in access
    assert '"GET /ws/{token}" 401' in access
