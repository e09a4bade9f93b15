"""What `samplescope serve` checks before a browser reaches the app.

- `Host`: every request names the served address (or `--public-url`'s): a page of
  another site whose name was pointed at this machine (DNS rebinding) gets 403.
- `Origin`: a request a page sends (the websocket always has one) comes from the served
  page itself: a script on another site gets 403.
- A token, required beyond loopback (and whenever `SAMPLESCOPE_SERVE_TOKEN` gives one):
  the address `serve` prints carries it (`?token=`), and the page passes it on in its
  websocket's path (`/ws/TOKEN`). No cookie holds it: a browser sends a host's cookies
  to every port of that host, so a cookie would reach any other service there. Without
  it: 401, and no app starts.
- At most `max_tabs` apps at once (each loads its own model): the next tab gets 503.

Each check runs before textual-serve's handler, so a refused websocket starts no app
process; every answer asks the browser to send no `Referer` (the page's address holds
the token). Nothing here encrypts: over a network the token and the screen travel in
clear text (put a TLS proxy in front, with `--public-url`).
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from aiohttp import web
from aiohttp.typedefs import Middleware

TOKEN_ENV = "SAMPLESCOPE_SERVE_TOKEN"
TOKEN_PARAM = "token"
"""The token's name in the page's query and in the websocket route (`/ws/{token}`)."""
TOKEN_CHARACTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~")
"""What a token may hold: the characters a URL carries as they are."""
DEFAULT_MAX_TABS = 2
WILDCARD_HOSTS = frozenset(("0.0.0.0", "::", ""))
LOOPBACK_NAMES = frozenset(("127.0.0.1", "localhost", "::1"))

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a request is turned away: its HTTP status and a one-line reason."""

    status: int
    reason: str


@dataclass(frozen=True, slots=True)
class ServeGate:
    """The addresses a served app answers to, its token and its tab limit.

    Attributes:
        addresses: The (host name, port) pairs a `Host` or `Origin` may name (names
            lower-case, IPv6 without brackets).
        any_ip_port: For a server listening on every address: the port at which any IP
            literal is accepted too (a rebinding page reaches it by a name, never an
            IP); None otherwise.
        token: The secret a request must carry (None: none is asked).
        max_tabs: How many apps may run at once.
    """

    addresses: frozenset[tuple[str, int]]
    any_ip_port: int | None
    token: str | None
    max_tabs: int = DEFAULT_MAX_TABS

    def allows_address(self, host: str, port: int) -> bool:
        """Whether a `Host` or `Origin` naming host:port names this server."""
        host = host.lower()
        if (host, port) in self.addresses:
            return True
        return port == self.any_ip_port and _is_ip(host)

    def host_refusal(self, host_header: str | None) -> Refusal | None:
        """A `Host` header not naming this server (or none), refused."""
        address = _address(f"//{host_header or ''}", "http")
        if address is None or not self.allows_address(*address):
            return Refusal(403, f"forbidden: this server does not answer to {host_header!r}")
        return None

    def origin_refusal(self, origin: str | None) -> Refusal | None:
        """An `Origin` that is not this server's page, refused (none: not a page's)."""
        if origin is None:
            return None
        address = _address(origin, None)
        if address is None or not self.allows_address(*address):
            return Refusal(403, f"forbidden: requests from {origin!r} are not served")
        return None

    def token_refusal(self, given: str | None) -> Refusal | None:
        """A missing or wrong token, refused (when one is asked)."""
        if self.token is None:
            return None
        # aiohttp reads a header's bytes that are not UTF-8 as lone surrogates.
        if given is not None and hmac.compare_digest(
            given.encode("utf-8", "surrogateescape"), self.token.encode()
        ):
            return None
        return Refusal(401, "a token is required: open the address `samplescope serve` printed")

    def refusal(
        self, host: str | None, origin: str | None, token: str | None, *, needs_token: bool
    ) -> Refusal | None:
        """The first check a request fails, or None when it may go on.

        Args:
            host: Its `Host` header.
            origin: Its `Origin` header.
            token: The token it carries (query or cookie).
            needs_token: Whether it asks for more than textual-serve's static files.
        """
        refused = self.host_refusal(host) or self.origin_refusal(origin)
        if refused is None and needs_token:
            refused = self.token_refusal(token)
        return refused


def serve_gate(
    host: str,
    port: int,
    public_url: str | None,
    *,
    token: str | None,
    max_tabs: int = DEFAULT_MAX_TABS,
) -> ServeGate:
    """The gate of a server listening on host:port (reached at `public_url` if given)."""
    bare = host.strip("[]").lower()
    names = {bare}
    any_ip_port = None
    if bare in WILDCARD_HOSTS:
        any_ip_port = port
        names = {"localhost", socket.gethostname().lower(), socket.getfqdn().lower()}
    elif bare in LOOPBACK_NAMES or _is_loopback_ip(bare):
        names |= LOOPBACK_NAMES
    addresses = {(name, port) for name in names}
    if public_url is not None:
        public = _address(public_url, None, with_path=True)
        if public is not None:
            addresses.add(public)
    return ServeGate(frozenset(addresses), any_ip_port, token, max_tabs)


def new_token() -> str:
    """A fresh secret for the served address (URL-safe, 192 bits)."""
    return secrets.token_urlsafe(24)


def gate_middleware(gate: ServeGate) -> Middleware:
    """An aiohttp middleware turning away what `gate` refuses (see the module doc). The
    token comes in the query (`?token=`: the page) or in the route (`/ws/{token}`: its
    websocket)."""

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        token = request.query.get(TOKEN_PARAM) or request.match_info.get(TOKEN_PARAM)
        refused = gate.refusal(
            request.headers.get("Host"),
            request.headers.get("Origin"),
            token,
            needs_token=not request.path.startswith("/static/"),
        )
        if refused is not None:
            response: web.StreamResponse = web.Response(
                status=refused.status, text=refused.reason + "\n"
            )
        else:
            response = await handler(request)
        if not response.prepared:
            response.headers["Referrer-Policy"] = "no-referrer"
        return response

    return check


def _address(url: str, scheme: str | None, *, with_path: bool = False) -> tuple[str, int] | None:
    """The (host, port) a URL (or "//host:port") names; None when it names none, or
    holds more than an origin (a path too, unless `with_path`)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = scheme or parts.scheme.lower()
    if parts.hostname is None or scheme not in ("http", "https") or "@" in parts.netloc:
        return None
    if not with_path and (parts.path not in ("", "/") or parts.query or parts.fragment):
        return None
    return parts.hostname.lower(), port if port is not None else (443 if scheme == "https" else 80)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _is_loopback_ip(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
