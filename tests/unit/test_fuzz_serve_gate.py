"""Fuzzing serve's request gate: any `Host`, `Origin`, token and path.

The gate never raises (a request it cannot read is refused, not a 500), its refusal
is one line (a header value never splits the response), and it lets through only what
names the served address: a `Host` or `Origin` it accepts spells a loopback name and
the served port, and a token it accepts is the token. Examples per run come from the
hypothesis profile (tests/conftest.py): four properties of 100 examples each. The access
log never shows a query or a token.
"""

from __future__ import annotations

import asyncio
import re

from aiohttp import web
from aiohttp.test_utils import make_mocked_request
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tui.cli.commands.serve.gate import gate_middleware, serve_gate

HEALTH = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
PORT = 8566
TOKEN = "s3cret-Token_x"
GATE = serve_gate("127.0.0.1", PORT, None, token=TOKEN)

NAME_PIECES = [
    "localhost", "LocalHost", "127.0.0.1", "[::1]", "::1", "127.1", "0x7f.1", "evil.com",
    "localhost.evil.com", "127.0.0.1.nip.io", "localhost.", "0.0.0.0", "[::ffff:127.0.0.1]",
    "@", "#", "/", "?", "\\", ":", " ", "\t", "\x00", "\r\n", "%2e", "é", "\udcff", "",
]  # fmt: skip
PORT_PIECES = [str(PORT), f"0{PORT}", f"+{PORT}", f" {PORT}", "80", "", "99999", "-1", "x"]
hosts = st.one_of(
    st.builds(
        lambda name, port, tail: f"{name}:{port}{tail}",
        st.sampled_from(NAME_PIECES),
        st.sampled_from(PORT_PIECES),
        st.sampled_from(["", "/", "@evil.com", "#x", " ", ".", "\x00"]),
    ),
    st.lists(st.sampled_from(NAME_PIECES + PORT_PIECES), max_size=5).map("".join),
    st.text(max_size=20),
    st.none(),
)
origins = st.one_of(
    st.builds(
        lambda scheme, host, path: f"{scheme}{host}{path}" if host is not None else scheme,
        st.sampled_from(["http://", "https://", "HTTP://", "ws://", "file://", "null", "//", ""]),
        hosts,
        st.sampled_from(["", "/", "/x", "?a", "#f"]),
    ),
    st.text(max_size=20),
    st.none(),
)
tokens = st.one_of(
    st.none(),
    st.just(TOKEN),
    st.sampled_from(
        [TOKEN.upper(), TOKEN + " ", TOKEN[:-1], "", " " + TOKEN, TOKEN + "\x00", "\udcff"]
    ),
    st.text(max_size=16),
)

LOOPBACK = re.compile(rf"(?:localhost|127\.0\.0\.1|\[::1\]):[+ ]?0*{PORT}/?", re.IGNORECASE)
"""What an accepted `Host` may look like: a loopback name and the served port (a
trailing slash names the same server)."""


@HEALTH
@given(hosts, origins, tokens, st.booleans())
def test_the_gate_refuses_in_one_line_and_lets_through_only_this_server(
    host: str | None, origin: str | None, token: str | None, needs_token: bool
) -> None:
    refused = GATE.refusal(host, origin, token, needs_token=needs_token)
    if refused is not None:
        assert refused.status in (401, 403)
        assert not re.search(r"[\r\n\x00]", refused.reason), refused.reason
        return
    assert host is not None and LOOPBACK.fullmatch(host), host
    if origin is not None:
        scheme, _, rest = origin.partition("://")
        assert scheme.lower() in ("http", "https"), origin
        assert LOOPBACK.fullmatch(rest), origin
    if needs_token:
        assert token == TOKEN


async def through_middleware(
    headers: dict[str, str], path: str, path_token: str | None
) -> web.StreamResponse:
    """The gate's answer to a request for `path`, or, with `path_token`, for the
    websocket route carrying that token (`/ws/{token}`)."""
    if path_token is not None:
        request = make_mocked_request(
            "GET", "/ws/x", headers=headers, match_info={"token": path_token}
        )
    else:
        request = make_mocked_request("GET", path, headers=headers)

    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(text="app")

    return await gate_middleware(GATE)(request, handler)


header_text = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"), max_size=24
)


@HEALTH
@given(
    st.one_of(st.sampled_from([f"localhost:{PORT}", f"127.0.0.1:{PORT}"]), header_text),
    st.one_of(st.none(), st.just(f"http://localhost:{PORT}"), header_text),
    st.one_of(
        st.sampled_from(["/", "/static/x.js", "/ws", f"/?token={TOKEN}", "/?token=%ED%A0%80",
                         "/?token=%FF", "/?token=a&token=b", "/%00", "//evil.com/"]),
        header_text.map(lambda text: "/?token=" + text),
    ),
    st.one_of(st.none(), st.just(TOKEN), header_text),
)  # fmt: skip
def test_any_request_is_answered_or_refused_never_an_error(
    host: str, origin: str | None, path: str, path_token: str | None
) -> None:
    headers = {"Host": host} | ({"Origin": origin} if origin is not None else {})
    response = asyncio.run(through_middleware(headers, path, path_token))
    assert response.status in (200, 401, 403)
    assert response.headers["Referrer-Policy"] == "no-referrer"
    assert "Set-Cookie" not in response.headers
    if response.status == 200:
        assert host in (f"localhost:{PORT}", f"127.0.0.1:{PORT}")
        assert origin in (None, f"http://localhost:{PORT}")
        if path_token is not None:
            assert path_token == TOKEN


@HEALTH
@given(tokens)
def test_only_the_token_itself_passes(token: str | None) -> None:
    assert (GATE.token_refusal(token) is None) == (token == TOKEN)


def test_a_token_that_is_not_utf8_is_refused_not_an_error() -> None:
    """aiohttp's parser reads a request's non-UTF-8 bytes as lone surrogates."""
    for token in ("\udcff", TOKEN + "\udcff", "\udcff" * 1000):
        refused = GATE.refusal(f"localhost:{PORT}", None, token, needs_token=True)
        assert refused is not None and refused.status == 401


def test_a_huge_header_is_refused_in_one_short_line() -> None:
    for host in ("a" * 100_000, f"localhost:{PORT}" + "/" * 100_000, "[" * 100_000):
        refused = GATE.refusal(host, None, TOKEN, needs_token=True)
        assert refused is not None and refused.status == 403
        assert "\n" not in refused.reason


@HEALTH
@given(
    st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=16),
    st.text(st.characters(whitelist_categories=("L", "N"), whitelist_characters="-_.~"),
            min_size=16, max_size=40),
    st.booleans(),
)  # fmt: skip
def test_the_access_log_never_shows_a_query_or_a_token(
    path: str, token: str, in_route: bool
) -> None:
    from urllib.parse import quote

    from tui.cli.commands.serve.server import logged_path

    assume(token not in path)
    if in_route:
        request = make_mocked_request("GET", f"/ws/{quote(token)}", match_info={"token": token})
    else:
        request = make_mocked_request("GET", f"/{quote(path)}?token={quote(token)}&x=1")
    logged = logged_path(request)
    assert token not in logged and "x=1" not in logged
