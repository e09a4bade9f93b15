"""ggml's device registry and its RPC backend, through ctypes.

llama-cpp-python binds llama.h but not ggml-backend.h, so the few functions the RPC
features need are declared here against the `libggml` it ships (prototypes from the
vendored ggml/include/ggml-backend.h and ggml-rpc.h of llama-cpp-python 0.3.36). The
RPC entry points are looked up the way llama.cpp's own tools do, through
`ggml_backend_reg_get_proc_address` on the "RPC" registry, so they are found wherever
the build put them (libggml-rpc, or a dynamically loaded backend).

Every RPC call here connects to the server; llama.cpp aborts the process when that
fails, so callers probe the server first (`backend.llama.rpc.probe`).
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import llama_cpp
from llama_cpp._ctypes_extensions import load_shared_library

from backend.llama.rpc import Endpoint, RpcError

# enum ggml_backend_dev_type
DEVICE_CPU, DEVICE_GPU, DEVICE_IGPU, DEVICE_ACCEL, DEVICE_META = range(5)
#: Pointers in struct ggml_backend_device: 15 interface functions, then reg, context.
_DEVICE_INTERFACE_SLOTS = 15
_GET_MEMORY_SLOT = 2  # iface.get_memory

_lib: Any = None
_lib_lock = threading.Lock()
_SIZE_P = ctypes.POINTER(ctypes.c_size_t)
_ABORT_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_char_p)
_GET_MEMORY = ctypes.CFUNCTYPE(None, ctypes.c_void_p, _SIZE_P, _SIZE_P)
_ADD_SERVER = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_char_p)
_START_SERVER = ctypes.CFUNCTYPE(
    None,
    ctypes.c_char_p,  # endpoint "host:port"
    ctypes.c_char_p,  # cache_dir (NULL: no local tensor cache)
    ctypes.c_size_t,  # n_threads
    ctypes.c_size_t,  # n_devices
    ctypes.POINTER(ctypes.c_void_p),  # ggml_backend_dev_t * devices
)
# Kept for the life of the process: llama.cpp holds raw pointers to them.
_keep_alive: list[Any] = []


@dataclass(frozen=True, slots=True)
class Device:
    """One ggml device (a `ggml_backend_dev_t`) with its name and description."""

    handle: int
    name: str
    description: str


def _ggml() -> Any:
    """libggml with the prototypes used here (loaded once)."""
    global _lib
    with _lib_lock:
        if _lib is None:
            llama_cpp.llama_backend_init()  # registers the compiled-in backends
            lib = load_shared_library("ggml", Path(llama_cpp.__file__).parent / "lib")
            p, size, s = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p
            for name, restype, argtypes in (
                ("ggml_backend_reg_by_name", p, [s]),
                ("ggml_backend_reg_get_proc_address", p, [p, s]),
                ("ggml_backend_reg_dev_count", size, [p]),
                ("ggml_backend_reg_dev_get", p, [p, size]),
                ("ggml_backend_dev_count", size, []),
                ("ggml_backend_dev_get", p, [size]),
                ("ggml_backend_dev_by_type", p, [ctypes.c_int]),
                ("ggml_backend_dev_type", ctypes.c_int, [p]),
                ("ggml_backend_dev_name", s, [p]),
                ("ggml_backend_dev_description", s, [p]),
                ("ggml_backend_dev_memory", None, [p, _SIZE_P, _SIZE_P]),
                ("ggml_set_abort_callback", p, [_ABORT_CALLBACK]),
            ):
                function = getattr(lib, name)
                function.restype, function.argtypes = restype, argtypes
            _lib = lib
        return _lib


def _device(handle: int) -> Device:
    lib = _ggml()
    name = lib.ggml_backend_dev_name(handle) or b"?"
    description = lib.ggml_backend_dev_description(handle) or b""
    return Device(handle, name.decode("utf-8", "replace"), description.decode("utf-8", "replace"))


def require_rpc() -> None:
    """Check that this llama-cpp-python build has llama.cpp's RPC backend.

    Raises:
        RpcError: It was built without it (the message says how to rebuild).
    """
    if not rpc_supported():
        raise RpcError(
            "this llama-cpp-python was built without llama.cpp's RPC backend: run `make setup`"
            " (it rebuilds llama-cpp-python with CMAKE_ARGS=-DGGML_RPC=ON)"
        )


def _rpc_function(name: str, prototype: Any) -> Any:
    require_rpc()
    lib = _ggml()
    reg = lib.ggml_backend_reg_by_name(b"RPC")
    address = lib.ggml_backend_reg_get_proc_address(reg, name.encode())
    if not address:
        raise RpcError(f"llama.cpp's RPC backend has no {name}")
    return prototype(address)


def on_abort(handler: Callable[[str], None]) -> None:
    """Have ggml call `handler(message)` just before it aborts the process.

    It replaces ggml's default, which prints a backtrace by attaching gdb to the
    process (about a second, and pages of output).
    """

    def call(message: bytes | None) -> None:
        handler((message or b"").decode("utf-8", "replace"))

    callback = _ABORT_CALLBACK(call)
    _keep_alive.append(callback)
    _ggml().ggml_set_abort_callback(callback)


def rpc_supported() -> bool:
    """Whether this llama-cpp-python build has llama.cpp's RPC backend."""
    return bool(llama_cpp.llama_supports_rpc())


