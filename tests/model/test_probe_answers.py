"""The load's batch-invariance probe answers once per weights and layout in a process.

The probe decodes a short text beside others and alone (about two thirds of a load's
CPU on SmolLM2); the same file decoded the same way gives the same answer, so a model
loaded again is not probed again. Another file, the same weights changed on disk, or
control vectors (their own logits) are probed.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from backend.llama.contexts import Contexts
from backend.llama.control_vector import ControlVector, Steering
from backend.session.llama_backend import LlamaBackend

VECTOR = Path(__file__).resolve().parents[1] / "fixtures" / "control_vector" / "happy.gguf"


@pytest.fixture
def probes(monkeypatch: pytest.MonkeyPatch, fresh_probe: None) -> list[Path]:
    """The files probed from now on, in order."""
    probed: list[Path] = []
    decode_beside = Contexts._decode_beside

    def counted(self: Contexts, *args: Any, **kwargs: Any) -> Any:
        probed.append(self._path)
        return decode_beside(self, *args, **kwargs)

    monkeypatch.setattr(Contexts, "_decode_beside", counted)
    return probed


def loaded_answer(path: Path, **options: Any) -> bool | None:
    backend = LlamaBackend.load(path, n_ctx=512, n_threads=1, **options)
    try:
        return backend.runtime.batch_invariant
    finally:
        backend.close()


def test_a_model_loaded_again_is_not_probed_again(
    default_model_path: Path, probes: list[Path], tmp_path: Path
) -> None:
    first = loaded_answer(default_model_path)
    again = loaded_answer(default_model_path)
    assert first is again is True
    assert probes == [default_model_path]
    copy = tmp_path / "copy.gguf"
    shutil.copyfile(default_model_path, copy)
    assert loaded_answer(copy) is True  # another file: probed
    stat = copy.stat()
    os.utime(copy, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert loaded_answer(copy) is True  # changed on disk: probed again
    assert probes == [default_model_path, copy, copy]


def test_a_model_with_control_vectors_is_probed_every_time(
    default_model_path: Path, probes: list[Path]
) -> None:
    steering = Steering((ControlVector(VECTOR, 2.0),))
    loaded_answer(default_model_path, steering=steering)
    loaded_answer(default_model_path, steering=steering)
    assert probes == [default_model_path, default_model_path]
