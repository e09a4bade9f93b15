"""The server `samplescope serve` runs: textual-serve's, behind `tui.cli.commands.serve.gate`,
with its own page and its own access log.

- The page (`page.html`, textual-serve's own made self-contained) asks nothing of
  another site: its font is the one textual-serve ships, its assets' addresses are
  relative, and it asks for no favicon (the 404 textual-serve's page gets). It finds
  the app's websocket at its own address, whichever the browser reached it by (a server
  on 0.0.0.0 is reached at 127.0.0.1, at a LAN address, behind a proxy), and passes the
  token on in the websocket's path.
- The access log gives each request's path without its query, and the websocket's
  route without its token: the log on the terminal holds no secret.
- The banner gives the address(es) to open each on a line of its own; a server on
  every address gives this machine's loopback address and the one its outgoing
  traffic leaves by.
"""

from __future__ import annotations

import asyncio
import ipaddress
import signal
import socket
from functools import cache
from pathlib import Path

from aiohttp import web
from aiohttp.abc import AbstractAccessLogger
from aiohttp.web_request import BaseRequest
from textual_serve.server import Server

from tui.cli.commands.serve.gate import TOKEN_PARAM, WILDCARD_HOSTS, ServeGate, gate_middleware

PAGE = Path(__file__).with_name("page.html")
ROUTE_PROBES = {socket.AF_INET: "192.0.2.1", socket.AF_INET6: "2001:db8::1"}
"""Documentation addresses (RFC 5737, RFC 3849) whose route names the address this
machine's traffic leaves by (a UDP socket is only connected: nothing is sent)."""


class PathOnlyAccessLogger(AbstractAccessLogger):
    """One line a request: who, the method, the path (no query: it may hold the token;
    the websocket's route without its token) and the status."""

    def log(self, request: BaseRequest, response: web.StreamResponse, time: float) -> None:
        """Log one answered request."""
        self.logger.info(
            '%s "%s %s" %s', request.remote, request.method, logged_path(request), response.status
        )


def logged_path(request: BaseRequest) -> str:
    """The request's path as the log shows it: no query, no token."""
    match_info = getattr(request, "match_info", None)
    if match_info is not None and match_info.get(TOKEN_PARAM):
        return "/ws/{token}"
    return request.path


@cache
def page_html() -> str:
    """The page each tab loads (read once)."""
    return PAGE.read_text(encoding="utf-8")


class GatedServer(Server):
    """textual-serve's server behind a `ServeGate`, counting the apps it runs.

    Args:
        command: The shell command that runs one app.
        gate: What requests must pass.
        host: The address to listen on.
        port: The port.
        public_url: The address browsers reach the server by (None: http://host:port).
        open_urls: The addresses to print for the user to open (with the token).
    """

    def __init__(
        self,
        command: str,
        gate: ServeGate,
        *,
        host: str,
        port: int,
        public_url: str | None,
        open_urls: list[str],
    ) -> None:
        super().__init__(command, host=host, port=port, title="samplescope", public_url=public_url)
        self.gate = gate
        self.open_urls = open_urls
        self.tabs = 0
        """How many apps run now."""

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.router.add_get(f"/ws/{{{TOKEN_PARAM}}}", self.handle_websocket)
        app.middlewares.append(gate_middleware(self.gate))
        return app

    async def handle_index(self, request: web.Request) -> web.Response:
        """The page: the same for every address the server is reached by."""
        return web.Response(text=page_html(), content_type="text/html")

    async def on_startup(self, app: web.Application) -> None:
        """Say where to open the app (textual-serve's banner would print the command)."""
        self.console.print("samplescope: serving the app at", highlight=False)
        for url in self.open_urls:
            self.console.print(f"  {url}", highlight=False, soft_wrap=True)
        self.console.print("Press Ctrl+C to stop.", highlight=False)

    def serve(self, debug: bool = False) -> None:
        """Serve until Ctrl+C (or SIGTERM), as textual-serve does, with the access log
        of `PathOnlyAccessLogger`."""
        self.debug = debug
        self.initialize_logging()
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        for stop in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(stop, self.request_exit)
        web.run_app(
            self._make_app(),
            host=self.host,
            port=self.port,
            handle_signals=False,
            loop=loop,
            print=lambda *args: None,
            access_log_class=PathOnlyAccessLogger,
        )

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        """Run one app for the tab, unless `max_tabs` run already (503)."""
        if self.tabs >= self.gate.max_tabs:
            raise web.HTTPServiceUnavailable(
                text=f"at most {self.gate.max_tabs} tabs at once: close one first\n"
            )
        self.tabs += 1
        try:
            return await super().handle_websocket(request)
        finally:
            self.tabs -= 1


def open_urls(host: str, port: int, public_url: str | None, token: str | None) -> list[str]:
    """The addresses to open the served app at, each with the token.

    `--public-url` if given; for a server on every address, this machine's loopback
    address and the address its traffic leaves by (when it has a route out); else the
    address it listens on.
    """
    if public_url is not None:
        bases = [public_url]
    elif host.strip("[]").lower() in WILDCARD_HOSTS:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        loopback = "::1" if family == socket.AF_INET6 else "127.0.0.1"
        found = outgoing_address(family)
        hosts = [loopback] + ([found] if found and found != loopback else [])
        bases = [f"http://{url_host(name)}:{port}" for name in hosts]
    else:
        bases = [f"http://{url_host(host)}:{port}"]
    if token is None:
        return bases
    return [f"{base.rstrip('/')}/?{TOKEN_PARAM}={token}" for base in bases]


def outgoing_address(family: socket.AddressFamily) -> str | None:
    """The address of this machine its traffic leaves by (None: it has no route out,
    or only a loopback one)."""
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.connect((ROUTE_PROBES[family], 9))
            address = str(probe.getsockname()[0])
    except OSError:
        return None
    try:
        loopback = ipaddress.ip_address(address).is_loopback
    except ValueError:
        return None
    return None if loopback else address


def url_host(host: str) -> str:
    """A host as a URL writes it (an IPv6 address in brackets)."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