def rpc_devices(endpoint: Endpoint) -> list[Device]:
    """The devices an RPC server offers (llama.cpp names them RPC0, RPC1, ...).

    Connects to the server: probe it first (llama.cpp aborts if it cannot connect).

    Raises:
        RpcError: No RPC backend in this build, or the server offers no device.
    """
    add_server = _rpc_function("ggml_backend_rpc_add_server", _ADD_SERVER)
    reg = add_server(str(endpoint).encode())
    if not reg:
        raise RpcError(f"RPC server {endpoint} offers no device")
    lib = _ggml()
    count = lib.ggml_backend_reg_dev_count(reg)
    return [_device(lib.ggml_backend_reg_dev_get(reg, i)) for i in range(count)]


def device_memory(device: Device) -> tuple[int, int]:
    """(free, total) bytes a device reports (for an RPC device: asks the server)."""
    free, total = ctypes.c_size_t(0), ctypes.c_size_t(0)
    _ggml().ggml_backend_dev_memory(device.handle, ctypes.byref(free), ctypes.byref(total))
    return int(free.value), int(total.value)


def _local_devices() -> list[tuple[int, Device]]:
    lib = _ggml()
    found = []
    for i in range(lib.ggml_backend_dev_count()):
        handle = lib.ggml_backend_dev_get(i)
        found.append((int(lib.ggml_backend_dev_type(handle)), _device(handle)))
    return found


DEVICE_KINDS: dict[int, str] = {
    DEVICE_CPU: "CPU",
    DEVICE_GPU: "GPU",
    DEVICE_IGPU: "integrated GPU",
    DEVICE_ACCEL: "accelerator",
    DEVICE_META: "meta",
}
"""`enum ggml_backend_dev_type` by its name."""


@dataclass(frozen=True, slots=True)
class DeviceReport:
    """A device llama.cpp sees on this machine: what it is and its memory.

    Attributes:
        name: ggml's name ("CPU", "CUDA0", "Metal").
        description: What the device says it is (the CPU's or GPU's model).
        kind: "CPU", "GPU", "integrated GPU", "accelerator" or "meta".
        free: Free memory in bytes, as the device reports it.
        total: Total memory in bytes.
    """

    name: str
    description: str
    kind: str
    free: int
    total: int


def local_devices() -> list[DeviceReport]:
    """Every device of this llama.cpp build on this machine, in ggml's order."""
    reports = []
    for kind, device in _local_devices():
        free, total = device_memory(device)
        reports.append(
            DeviceReport(
                device.name, device.description, DEVICE_KINDS.get(kind, str(kind)), free, total
            )
        )
    return reports


def system_info() -> str:
    """llama.cpp's `llama_print_system_info()`: the CPU features and backends built in."""
    info = llama_cpp.llama_print_system_info()
    text = info.decode("utf-8", "replace") if isinstance(info, bytes) else str(info)
    return text.strip().strip("|").strip()


def local_offload_devices() -> list[Device]:
    """This machine's devices llama.cpp offloads to by default: discrete GPUs, else
    integrated ones (none on a CPU-only build; the CPU holds what is not offloaded)."""
    devices = _local_devices()
    gpus = [d for kind, d in devices if kind == DEVICE_GPU]
    return gpus or [d for kind, d in devices if kind == DEVICE_IGPU]


def server_devices() -> list[Device]:
    """What llama.cpp's rpc-server serves by default: every accelerator, else the CPU."""
    devices = _local_devices()
    chosen = [d for kind, d in devices if kind not in (DEVICE_CPU, DEVICE_ACCEL)]
    return chosen or [d for kind, d in devices if kind == DEVICE_CPU]


def device_array(devices: list[Device]) -> Any:
    """A NULL-terminated `ggml_backend_dev_t[]` (for `llama_model_params.devices`)."""
    array = (ctypes.c_void_p * (len(devices) + 1))(*[d.handle for d in devices], None)
    return array


def report_memory(device: Device, size: int) -> None:
    """Make `device` report `size` bytes free and total, in this process, from now on.

    llama.cpp's rpc-server once had `--mem`; the current one reports its devices' real
    memory, from which clients split the layers. The server asks the device its
    backend was created from, so the device itself is changed: its interface's
    `get_memory` pointer (struct ggml_backend_device in ggml-backend-impl.h) is
    replaced; everything else computes as before. Only for a process that serves.
    """

    def get_memory(_dev: int | None, free: Any, total: Any) -> None:
        free[0] = size
        total[0] = size

    callback = _GET_MEMORY(get_memory)
    _keep_alive.append(callback)
    interface = (ctypes.c_void_p * _DEVICE_INTERFACE_SLOTS).from_address(device.handle)
    interface[_GET_MEMORY_SLOT] = ctypes.cast(callback, ctypes.c_void_p).value


def start_rpc_server(
    endpoint: Endpoint, devices: list[Device], n_threads: int, cache_dir: Path | None
) -> None:
    """Serve `devices` on `endpoint` until the process ends (llama.cpp's rpc-server).

    Raises:
        RpcError: No RPC backend in this build.
    """
    start = _rpc_function("ggml_backend_rpc_start_server", _START_SERVER)
    array = (ctypes.c_void_p * len(devices))(*[d.handle for d in devices])
    cache = None if cache_dir is None else str(cache_dir).encode()
    start(str(endpoint).encode(), cache, n_threads, len(devices), array)
