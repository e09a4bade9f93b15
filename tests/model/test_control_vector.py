"""Control vectors on the real model: token for token what llama.cpp gives.

The golden fixture (tests/fixtures/control_vector: the vector, the prompts that made
it, and the reference tokens, with the commands) comes from llama.cpp's own
`cvector-generator` and `llama-server` (`--control-vector-scaled`), built from the
llama.cpp llama-cpp-python vendors and run greedy, `-fa off --no-repack`, as
samplescope decodes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tui.cli.main import main

FIXTURE = Path(__file__).parent.parent / "fixtures" / "control_vector"
REFERENCE = json.loads((FIXTURE / "reference.json").read_text())


@pytest.mark.parametrize("case", REFERENCE["cases"], ids=lambda case: f"scale {case['scale']}")
def test_greedy_tokens_equal_llama_cpp(
    case: dict[str, object], capsys: pytest.CaptureFixture[str]
) -> None:
    first, last = case["layers"]  # type: ignore[misc]
    argv = ["generate", REFERENCE["prompt"], "--mode", "completion", "-t", "0", "--json"]
    argv += ["--max-tokens", str(REFERENCE["max_tokens"]), "--threads", "1"]
    argv += ["--control-vector", f"{FIXTURE / 'happy.gguf'}:{case['scale']}"]
    argv += ["--control-vector-layers", f"{first},{last}"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["token_ids"] == case["tokens"]
    assert out["text"] == case["text"]


def test_without_the_vector_the_reply_differs(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["generate", REFERENCE["prompt"], "--mode", "completion", "-t", "0", "--json"]
    argv += ["--max-tokens", str(REFERENCE["max_tokens"]), "--threads", "1"]
    assert main(argv) == 0
    plain = json.loads(capsys.readouterr().out)["token_ids"]
    assert all(plain != case["tokens"] for case in REFERENCE["cases"])


def test_a_vector_for_another_model_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import gguf
    import numpy as np

    path = tmp_path / "other.gguf"
    writer = gguf.GGUFWriter(str(path), "controlvector")
    writer.add_int32("controlvector.layer_count", 23)
    for layer in range(1, 24):
        writer.add_tensor(f"direction.{layer}", np.ones(960, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    assert main(["generate", "hi", "--control-vector", str(path), "--threads", "1"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "width 960 with 24 layers; this model has width 576 and 30 layers" in err[0]
