"""Control vectors: shift the model's own activations, in llama.cpp's GGUF format.

A control vector file (made by llama.cpp's `cvector-generator`) holds one F32
direction of the model's width per layer, named `direction.<layer>` (from 1; layer 0
is never steered). As llama.cpp's `common_control_vector_load`
(common/common.cpp), every file's directions are scaled by its strength and summed,
layer by layer, into one buffer of `n_embd` values a layer starting at layer 1, which
`llama_set_adapter_cvec` applies to a context for a range of layers (both ends
included; by default 1 to the model's layer count, as llama.cpp's tools do).

A file for another model (another width, or more layers than this one has) is
refused with one line naming both, before llama.cpp sees it (llama.cpp would refuse
another width in its log and silently drop layers past its own).
"""

from __future__ import annotations

import ctypes
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import llama_cpp
import numpy as np
import numpy.typing as npt

from backend.errors import ModelFileError
from backend.llama.gguf import validate_gguf
from sampling.errors import SamplescopeError

_DIRECTION = re.compile(r"direction\.(\d+)")


class ControlVectorError(SamplescopeError):
    """A control vector cannot be read or applied (the message names the file)."""


@dataclass(frozen=True, slots=True)
class ControlVector:
    """One control vector file and its strength (`--control-vector FILE[:SCALE]`).

    Attributes:
        path: The GGUF file.
        scale: Its strength (1: as made; negative: the opposite direction).
    """

    path: Path
    scale: float = 1.0

    @classmethod
    def parse(cls, text: str) -> ControlVector:
        """`FILE` or `FILE:SCALE` (the last colon splits, so a path may hold colons).

        Raises:
            ControlVectorError: The scale is not a finite number.
        """
        path, colon, scale = text.rpartition(":")
        if not colon or not path:
            return cls(Path(text))
        try:
            value = float(scale)
        except ValueError:
            return cls(Path(text))  # a colon in the file's name, no scale
        if not np.isfinite(value):
            raise ControlVectorError(f"{text}: the control vector's scale must be finite")
        return cls(Path(path), value)


@dataclass(frozen=True, slots=True)
class Steering:
    """Control vectors to apply to every context of a model.

    Attributes:
        vectors: The files and their strengths, summed.
        layers: The first and last layer steered (both included), or None: 1 to the
            model's layer count.
    """

    vectors: tuple[ControlVector, ...] = ()
    layers: tuple[int, int] | None = None

    def __bool__(self) -> bool:
        return bool(self.vectors)


@dataclass(frozen=True, slots=True)
class ControlBuffer:
    """The summed directions, as `llama_set_adapter_cvec` takes them.

    Attributes:
        data: `n_embd` float32 values a layer, from layer 1.
        n_embd: The model's width.
        layers: The first and last layer steered.
    """

    data: npt.NDArray[np.float32]
    n_embd: int
    layers: tuple[int, int]


NO_STEERING = Steering()
"""No control vector."""


def scaled(buffer: ControlBuffer, strength: float) -> ControlBuffer:
    """`buffer` with every direction times `strength` (the sum of the vectors, each
    scaled, is linear in their scales: every vector's scale times `strength`)."""
    data = (buffer.data * np.float32(strength)).astype(np.float32)
    return ControlBuffer(data, buffer.n_embd, buffer.layers)


