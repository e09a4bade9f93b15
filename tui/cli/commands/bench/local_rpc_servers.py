"""rpc-servers started on this machine, on loopback, for `samplescope bench` and the tests."""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO

from backend.llama.rpc import Endpoint, RpcError, probe


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
