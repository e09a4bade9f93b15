"""llama.cpp RPC servers: their addresses, and a probe that answers in seconds.

A model can be split across machines that each run llama.cpp's `rpc-server`
(`samplescope rpc-server`); the client offloads layers to them over TCP and the
logits come back to it, where samplescope's samplers run.

llama.cpp's RPC client aborts the whole process when a server cannot be reached
(`GGML_ABORT("Failed to connect ...")`), and it has no connect timeout. So before
llama.cpp is handed an address, `probe` opens a connection of its own and performs the
protocol's HELLO handshake with a timeout: an unreachable, silent or incompatible
server is a one-line `RpcError` naming it, and llama.cpp only ever connects to a
server that has just answered.

The handshake (ggml-rpc.cpp of the llama.cpp that llama-cpp-python 0.3.36 vendors):
the client sends the command byte `RPC_CMD_HELLO` (14), the request size as a
little-endian uint64 and a 24-byte capability block; the server answers with the
response size (uint64) and major, minor, patch, padding bytes and its own 24-byte
capability block. All-zero capabilities keep the connection plain TCP. A server serves
one client at a time, so the probe closes its connection at once.
"""

from __future__ import annotations

import ipaddress
import socket
import struct
from collections.abc import Sequence
from dataclasses import dataclass

from sampling.errors import SamplescopeError

#: RPC_PROTO_MAJOR_VERSION / MINOR in the vendored ggml-rpc.h: the protocol has no
#: compatibility across versions, so client and server must come from the same build.
RPC_PROTO_MAJOR = 7
RPC_PROTO_MINOR = 0
RPC_CMD_HELLO = 14
RPC_CONN_CAPS_SIZE = 24
#: llama.cpp's rpc-server default port.
DEFAULT_PORT = 50052
#: How long the probe waits for a server to accept and to answer the handshake.
PROBE_TIMEOUT_S = 3.0

_HELLO_RESPONSE = struct.Struct(f"<BBBB{RPC_CONN_CAPS_SIZE}s")


class RpcError(SamplescopeError):
    """An RPC server address is malformed, or the server cannot be used; names it."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One RPC server address (llama.cpp's `host:port`)."""

    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


def parse_endpoints(text: str | Sequence[str]) -> tuple[Endpoint, ...]:
    """Parse `HOST:PORT[,HOST:PORT...]` (or a list of such strings).

    Raises:
        RpcError: An entry is not HOST:PORT, the port is out of range, the host is an
            IPv6 literal (llama.cpp splits the address at its first colon), or a
            server is listed twice.
    """
    items = text.split(",") if isinstance(text, str) else [p for s in text for p in s.split(",")]
    endpoints: list[Endpoint] = []
    for raw in items:
        item = raw.strip()
        host, sep, port_text = item.rpartition(":")
        if not sep or not host or not port_text:
            raise RpcError(f"invalid RPC server {item!r}: expected HOST:PORT, e.g. 10.0.0.2:50052")
        if ":" in host:
            raise RpcError(
                f"invalid RPC server {item!r}: llama.cpp takes an IPv4 address or a host name"
            )
        try:
            port = int(port_text)
        except ValueError:
            port = -1
        if not 0 < port < 65536:
            raise RpcError(f"invalid RPC server {item!r}: the port must be 1 .. 65535")
        endpoint = Endpoint(host, port)
        if endpoint in endpoints:
            raise RpcError(f"RPC server {endpoint} is listed twice")
        endpoints.append(endpoint)
    return tuple(endpoints)


def format_endpoints(endpoints: Sequence[Endpoint]) -> str:
    """The `--rpc` spelling of `endpoints`."""
    return ",".join(map(str, endpoints))


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("the server closed the connection")
        data += chunk
    return data


def probe(endpoint: Endpoint, timeout: float = PROBE_TIMEOUT_S) -> tuple[int, int, int]:
    """Connect to an RPC server and complete the HELLO handshake, within `timeout`.

    Returns:
        The server's protocol version (major, minor, patch).

    Raises:
        RpcError: The server cannot be reached, does not answer in time (an
            rpc-server serves one client at a time), or speaks another protocol.
    """
    request = bytes([RPC_CMD_HELLO]) + struct.pack("<Q", RPC_CONN_CAPS_SIZE)
    request += bytes(RPC_CONN_CAPS_SIZE)
    try:
        with socket.create_connection((endpoint.host, endpoint.port), timeout=timeout) as sock:
            sock.sendall(request)
            (size,) = struct.unpack("<Q", _recv_exactly(sock, 8))
            if size != _HELLO_RESPONSE.size:
                raise RpcError(
                    f"RPC server {endpoint} answered the handshake with {size} bytes, not"
                    f" {_HELLO_RESPONSE.size}: not a llama.cpp rpc-server of this version"
                )
            major, minor, patch, _pad, _caps = _HELLO_RESPONSE.unpack(
                _recv_exactly(sock, _HELLO_RESPONSE.size)
            )
    except TimeoutError:
        raise RpcError(
            f"RPC server {endpoint} did not answer within {timeout:.0f} s (unreachable, or"
            " busy with another client: an rpc-server serves one client at a time)"
        ) from None
    except socket.gaierror as error:
        raise RpcError(f"RPC server {endpoint}: unknown host ({error.strerror})") from None
    except OSError as error:
        reason = error.strerror or str(error)
        raise RpcError(f"RPC server {endpoint} cannot be reached: {reason.lower()}") from None
    if major != RPC_PROTO_MAJOR or minor > RPC_PROTO_MINOR:
        raise RpcError(
            f"RPC server {endpoint} speaks RPC protocol {major}.{minor}.{patch}; this"
            f" samplescope speaks {RPC_PROTO_MAJOR}.{RPC_PROTO_MINOR}: run the same"
            " samplescope (llama-cpp-python) version on every machine"
        )
    return major, minor, patch


def probe_all(endpoints: Sequence[Endpoint], timeout: float = PROBE_TIMEOUT_S) -> None:
    """Probe every server; the error names each one that failed.

    Raises:
        RpcError: One or more servers cannot be used (one line per server, joined).
    """
    problems = []
    for endpoint in endpoints:
        try:
            probe(endpoint, timeout)
        except RpcError as error:
            problems.append(str(error))
    if problems:
        raise RpcError("; ".join(problems))


def is_loopback(host: str) -> bool:
    """Whether every address `host` resolves to is a loopback address."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except OSError:
        return False
    addresses = {info[4][0] for info in infos}
    return bool(addresses) and all(ipaddress.ip_address(a).is_loopback for a in addresses)
