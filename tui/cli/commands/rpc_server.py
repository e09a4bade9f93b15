"""`samplescope rpc-server`: lend this machine's memory and compute to a samplescope
elsewhere (llama.cpp's rpc-server, from the same llama.cpp build as the client)."""

from __future__ import annotations

import argparse
import sys
import threading
from typing import Any

from backend.llama.rpc import (
    DEFAULT_PORT,
    RPC_PROTO_MAJOR,
    RPC_PROTO_MINOR,
    Endpoint,
    RpcError,
    is_loopback,
)
from sampling.settings.registry import Registry

SECURITY_NOTE = (
    "The RPC protocol has no authentication and no encryption: anyone who can reach the "
    "port can use this machine's memory and compute and read what it holds. Listen only "
    "on trusted networks."
)


class RemoteBindError(RpcError):
    """A non-loopback address was asked for without --allow-remote."""


GROUP = "setup"


def register(subparsers: Any, registry: Registry) -> None:
    """Add `rpc-server` to the command line."""
    parser = subparsers.add_parser(
        "rpc-server",
        help="serve this machine's CPU/GPU to a samplescope run elsewhere (llama.cpp RPC)",
        description=(
            "Start llama.cpp's RPC server (the llama.cpp inside this samplescope: the "
            "protocol has no compatibility across versions, so run the same samplescope "
            "version on every machine). A client then splits a model's layers across its "
            "servers: samplescope --rpc HOST:PORT[,HOST:PORT...]. " + SECURITY_NOTE
        ),
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)"
    )
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})"
    )
    parser.add_argument(
        "--threads", type=int, default=None, help="CPU threads for the computation (all cores)"
    )
    parser.add_argument(
        "--mem",
        type=int,
        default=None,
        metavar="MB",
        help="memory to report to clients, which split the layers by it (default: the real one)",
    )
    parser.add_argument(
        "--cache", action="store_true", help="cache large tensors on disk (faster reloads)"
    )
    parser.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a non-loopback --host (trusted networks only: see above)",
    )
    parser.set_defaults(func=run)


def check_bind(host: str, allow_remote: bool) -> None:
    """Refuse a non-loopback address unless asked explicitly.

    Raises:
        RemoteBindError: `host` is not loopback and `allow_remote` is False.
    """
    if not allow_remote and not is_loopback(host):
        raise RemoteBindError(
            f"refusing to listen on {host}: it is reachable from other machines and the RPC "
            "protocol has no authentication or encryption. On a trusted network, add "
            "--allow-remote."
        )


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted (ctrl+c) or terminated."""
    import os

    from backend.config.paths import rpc_cache_dir
    from backend.llama.ggml_devices import (
        report_memory,
        require_rpc,
        server_devices,
        start_rpc_server,
    )

    require_rpc()
    check_bind(args.host, args.allow_remote)
    if not 0 < args.port < 65536:
        raise RpcError(f"invalid --port {args.port}: expected 1 .. 65535")
    cores = os.cpu_count() or 1
    threads = args.threads or cores
    if not 1 <= threads <= cores:
        raise RpcError(f"invalid --threads {threads}: expected 1 to {cores} (the cores here)")
    if args.mem is not None and args.mem < 1:
        raise RpcError(f"invalid --mem {args.mem}: expected a size in MB, at least 1")
    devices = server_devices()
    for device in devices if args.mem is not None else ():
        report_memory(device, args.mem * 1024 * 1024)
    cache = rpc_cache_dir() if args.cache else None
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
    endpoint = Endpoint(args.host, args.port)
    names = ", ".join(d.name for d in devices)
    print(
        f"samplescope rpc-server on {endpoint}: {names}, {threads} thread(s), RPC protocol"
        f" {RPC_PROTO_MAJOR}.{RPC_PROTO_MINOR}. Clients: samplescope --rpc {endpoint}",
        flush=True,
    )
    if not is_loopback(args.host):
        print(f"warning: {SECURITY_NOTE}", file=sys.stderr, flush=True)
    # llama.cpp's server loop never returns; in a daemon thread it leaves the main
    # thread free to take ctrl+c (a signal cannot interrupt a ctypes call).
    server = threading.Thread(
        target=start_rpc_server, args=(endpoint, devices, threads, cache), daemon=True
    )
    server.start()
    try:
        while server.is_alive():
            server.join(0.5)
    except KeyboardInterrupt:
        return 130
    # The loop only ends when llama.cpp could not listen (it printed why).
    raise RpcError(f"the RPC server stopped: could not listen on {endpoint} (port in use?)")
