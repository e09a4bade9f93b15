"""`samplescope serve` locked down: Host and Origin checked, a token beyond loopback,
a tab limit (against a real server on a loopback port, with a stand-in app), files only
in samplescope's own folders, and each tab runs samplescope's own code whatever the
working directory."""

from __future__ import annotations

import asyncio
import gc
import shlex
import socket
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from aiohttp import ClientSession, CookieJar, WSServerHandshakeError
from aiohttp.test_utils import TestServer

from backend.config import paths
from backend.config.paths import user_file
from backend.config.setting_input import read_setting_text
from backend.errors import FileAccessError
from sampling.built_in import BUILT_IN_REGISTRY
from sampling.errors import SettingsError
from sampling.settings.record import SamplerSettings
from tui.cli.commands.serve import ServeError, app_command, served_token
from tui.cli.commands.serve.gate import TOKEN_ENV, serve_gate
from tui.cli.commands.serve.server import GatedServer
from tui.preset_commands import import_preset


def test_a_tab_runs_samplescopes_own_code_whatever_the_working_directory(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "ran"
    for package in ("tui", "backend", "sampling"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text(
            f"open({str(marker)!r}, 'w').write({package!r})\n", encoding="utf-8"
        )
    command = shlex.split(app_command(["-h"]))
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: samplescope")
    assert not marker.exists()


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("127.0.0.1:8000", True),
        ("localhost:8000", True),
        ("LOCALHOST:8000", True),
        ("[::1]:8000", True),
        ("127.0.0.1:8001", False),
        ("127.0.0.1", False),
        ("attacker.example:8000", False),
        ("attacker.example@127.0.0.1:8000", False),
        ("127.0.0.1:8000/x", False),
        ("", False),
        (None, False),
    ],
)
def test_a_loopback_server_answers_only_to_its_own_address(host: str | None, allowed: bool) -> None:
    gate = serve_gate("127.0.0.1", 8000, None, token=None)
    refused = gate.refusal(host, None, None, needs_token=True)
    assert (refused is None) is allowed
    assert refused is None or refused.status == 403


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        (None, True),
        ("http://127.0.0.1:8000", True),
        ("http://localhost:8000", True),
        ("http://attacker.example", False),
        ("http://127.0.0.1:8001", False),
        ("null", False),
    ],
)
def test_only_the_served_page_may_send_requests(origin: str | None, allowed: bool) -> None:
    gate = serve_gate("127.0.0.1", 8000, None, token=None)
    refused = gate.refusal("127.0.0.1:8000", origin, None, needs_token=True)
    assert (refused is None) is allowed


def test_a_server_on_every_address_takes_ip_literals_and_its_public_url() -> None:
    gate = serve_gate("0.0.0.0", 8000, "https://scope.example/app/", token="t" * 20)
    assert gate.allows_address("192.168.1.5", 8000) and gate.allows_address("::1", 8000)
    assert gate.allows_address("scope.example", 443)
    assert not gate.allows_address("attacker.example", 8000)
    assert not gate.allows_address("192.168.1.5", 8001)
    assert gate.refusal("192.168.1.5:8000", None, None, needs_token=False) is None
    no_token = gate.refusal("192.168.1.5:8000", None, None, needs_token=True)
    wrong = gate.refusal("192.168.1.5:8000", None, "u" * 20, needs_token=True)
    assert no_token is not None and no_token.status == 401 and wrong == no_token
    assert gate.refusal("192.168.1.5:8000", None, "t" * 20, needs_token=True) is None


def test_a_token_is_made_beyond_loopback_or_taken_from_the_environment() -> None:
    assert served_token("127.0.0.1", {}) is None
    made = served_token("0.0.0.0", {})
    assert made is not None and len(made) >= 32 and made != served_token("0.0.0.0", {})
    assert served_token("127.0.0.1", {TOKEN_ENV: "s" * 16}) == "s" * 16
    with pytest.raises(ServeError, match="too short"):
        served_token("0.0.0.0", {TOKEN_ENV: "short"})


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def stand_in_app(marker: Path) -> str:
    """A command standing in for a tab's app: it adds a line to `marker`, then waits
    for the server's first byte (its quit message) and exits."""
    code = f"open({str(marker)!r}, 'a').write('started\\n'); import sys; sys.stdin.read(1)"
    return shlex.join([sys.executable, "-c", code])


