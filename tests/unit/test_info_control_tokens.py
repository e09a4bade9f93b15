"""`samplescope info` on a vocabulary of thousands of control tokens: a summary, not a dump."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gguf_factory import Tensor, gguf_bytes, write
from tui.cli.commands.info import control_token_summary
from tui.cli.main import main

F32 = 0
NAMED = ["<pad>", "<eos>", "<bos>", "<start_of_turn>", "<end_of_turn>", "<mask>"]


def test_numbered_placeholders_are_summarised_and_named_tokens_listed() -> None:
    control = NAMED + [f"<unused{i}>" for i in range(5994)] + ["[control_1]", "[control_2]"]
    assert control_token_summary(control) == [
        "  control tokens (6002)",
        "    named (8): <pad> <eos> <bos> <start_of_turn> <end_of_turn> <mask>"
        " [control_1] [control_2]",
        "    numbered (5994): <unused0> <unused1> … <unused5993>",
    ]


def test_a_long_list_of_named_tokens_is_cut_with_a_count() -> None:
    control = [f"<tok_{chr(97 + i % 26)}{chr(97 + i // 26)}>" for i in range(100)]
    lines = control_token_summary(control)
    assert len(lines) == 2
    assert lines[1].startswith("    named (100): <tok_aa> <tok_ba>")
    assert lines[1].endswith(" … and 60 more")


def test_info_on_a_gguf_with_6000_control_tokens_stays_short(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tokens = NAMED + [f"<|reserved_special_token_{i}|>" for i in range(6000)] + ["a", "b"]
    types = [3] * (len(tokens) - 2) + [1, 1]
    metadata: dict[str, object] = {
        "general.architecture": "llama",
        "tokenizer.ggml.model": "gpt2",
        "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.token_type": types,
        "tokenizer.ggml.eos_token_id": 1,
    }
    path = write(tmp_path / "vocab.gguf", gguf_bytes(metadata, [Tensor("a", (4,), F32, 0)], 16))
    assert main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    assert len(out) < 3000
    assert "control tokens (6006)" in out
    assert "numbered (6000): <|reserved_special_token_0|> <|reserved_special_token_1|> …" in out
    assert "named (6): <pad> <eos> <bos> <start_of_turn> <end_of_turn> <mask>" in out


def test_info_keeps_the_files_description_when_llama_cpp_cannot_list_devices(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import backend.llama.ggml_devices

    def broken() -> object:
        raise OSError("libllama.so: cannot open shared object file")

    monkeypatch.setattr(backend.llama.ggml_devices, "local_devices", broken)
    metadata: dict[str, object] = {"general.architecture": "llama"}
    path = write(tmp_path / "tiny.gguf", gguf_bytes(metadata, [Tensor("a", (4,), F32, 0)], 16))
    assert main(["info", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"file            {path}"
    devices = (
        "llama.cpp devices: cannot be listed (OSError: libllama.so: cannot open shared object file)"
    )
    assert devices in out
    # The lockstep self-check comes last and says why this file could not be probed.
    assert out[-1].startswith("lockstep decoding: not checked (")
