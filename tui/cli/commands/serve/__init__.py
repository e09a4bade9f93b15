"""`samplescope serve [--host H] [--port P] [-- APP OPTIONS]`: the app in a web browser.

textual-serve runs the app once per browser tab, each in its own process that loads
its own model, and carries the screen to the page over a websocket. It listens on
the loopback address unless asked otherwise; `tui.cli.commands.serve.gate` checks each
request's Host and Origin, asks for a token beyond loopback and bounds the tabs, and
each tab's app opens files only in samplescope's own folders (`--served`).
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import shlex
import socket
import sys
from collections.abc import Sequence

from sampling.built_in import BUILT_IN_REGISTRY
from sampling.errors import SamplescopeError
from sampling.settings.registry import Registry
from tui.cli.options.sampler_registry import registry_of_args

LOOPBACK = "127.0.0.1"
DEFAULT_PORT = 8000
DEFAULT_MAX_TABS = 2
SERVED_FLAG = "--served"
"""The app option each tab gets: it opens files only in samplescope's own folders."""


class ServeError(SamplescopeError):
    """`serve` cannot start: its options or the app's are wrong."""


GROUP = "setup"


def register(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser], registry: Registry
) -> None:
    """Add `serve` to the command line."""
    parser = subparsers.add_parser(
        "serve",
        help="serve the app to a web browser (textual-serve), on loopback unless asked",
        description=(
            "Serve the chat app over HTTP: open the address it prints in a browser; each "
            "tab runs its own app and loads its own model. The app's own options go after"
            " --, e.g. `samplescope serve --port 8080 -- --model PATH --no-save`. Beyond"
            " loopback a token is required: the printed address carries it"
            " ($SAMPLESCOPE_SERVE_TOKEN sets it, and asks for it on loopback too). There is"
            " no TLS: put an HTTPS proxy in front (and give --public-url) over a network."
        ),
    )
    parser.add_argument(
        "--host",
        default=LOOPBACK,
        help=f"the address to listen on (default {LOOPBACK}: this machine only; 0.0.0.0:"
        " every network, with a token)",
    )
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"the port (default {DEFAULT_PORT})"
    )
    parser.add_argument(
        "--public-url",
        default=None,
        help="the address browsers reach the server by (default http://HOST:PORT)",
    )
    parser.add_argument(
        "--max-tabs",
        type=int,
        default=DEFAULT_MAX_TABS,
        metavar="N",
        help=f"how many tabs may run the app at once, each with its own model (default"
        f" {DEFAULT_MAX_TABS})",
    )
    parser.add_argument(
        "app_args",
        nargs=argparse.REMAINDER,
        metavar="-- APP OPTIONS",
        help="the app's options (`samplescope --model PATH -h` lists them)",
    )
    parser.set_defaults(func=run)


def app_command(app_args: Sequence[str], python: str = sys.executable) -> str:
    """The shell command textual-serve runs per browser tab: this Python, the app.

    `-P`: the working directory is not put first on `sys.path`, so a folder holding
    a `tui/` (or `backend/`, `sampling/`) package cannot stand in for samplescope's.

    Args:
        app_args: The app's options (checked already).
        python: The interpreter to run it with.
    """
    return shlex.join([python, "-P", "-m", "tui.cli.main", SERVED_FLAG, *app_args])


def checked_app_args(app_args: Sequence[str], registry: Registry = BUILT_IN_REGISTRY) -> list[str]:
    """The app's options as each tab gets them: checked once here (a mistake is told
    now, not in every tab; the settings flags are `registry`'s, the run's), and `--hf`
    fetched once and passed on as `--model PATH`.

    Raises:
        ServeError: The options are not the app's.
        HfFetchError: `--hf` cannot be had.
    """
    from tui.cli.commands.app import build_app_parser
    from tui.cli.options.model import model_or_hf

    args = list(app_args)
    if args[:1] == ["--"]:
        args = args[1:]
    parser = build_app_parser(registry)
    try:
        parsed, unknown = parser.parse_known_args(args)
    except SystemExit as error:  # argparse has printed why
        raise ServeError("the app's options after -- are not valid") from error
    if unknown:
        raise ServeError(f"not an option of the app: {' '.join(unknown)}")
    if parsed.hf is None:
        return args
    model = model_or_hf(parsed.model, parsed.hf)
    return [*_without_hf(args), "--model", str(model)]


def _without_hf(args: Sequence[str]) -> list[str]:
    kept: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg == "--hf":
            skip = True
        elif not arg.startswith("--hf="):
            kept.append(arg)
    return kept


def is_loopback(host: str) -> bool:
    """Whether an address is this machine's alone ("localhost", 127.x, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def served_token(host: str, environ: dict[str, str] | os._Environ[str] = os.environ) -> str | None:
    """The token the served app asks for: $SAMPLESCOPE_SERVE_TOKEN's, else a fresh one
    beyond loopback, else none.

    Raises:
        ServeError: The variable is set but too short to be a secret.
    """
    from tui.cli.commands.serve.gate import TOKEN_CHARACTERS, TOKEN_ENV, new_token

    given = environ.get(TOKEN_ENV)
    if given is not None:
        if len(given) < 16:
            raise ServeError(f"${TOKEN_ENV} is too short to be a secret: at least 16 characters")
        if not set(given) <= TOKEN_CHARACTERS:
            raise ServeError(
                f"${TOKEN_ENV} goes in the address as it is: letters, digits, - _ . ~ only"
            )
        return given
    return None if is_loopback(host) else new_token()


def run(args: argparse.Namespace) -> int:
    """Serve the app until interrupted."""
    if not 0 < args.port < 65536:
        raise ServeError(f"invalid port {args.port}: expected 1 to 65535")
    if args.max_tabs < 1:
        raise ServeError(f"invalid --max-tabs {args.max_tabs}: expected at least 1")
    app_args = checked_app_args(args.app_args, registry_of_args(args))
    check_listenable(args.host, args.port)
    try:
        from tui.cli.commands.serve.gate import serve_gate
        from tui.cli.commands.serve.server import GatedServer, open_urls
    except ImportError as error:
        raise ServeError(
            f"textual-serve is not installed ({error}): pip install textual-serve"
        ) from error
    token = served_token(args.host)
    gate = serve_gate(args.host, args.port, args.public_url, token=token, max_tabs=args.max_tabs)
    if not is_loopback(args.host):
        print(
            f"samplescope: serving on {args.host}: whoever reaches port {args.port} with the"
            " token can use the app and its model; nothing is encrypted (no TLS)",
            file=sys.stderr,
        )
    server = GatedServer(
        app_command(app_args),
        gate,
        host=args.host,
        port=args.port,
        public_url=args.public_url,
        open_urls=open_urls(args.host, args.port, args.public_url, token),
    )
    try:
        server.serve()
    except OSError as error:  # bound by another process between the check and now
        raise ServeError(f"cannot listen on {args.host}:{args.port}: {error}") from None
    return 0


def check_listenable(host: str, port: int) -> None:
    """Refuse an address this machine cannot listen on before anything is printed.

    Raises:
        ServeError: The address is unknown, or the port is taken (or not allowed).
    """
    try:
        found = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as error:
        raise ServeError(f"cannot listen on {host}:{port}: unknown address ({error})") from None
    family, kind, proto, _name, address = found[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as aiohttp binds
        try:
            probe.bind(address)
        except OSError as error:
            reason = (error.strerror or str(error)).lower()
            raise ServeError(f"cannot listen on {host}:{port}: {reason}") from None