def apps_started(marker: Path) -> int:
    return len(marker.read_text().splitlines()) if marker.exists() else 0


async def handshake_status(session: ClientSession, url: str, **options: Any) -> int:
    """The status a websocket handshake gets (101: it was opened, then closed again)."""
    try:
        async with session.ws_connect(url, **options):
            return 101
    except WSServerHandshakeError as error:
        return error.status


async def apps_reach(marker: Path, count: int) -> int:
    """How many apps have started once `count` have (or after 10 s)."""
    for _ in range(200):
        if apps_started(marker) >= count:
            break
        await asyncio.sleep(0.05)
    return apps_started(marker)


async def serve_and(
    marker: Path, token: str | None, max_tabs: int, check: Callable[[str], Awaitable[None]]
) -> None:
    """Serve the stand-in app on a loopback port behind a gate, then run `check(base)`."""
    port = free_port()
    gate = serve_gate("127.0.0.1", port, None, token=token, max_tabs=max_tabs)
    server = GatedServer(
        stand_in_app(marker),
        gate,
        host="127.0.0.1",
        port=port,
        public_url=None,
        open_urls=[f"http://127.0.0.1:{port}"],
    )
    test_server = TestServer(await server._make_app(), host="127.0.0.1", port=port)
    await test_server.start_server()
    try:
        await asyncio.wait_for(check(f"127.0.0.1:{port}"), 60)
        for _ in range(600):  # every tab's app has quit (each quits on its first byte)
            if server.tabs == 0:
                break
            await asyncio.sleep(0.05)
        # textual-serve leaves each app's pipes to the garbage collector: collect them
        # while the loop that must close them runs.
        gc.collect()
        await asyncio.sleep(0.1)
    finally:
        await test_server.close()


def test_a_foreign_origin_or_host_gets_403_and_starts_no_app(tmp_path: Path) -> None:
    marker = tmp_path / "apps"

    async def check(base: str) -> None:
        async with ClientSession() as session:
            foreign = {"Origin": "http://attacker.example"}
            assert await handshake_status(session, f"ws://{base}/ws", headers=foreign) == 403
            rebound = {"Host": f"attacker.example:{base.rsplit(':', 1)[1]}"}
            assert await handshake_status(session, f"ws://{base}/ws", headers=rebound) == 403
            async with session.get(f"http://{base}/", headers=rebound) as page:
                assert page.status == 403
            async with session.get(f"http://{base}/") as page:
                assert page.status == 200 and "samplescope" in await page.text()

    asyncio.run(serve_and(marker, None, 2, check))
    assert apps_started(marker) == 0