def _read_one(vector: ControlVector, n_embd: int, n_layer: int) -> dict[int, np.ndarray]:
    """Each layer's direction in one file, scaled.

    Raises:
        ControlVectorError: The file is not a control vector for a model of `n_embd`
            and `n_layer` layers.
    """
    path = vector.path
    try:
        gguf = validate_gguf(path, arrays=False)
    except ModelFileError as error:
        raise ControlVectorError(f"control vector: {error}") from None
    layers: dict[int, np.ndarray] = {}
    for tensor in gguf.tensors:
        match = _DIRECTION.fullmatch(tensor.name)
        if match is None or int(match.group(1)) == 0:
            raise ControlVectorError(
                f"{path}: not a control vector (a tensor named {tensor.name!r}, not"
                " direction.<layer from 1>)"
            )
        if tensor.type_name != "F32" or len(tensor.shape) != 1:
            raise ControlVectorError(
                f"{path}: {tensor.name} is {tensor.type_name} of shape {tensor.shape}:"
                " a control vector holds one F32 row a layer"
            )
        layer = int(match.group(1))
        values = np.fromfile(
            path, dtype="<f4", count=tensor.n_elements, offset=gguf.data_offset + tensor.offset
        )
        layers[layer] = layers.get(layer, 0.0) + values * np.float32(vector.scale)
    if not layers:
        raise ControlVectorError(f"{path}: a control vector with no direction in it")
    widths = {values.shape[0] for values in layers.values()}
    hinted = gguf.metadata.get("controlvector.layer_count")  # cvector-generator's: n_layer - 1
    count = hinted if isinstance(hinted, int) else max(layers)
    if widths != {n_embd} or max(layers) >= n_layer or count != n_layer - 1:
        width = ", ".join(str(w) for w in sorted(widths))
        raise ControlVectorError(
            f"{path}: a control vector for a model of width {width} with {count + 1} layers;"
            f" this model has width {n_embd} and {n_layer} layers"
        )
    return layers


def control_buffer(steering: Steering, n_embd: int, n_layer: int) -> ControlBuffer:
    """Every vector's directions scaled and summed, layer by layer (as llama.cpp's
    `common_control_vector_load`), for a model of `n_embd` and `n_layer` layers.

    Raises:
        ControlVectorError: A file is missing, not a control vector, or for another
            model; the layer range lies outside the model.
    """
    first, last = steering.layers or (1, n_layer)
    if not 1 <= first <= last <= n_layer:
        raise ControlVectorError(
            f"--control-vector-layers {first},{last}: expected 1 <= first <= last <= {n_layer}"
            " (this model's layers)"
        )
    summed: dict[int, np.ndarray] = {}
    for vector in steering.vectors:
        for layer, values in _read_one(vector, n_embd, n_layer).items():
            summed[layer] = summed.get(layer, 0.0) + values
    data = np.zeros(n_embd * max(summed), dtype=np.float32)
    for layer, values in summed.items():
        data[n_embd * (layer - 1) : n_embd * layer] = values
    return ControlBuffer(data, n_embd, (first, last))


def model_shape(model: Any) -> tuple[int, int]:
    """A loaded model's width and layer count."""
    return int(llama_cpp.llama_model_n_embd(model)), int(llama_cpp.llama_model_n_layer(model))


def apply_control(context: Any, buffer: ControlBuffer | None) -> None:
    """Apply `buffer` to a llama context (`llama_set_adapter_cvec`); None: nothing.

    Raises:
        ControlVectorError: llama.cpp refused it.
    """
    if buffer is None:
        return
    data = buffer.data
    pointer = data.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
    first, last = buffer.layers
    code = llama_cpp.llama_set_adapter_cvec(
        context, pointer, data.shape[0], buffer.n_embd, first, last
    )
    if code != 0:
        raise ControlVectorError(f"llama.cpp refused the control vector (code {code})")


def parsed_layers(text: str) -> tuple[int, int]:
    """`A,B` as the first and last layer steered.

    Raises:
        ControlVectorError: It is not two integers.
    """
    parts = [part.strip() for part in text.split(",")]
    try:
        first, last = (int(part) for part in parts)
    except ValueError:
        raise ControlVectorError(
            f"--control-vector-layers {text!r}: expected two layers, as '10,20'"
        ) from None
    return first, last


def steering_of(vectors: Sequence[str], layers: str | None) -> Steering:
    """The `--control-vector` and `--control-vector-layers` flags as a `Steering`.

    Raises:
        ControlVectorError: A scale or the layers cannot be read.
    """
    return Steering(
        tuple(ControlVector.parse(text) for text in vectors),
        None if layers is None else parsed_layers(layers),
    )
