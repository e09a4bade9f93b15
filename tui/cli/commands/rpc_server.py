"""`samplescope rpc-server`: lend this machine's memory and compute to a samplescope
elsewhere (llama.cpp's rpc-server, from the same llama.cpp build as the client)."""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any

from backend.llama.rpc import (
    DEFAULT_PORT,
    RPC_PROTO_MAJOR,
    RPC_PROTO_MINOR,
    Endpoint,
    RpcError,
    is_loopback,
    probe,
)

SECURITY_NOTE = (
    "The RPC protocol has no authentication and no encryption: anyone who can reach the "
    "port can use this machine's memory and compute and read what it holds. Listen only "
    "on trusted networks."
)


class RemoteBindError(RpcError):
    """A non-loopback address was asked for without --allow-remote."""


def register(subparsers: Any) -> None:
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


@dataclass(frozen=True, slots=True)
class LocalServer:
    """An rpc-server subprocess on this machine (tests and `samplescope bench`)."""

    endpoint: Endpoint
    process: subprocess.Popen[bytes]


def free_port() -> int:
    """A TCP port free on loopback right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def local_servers(
    count: int,
    *,
    threads: int = 1,
    mem_mb: int | None = None,
    ports: Sequence[int] = (),
    timeout: float = 60.0,
) -> Iterator[list[LocalServer]]:
    """Start `count` `samplescope rpc-server` processes on loopback: on `ports`, then
    on free ports.

    Yields once every one answers the RPC handshake; all are terminated on exit.

    Raises:
        RpcError: A server exited or did not answer within `timeout` seconds.
    """
    started: list[LocalServer] = []
    with tempfile.TemporaryFile() as output:
        try:
            for index in range(count):
                port = ports[index] if index < len(ports) else free_port()
                command = [sys.executable, "-m", "tui.cli.main", "rpc-server"]
                command += ["--port", str(port), "--threads", str(threads)]
                command += [] if mem_mb is None else ["--mem", str(mem_mb)]
                process = subprocess.Popen(
                    command, stdin=subprocess.DEVNULL, stdout=output, stderr=output
                )
                started.append(LocalServer(Endpoint("127.0.0.1", port), process))
            deadline = time.monotonic() + timeout
            for server in started:
                _wait_until_serving(server, deadline, output)
            yield started
        finally:
            for server in started:
                server.process.terminate()
            for server in started:
                try:
                    server.process.wait(5)
                except subprocess.TimeoutExpired:
                    server.process.kill()
                    server.process.wait()


def _wait_until_serving(server: LocalServer, deadline: float, output: IO[bytes]) -> None:
    """Probe until the server answers; its output is the error if it exits first."""
    while True:
        try:
            probe(server.endpoint, timeout=1.0)
            return
        except RpcError:
            if server.process.poll() is not None or time.monotonic() > deadline:
                output.seek(0)
                said = output.read().decode("utf-8", "replace").strip()
                raise RpcError(
                    f"the rpc-server on {server.endpoint} did not start: {said}"
                ) from None
            time.sleep(0.1)
