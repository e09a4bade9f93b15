"""Control vector files: read, checked against the model, scaled and summed as
llama.cpp's `common_control_vector_load` does (no model needed here)."""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np
import pytest

from backend.llama.control_vector import (
    ControlVector,
    ControlVectorError,
    Steering,
    control_buffer,
    steering_of,
)

N_EMBD, N_LAYER = 4, 3


def vector_file(path: Path, layers: dict[int, np.ndarray], count: int | None = None) -> Path:
    """A control vector as llama.cpp's cvector-generator writes one."""
    writer = gguf.GGUFWriter(str(path), "controlvector")
    writer.add_int32("controlvector.layer_count", len(layers) if count is None else count)
    for layer, values in layers.items():
        writer.add_tensor(f"direction.{layer}", values.astype(np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.fixture
def two_files(tmp_path: Path) -> tuple[Path, Path]:
    first = vector_file(tmp_path / "a.gguf", {1: np.ones(N_EMBD), 2: np.arange(N_EMBD)})
    second = vector_file(tmp_path / "b.gguf", {1: np.full(N_EMBD, 2.0), 2: np.ones(N_EMBD)})
    return first, second


def test_vectors_are_scaled_and_summed_layer_by_layer(two_files: tuple[Path, Path]) -> None:
    first, second = two_files
    steering = Steering((ControlVector(first, 0.5), ControlVector(second, -1.0)))
    buffer = control_buffer(steering, N_EMBD, N_LAYER)
    expected = np.concatenate([0.5 * np.ones(4) - 2.0, 0.5 * np.arange(4) - 1.0])
    np.testing.assert_array_equal(buffer.data, expected.astype(np.float32))
    assert buffer.n_embd == N_EMBD and buffer.layers == (1, N_LAYER)


def test_flags_read_file_scale_and_layers(tmp_path: Path) -> None:
    steering = steering_of(["a.gguf:0.8", "b.gguf", "c:d.gguf"], "2, 3")
    assert steering.vectors == (
        ControlVector(Path("a.gguf"), 0.8),
        ControlVector(Path("b.gguf"), 1.0),
        ControlVector(Path("c:d.gguf"), 1.0),
    )
    assert steering.layers == (2, 3)
    with pytest.raises(ControlVectorError, match="finite"):
        steering_of(["a.gguf:nan"], None)
    with pytest.raises(ControlVectorError, match="two layers"):
        steering_of(["a.gguf"], "2")


def test_a_vector_for_another_model_is_one_line(tmp_path: Path) -> None:
    wide = vector_file(tmp_path / "wide.gguf", {1: np.ones(8), 2: np.ones(8)})
    with pytest.raises(ControlVectorError) as raised:
        control_buffer(Steering((ControlVector(wide),)), N_EMBD, N_LAYER)
    message = str(raised.value)
    assert "width 8 with 3 layers; this model has width 4 and 3 layers" in message
    deep = vector_file(tmp_path / "deep.gguf", {1: np.ones(4), 5: np.ones(4)}, count=5)
    with pytest.raises(ControlVectorError, match="with 6 layers; this model has width 4 and 3"):
        control_buffer(Steering((ControlVector(deep),)), N_EMBD, N_LAYER)
    with pytest.raises(ControlVectorError, match=r"missing\.gguf"):
        control_buffer(Steering((ControlVector(tmp_path / "missing.gguf"),)), N_EMBD, N_LAYER)
    with pytest.raises(ControlVectorError, match=r"expected 1 <= first <= last <= 3"):
        control_buffer(Steering((ControlVector(wide),), (2, 9)), N_EMBD, N_LAYER)


def test_a_model_file_is_not_a_control_vector(tmp_path: Path) -> None:
    path = tmp_path / "model.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_tensor("token_embd.weight", np.ones((2, 4), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(ControlVectorError, match="not a control vector"):
        control_buffer(Steering((ControlVector(path),)), N_EMBD, N_LAYER)
