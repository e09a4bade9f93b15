"""`samplescope info` and `samplescope encode` through the front door."""

from __future__ import annotations

import io
from pathlib import Path

import llama_cpp
import pytest

from backend.llama.gguf import read_gguf
from tui.cli.main import main


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_info_default_model(capsys: pytest.CaptureFixture[str], default_model_path: Path) -> None:
    code, out, err = run_cli(capsys, "info")
    assert code == 0 and err == ""
    gguf = read_gguf(default_model_path)
    lines = out.splitlines()
    assert f"file            {default_model_path}" in lines
    assert "architecture    llama" in lines
    assert "context length  8192" in lines
    assert "embedding size  576" in lines
    assert "layers          30" in lines
    assert "heads           9 (key/value heads: 3)" in lines
    assert "vocabulary      49152 tokens (model gpt2, pre-tokenizer smollm)" in lines
    assert "  bos        1  <|im_start|>" in lines
    assert "  eos        2  <|im_end|>" in lines
    assert "  eot   (none)" in lines
    assert "  pad        2  <|im_end|>" in lines
    assert f"file size       93.8 MiB ({default_model_path.stat().st_size} bytes)" in lines
    assert lines[lines.index("chat template") + 1].startswith("{% for message in messages %}")
    assert lines[lines.index("chat template") - 1].startswith("thinking        no thinking tags")
    template = gguf.metadata["tokenizer.chat_template"]
    model_part, devices_part = out.split(
        f"llama.cpp devices (llama-cpp-python {llama_cpp.__version__})\n"
    )
    assert isinstance(template, str) and model_part.rstrip("\n").endswith(template.rstrip("\n"))
    # the devices llama.cpp sees, each with its memory; the CPU always
    devices = devices_part.splitlines()
    *listed, rpc_line, system_line, lockstep_line = devices
    assert any(d.startswith("  CPU  CPU  ") and " free of " in d for d in listed)
    gpu = any(d.split("  ")[2] in ("GPU", "integrated GPU") for d in listed if "  " in d[2:])
    assert any(d.startswith("  no GPU in this build: ") for d in listed) is not gpu
    if not gpu:  # the hint names whose docs page it means
        assert "; samplescope's docs/setup.md says how to build it for CUDA" in out
    rpc = "yes" if llama_cpp.llama_supports_rpc() else "no"
    assert rpc_line == f"  RPC backend: {rpc}"
    system = llama_cpp.llama_print_system_info().decode().strip().strip("|").strip()
    assert system_line == f"  system: {system}"
    # and whether lockstep decoding is exact for the model here (its load's self-check)
    assert lockstep_line.startswith("lockstep decoding: exact (self-check at load: ")
    assert any(line.startswith("tensors         272, ") for line in lines)
    assert any(line.split()[:3] == ["Q4_1", "210", "tensors"] for line in lines)
    assert any(line.split()[:3] == ["Q8_0", "1", "tensor"] for line in lines)
    assert any(line.split()[:3] == ["F32", "61", "tensors"] for line in lines)


def test_info_names_a_thinking_templates_tags(
    capsys: pytest.CaptureFixture[str], thinking_model_path: Path
) -> None:
    code, out, _err = run_cli(capsys, "info", "--model", str(thinking_model_path))
    assert code == 0
    assert (
        "thinking        <think> … </think> (<think>, from the chat template)" in out.splitlines()
    )


def test_info_model_flag_and_metadata(
    capsys: pytest.CaptureFixture[str], default_model_path: Path
) -> None:
    code, out, _ = run_cli(capsys, "info", "--model", str(default_model_path), "--metadata")
    assert code == 0
    assert "  llama.rope.freq_base (float32) = 100000.0" in out.splitlines()
    assert "(49152 items)" in out


def test_info_two_models(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run_cli(capsys, "info", str(tmp_path / "a"), "--model", str(tmp_path / "b"))
    assert code == 2 and "two different models" in err


@pytest.mark.parametrize("command", ["info", "encode"])
def test_bad_file_is_a_clear_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
) -> None:
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF\x03\x00\x00\x00")
    argv = ["info", str(bad)] if command == "info" else ["encode", "hi", "--model", str(bad)]
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith(f"samplescope: {bad}: truncated GGUF file")
    assert "Traceback" not in err


@pytest.mark.parametrize("command", ["info", "encode"])
def test_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str) -> None:
    missing = tmp_path / "missing.gguf"
    argv = ["info", str(missing)] if command == "info" else ["encode", "x", "--model", str(missing)]
    code, _, err = run_cli(capsys, *argv)
    assert code == 2 and err == f"samplescope: {missing}: model file not found\n"


def test_env_model_used(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SAMPLESCOPE_MODEL", str(tmp_path / "env.gguf"))
    code, _, err = run_cli(capsys, "encode", "x")
    assert code == 2 and "env.gguf: model file not found" in err


def reference_ids(path: Path, text: str, special: bool) -> list[int]:
    llama = llama_cpp.Llama(str(path), vocab_only=True, verbose=False)
    ids: list[int] = llama.tokenize(text.encode(), add_bos=False, special=special)
    return ids


def test_encode(capsys: pytest.CaptureFixture[str], default_model_path: Path) -> None:
    text = "Hi  there\n\tx 👋 中<|im_end|>"
    code, out, err = run_cli(capsys, "encode", text)
    assert code == 0 and err == ""
    lines = out.splitlines()
    ids = reference_ids(default_model_path, text, special=False)
    assert lines[-1] == f"{len(ids)} tokens"
    assert lines[-2] == "ids: " + " ".join(map(str, ids))
    rows = [line.split(maxsplit=2) for line in lines[1:-2]]
    assert [int(row[1]) for row in rows] == ids
    pieces = [row[2] for row in rows]
    assert pieces[:2] == ["Hi", "␣"]
    assert "␣there" in pieces and "↵" in pieces and "→" in pieces
    assert "␣⟨0xF0⟩⟨0x9F⟩" in pieces  # the wave emoji's first bytes, with its space
    assert 2 not in ids  # the typed <|im_end|> is text


def test_encode_special(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "encode", "--special", "<|im_end|>x")
    assert code == 0
    lines = out.splitlines()
    assert lines[1].split() == ["0", "2", "<|im_end|>"]
    assert lines[-2:] == ["ids: 2 104", "2 tokens"]


def test_encode_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    # A real stdin: text over bytes (the command reads the bytes to check their UTF-8).
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"a\n"), encoding="utf-8"))
    code, out, _ = run_cli(capsys, "encode", "-")
    assert code == 0 and out.splitlines()[-1] == "2 tokens"
    assert [line.split()[2] for line in out.splitlines()[1:3]] == ["a", "↵"]


def test_encode_empty(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "encode", "")
    assert code == 0 and out.splitlines()[-2:] == ["ids: ", "0 tokens"]


def test_encode_help_documents_glyphs(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["encode", "--help"])
    out = capsys.readouterr().out
    assert "space as ␣" in out and "newline as ↵" in out and "tab as →" in out