def test_without_the_token_the_page_and_the_websocket_get_401_and_no_app_starts(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "apps"
    token = "k" * 32

    async def check(base: str) -> None:
        async with ClientSession() as session:
            assert await handshake_status(session, f"ws://{base}/ws") == 401
            assert await handshake_status(session, f"ws://{base}/ws?token=wrong") == 401
            async with session.get(f"http://{base}/") as page:
                assert page.status == 401
            assert apps_started(marker) == 0
            assert await handshake_status(session, f"ws://{base}/ws/{'k' * 31}x") == 401
            assert apps_started(marker) == 0
        # A browser keeps a cookie of an IP address's page (aiohttp's jar only if unsafe).
        async with ClientSession(cookie_jar=CookieJar(unsafe=True)) as session:
            async with session.get(f"http://{base}/?token={token}") as page:
                assert page.status == 200
                assert "Set-Cookie" not in page.headers  # a cookie would reach every port
                assert page.headers["Referrer-Policy"] == "no-referrer"
            assert len(session.cookie_jar) == 0
            # The page's websocket carries the token in its path (the page's script puts
            # it there from the page's own address).
            async with session.ws_connect(f"ws://{base}/ws/{token}?width=80&height=24"):
                assert await apps_reach(marker, 1) == 1

    asyncio.run(serve_and(marker, token, 2, check))
    assert apps_started(marker) == 1


def test_the_tab_limit_holds(tmp_path: Path) -> None:
    marker = tmp_path / "apps"

    async def check(base: str) -> None:
        async with ClientSession() as session:
            async with session.ws_connect(f"ws://{base}/ws"):
                assert await apps_reach(marker, 1) == 1
                assert await handshake_status(session, f"ws://{base}/ws") == 503
            for _ in range(200):  # the first tab's app is gone: a new tab may start
                try:
                    async with session.ws_connect(f"ws://{base}/ws"):
                        assert await apps_reach(marker, 2) == 2
                        break
                except WSServerHandshakeError as error:
                    assert error.status == 503
                    await asyncio.sleep(0.05)

    asyncio.run(serve_and(marker, None, 1, check))
    assert apps_started(marker) == 2


def test_the_served_app_opens_files_only_in_its_own_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SAMPLESCOPE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("SAMPLESCOPE_CONFIG_DIR", str(tmp_path / "config"))
    own = tmp_path / "data" / "grammar.gbnf"
    own.parent.mkdir()
    own.write_text('root ::= "a"\n', encoding="utf-8")
    (tmp_path / "data" / "out").symlink_to("/etc/passwd")
    assert user_file(Path("/etc/passwd")) == Path("/etc/passwd")  # not served: any file
    monkeypatch.setattr(paths, "_OWN_FOLDERS_ONLY", True)
    assert user_file(own) == own.resolve()
    for outside in ("/etc/passwd", str(tmp_path / "data" / "out"), f"{own.parent}/../x"):
        with pytest.raises(FileAccessError, match="opens files only in"):
            user_file(Path(outside))
    spec = BUILT_IN_REGISTRY.settings_by_name["grammar"]
    assert read_setting_text(spec, f"@{own}", None) == 'root ::= "a"'
    with pytest.raises(SettingsError, match="opens files only in"):
        read_setting_text(spec, "@/etc/passwd", None)


def test_the_served_app_imports_presets_only_from_its_own_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SAMPLESCOPE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("SAMPLESCOPE_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setattr(paths, "_OWN_FOLDERS_ONLY", True)
    notices: list[str] = []
    applied: list[SamplerSettings] = []
    host = SimpleNamespace(apply_settings=applied.append, notify=lambda m, **_: notices.append(m))
    secret = tmp_path / "secret.json"
    secret.write_text('{"temp": 0.5, "password": "hunter2"}', encoding="utf-8")
    assert not import_preset(host, str(secret), tmp_path / "config" / "presets.toml")
    assert "opens files only in" in notices[-1] and "hunter2" not in notices[-1]
    assert not applied


def test_a_port_in_use_or_an_unknown_address_is_one_line_before_any_banner(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from tui.cli.main import main

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "--port", str(port)]) == 2
    assert capsys.readouterr() == (
        "",
        f"samplescope: cannot listen on 127.0.0.1:{port}: address already in use\n",
    )
    assert main(["serve", "--host", "no-such-host.invalid", "--port", "8000"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("samplescope: cannot listen on no-such-host.invalid:8000: unknown")


def test_a_token_from_the_environment_must_go_in_an_address_as_it_is() -> None:
    for token in ("with space 123456", "a/b" * 6, "t&x=1" * 4, "é" * 16):
        with pytest.raises(ServeError, match="letters, digits"):
            served_token("0.0.0.0", {TOKEN_ENV: token})
    assert served_token("0.0.0.0", {TOKEN_ENV: "Ab0-_.~" * 3}) == "Ab0-_.~" * 3
