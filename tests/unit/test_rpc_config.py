"""RPC server addresses, the probe, the config's `rpc`, and rpc-server's refusals (no model)."""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from backend.config.config import ConfigError, effective_toml, load_config, rpc_with_config
from backend.llama.rpc import Endpoint, RpcError, is_loopback, parse_endpoints, probe
from tui.cli.commands.rpc_server import RemoteBindError, check_bind
from tui.cli.main import build_parser


def test_endpoints_parse_and_bad_ones_are_named() -> None:
    assert parse_endpoints("127.0.0.1:50052, box:6000") == (
        Endpoint("127.0.0.1", 50052),
        Endpoint("box", 6000),
    )
    assert parse_endpoints(["a:1", "b:2,c:3"])[2] == Endpoint("c", 3)
    for bad, words in [
        ("box", "expected HOST:PORT"),
        ("box:0", "1 .. 65535"),
        ("box:http", "1 .. 65535"),
        ("::1:50052", "IPv4 address or a host name"),
        ("a:1,a:1", "listed twice"),
    ]:
        with pytest.raises(RpcError, match=words):
            parse_endpoints(bad)


def test_the_config_file_takes_rpc_servers_and_the_flag_overrides_it(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('rpc = ["10.0.0.2:50052", "10.0.0.3:50052"]\n', encoding="utf-8")
    config = load_config(path)
    assert config.rpc == (Endpoint("10.0.0.2", 50052), Endpoint("10.0.0.3", 50052))
    assert rpc_with_config(None, config) == config.rpc
    assert rpc_with_config("h:1", config) == (Endpoint("h", 1),)
    assert rpc_with_config("", config) == ()  # --rpc "": run locally
    assert 'rpc = "10.0.0.2:50052,10.0.0.3:50052"' in effective_toml(config, model="m.gguf")
    path.write_text('theme = "x"\nrpc = "10.0.0.2"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"line 2: rpc: invalid RPC server '10\.0\.0\.2'"):
        load_config(path)
    path.write_text("rpc = 5\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="rpc: expected"):
        load_config(path)


def test_rpc_server_listens_on_loopback_only_unless_asked(
    capsys: pytest.CaptureFixture[str],
) -> None:
    check_bind("127.0.0.1", allow_remote=False)
    check_bind("localhost", allow_remote=False)
    with pytest.raises(RemoteBindError, match="--allow-remote"):
        check_bind("0.0.0.0", allow_remote=False)
    check_bind("0.0.0.0", allow_remote=True)
    assert is_loopback("127.0.0.2") and not is_loopback("10.0.0.2")
    with pytest.raises(SystemExit):
        build_parser().parse_args(["rpc-server", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "no authentication and no encryption" in help_text
    assert "trusted networks" in help_text


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def fake_server() -> Iterator[tuple[Endpoint, list[bytes | None]]]:
    """A TCP server answering each connection with the next scripted reply (None: silence)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    replies: list[bytes | None] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.recv(64)
                reply = replies.pop(0) if replies else None
                if reply is None:
                    stop.wait(2)
                else:
                    conn.sendall(reply)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield Endpoint("127.0.0.1", listener.getsockname()[1]), replies
    stop.set()
    listener.close()


def _hello(major: int, minor: int) -> bytes:
    return struct.pack("<Q", 28) + bytes([major, minor, 0, 0]) + bytes(24)


def test_probe_tells_a_dead_a_silent_and_a_foreign_server_apart(
    fake_server: tuple[Endpoint, list[bytes | None]],
) -> None:
    endpoint, replies = fake_server
    replies.extend([_hello(7, 0), _hello(6, 1), None])
    assert probe(endpoint, timeout=2) == (7, 0, 0)
    with pytest.raises(RpcError, match=r"speaks RPC protocol 6\.1\.0.*same samplescope"):
        probe(endpoint, timeout=2)
    started = time.monotonic()
    with pytest.raises(RpcError, match=f"{endpoint} did not answer within"):
        probe(endpoint, timeout=0.3)
    assert time.monotonic() - started < 2
    dead = Endpoint("127.0.0.1", _free_port())
    with pytest.raises(RpcError, match=f"RPC server {dead} cannot be reached: connection refused"):
        probe(dead)
