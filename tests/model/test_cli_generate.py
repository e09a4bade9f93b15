"""`samplescope generate / compare / fwd` on the real default model."""

from __future__ import annotations

import json
import math
from pathlib import Path

import llama_cpp
import numpy as np
import pytest

from tui.cli.main import main

MODEL_FLAGS = ["--threads", "1", "--ctx", "1024"]


@pytest.fixture(scope="module")
def reference_llama(default_model_path: Path) -> llama_cpp.Llama:
    """llama-cpp-python's own high-level API on the same model and context size."""
    # verbose=True: verbose=False redirects file descriptors 1 and 2.
    return llama_cpp.Llama(str(default_model_path), n_ctx=1024, n_threads=1, verbose=True)


@pytest.mark.parametrize(
    ("system", "prompt", "max_tokens"),
    [
        (None, "What is the capital of France?", 40),
        ("You are a pirate.", "Describe your ship in one sentence.", 48),
        (None, "Write a Python function that adds two numbers.", 64),
    ],
)
def test_greedy_generate_equals_llama_cpp_pythons_chat_completion(
    reference_llama: llama_cpp.Llama,
    capsys: pytest.CaptureFixture[str],
    system: str | None,
    prompt: str,
    max_tokens: int,
) -> None:
    messages = ([] if system is None else [{"role": "system", "content": system}]) + [
        {"role": "user", "content": prompt}
    ]
    reference_llama.reset()
    expected = reference_llama.create_chat_completion(
        messages, temperature=0.0, top_k=1, repeat_penalty=1.0, max_tokens=max_tokens
    )
    expected_text = expected["choices"][0]["message"]["content"]  # type: ignore[index]
    argv = ["generate", prompt, "-t", "0", "--max-tokens", str(max_tokens), "--json", *MODEL_FLAGS]
    if system is not None:
        argv += ["--system", system]
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["text"] == expected_text
    assert expected_text.strip()


def test_generate_streams_text_and_json_has_every_field(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["generate", "Say hello.", "-s", "5", "--max-tokens", "8", *MODEL_FLAGS]) == 0
    streamed = capsys.readouterr().out
    assert (
        main(["generate", "Say hello.", "-s", "5", "--max-tokens", "8", "--json", *MODEL_FLAGS])
        == 0
    )
    result = json.loads(capsys.readouterr().out)
    assert streamed == result["text"] + ("" if result["text"].endswith("\n") else "\n")
    assert result["seed"] == 5 and result["settings"]["seed"] == 5
    assert result["settings"]["top_k"] == 40  # the llama.cpp defaults are the base
    assert result["finish_reason"] in ("eos", "max_tokens")
    assert 1 <= len(result["token_ids"]) <= 8
    stats = result["stats"]
    assert stats["decode_tokens"] == len(result["token_ids"])
    assert stats["prompt_tokens"] == stats["prefilled_tokens"] > 0
    for key in ("prefill_ms", "ttft_ms", "decode_ms", "decode_tps", "sampler_us"):
        assert stats[key] > 0


def test_verbose_logs_phases_and_every_step(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["generate", "Hi", "--max-tokens", "4", "-vv", *MODEL_FLAGS]) == 0
    err = capsys.readouterr().err
    assert "phase prefill" in err and "phase decode" in err and "finished:" in err
    steps = [
        line
        for line in err.splitlines()
        if " step " in line or line.startswith("samplescope: step")
    ]
    assert 1 <= len(steps) <= 4
    assert all("cut_by=" in s and "kept=" in s and "H=" in s and "draw=" in s for s in steps)


def test_raw_generate_skips_the_template(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "generate",
                "1, 2, 3, 4,",
                "--raw",
                "-t",
                "0",
                "--max-tokens",
                "6",
                "--json",
                *MODEL_FLAGS,
            ]
        )
        == 0
    )
    result = json.loads(capsys.readouterr().out)
    assert result["stats"]["prompt_tokens"] < 12  # no system prompt, no markers
    assert "5" in result["text"]


def test_a_bad_model_file_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a gguf at all")
    assert main(["generate", "Hi", "--model", str(bad)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err


def test_a_bad_setting_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["generate", "Hi", "--top-p", "0", *MODEL_FLAGS]) == 2
    assert "top_p" in capsys.readouterr().err


def test_compare_marks_the_first_divergence(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "compare",
        "Write a haiku about rain.",
        "--preset",
        "ArgMax",
        "--preset",
        "All t=1.5",
        "--set",
        "t=0.8,k=40",
        "-s",
        "3",
        "--max-tokens",
        "12",
        "--json",
        *MODEL_FLAGS,
    ]
    assert main(argv) == 0
    columns = json.loads(capsys.readouterr().out)
    assert [c["label"] for c in columns] == ["ArgMax", "All t=1.5", "t=0.8,k=40"]
    assert all(c["settings"]["seed"] == 3 for c in columns)
    assert columns[0]["first_divergence"] is None
    # Greedy against t=1.5 with seed 3 parts within 12 tokens (and the marker says where).
    assert columns[1]["first_divergence"] is not None
    for column in columns[1:]:
        at = column["first_divergence"]
        if at is None:  # t=0.8, k=40 may follow greedy all the way
            assert column["token_ids"] == columns[0]["token_ids"]
            continue
        assert column["token_ids"][:at] == columns[0]["token_ids"][:at]
        assert column["token_ids"][at : at + 1] != columns[0]["token_ids"][at : at + 1]
    assert columns[2]["settings"]["top_k"] == 40
    for column in columns:  # each column's score, from its steps
        score = column["score"]
        assert score["n_tokens"] == len(column["token_ids"])
        assert score["perplexity"] == pytest.approx(
            math.exp(-score["logprob_raw"] / score["n_tokens"])
        )
    # Greedy draws each token with probability 1.
    assert columns[0]["score"]["logprob_sampled"] == 0.0
    # The text view shows every column and a divergence marker.
    assert main([a for a in argv if a != "--json"]) == 0
    out = capsys.readouterr().out
    assert "ArgMax" in out and "All t=1.5" in out and "reference" in out
    assert "▶" in out
    assert f"differs at token {columns[1]['first_divergence'] + 1}" in out
    assert out.count("logp −") == 3  # each column's raw log-probability under its title


def test_compare_rejects_unknown_presets_and_keys(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "x", "--preset", "Nope", *MODEL_FLAGS]) == 2
    assert "unknown preset 'Nope'" in capsys.readouterr().err
    assert main(["compare", "x", "--set", "q=1", *MODEL_FLAGS]) == 2
    assert "unknown key 'q'" in capsys.readouterr().err
    assert main(["compare", "x", "--set", "t=hot", *MODEL_FLAGS]) == 2
    assert "temperature" in capsys.readouterr().err
    assert main(["compare", "x", *MODEL_FLAGS]) == 2
    assert "nothing to compare" in capsys.readouterr().err
    assert main(["compare", "x", "--set", "t=1,seed=5", *MODEL_FLAGS]) == 2
    assert "every column shares one seed" in capsys.readouterr().err


def test_fwd_prints_the_top_five_logits(
    reference_llama: llama_cpp.Llama, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["fwd", "1", *MODEL_FLAGS]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("fwd token 1 '<|im_start|>' at pos 0")
    rows = [line.split() for line in lines[1:]]
    assert len(rows) == 5
    ids = [int(r[1]) for r in rows]
    logits = [float(r[2]) for r in rows]
    assert logits == sorted(logits, reverse=True)
    # The same as llama-cpp-python's own logits for that token.
    reference_llama.reset()
    reference_llama.eval([1])
    ref = np.ctypeslib.as_array(
        llama_cpp.llama_get_logits_ith(reference_llama.ctx, -1), shape=(reference_llama.n_vocab(),)
    ).copy()
    assert ids == [int(i) for i in np.argsort(-ref, kind="stable")[:5]]
    assert logits == pytest.approx([float(ref[i]) for i in ids], abs=1e-3)
    assert main(["fwd", "1", "9", *MODEL_FLAGS]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == lines[1:]
    assert main(["fwd", "999999", *MODEL_FLAGS]) == 2
    assert "invalid token id 999999" in capsys.readouterr().err


def test_a_reply_cut_by_the_full_context_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["generate", "Once upon a time", "--raw", "-t", "1", "-k", "0", "-p", "1"]
    argv += ["--min-p", "0", "--max-tokens", "3000", "--json", "--threads", "1", "--ctx", "256"]
    assert main([*argv, "-s", "3"]) == 0
    result = json.loads(capsys.readouterr().out)
    stats = result["stats"]
    if result["finish_reason"] == "eos":  # the model may end on its own: not this seed
        pytest.fail(f"seed 3 ended on its own after {stats['decode_tokens']} tokens")
    assert result["finish_reason"] == "context_full"
    assert stats["prompt_tokens"] + stats["decode_tokens"] == 256 + 1


def test_save_says_its_chat_on_a_line_of_its_own(tmp_path: Path) -> None:
    """Read as a terminal shows it (stdout and stderr on one stream): the reply's last
    line ends before "saved as chat" starts."""
    import subprocess
    import sys

    argv = ["generate", "Say hello.", "-s", "5", "--max-tokens", "6", "--save"]
    argv += ["--db", str(tmp_path / "chats.db"), *MODEL_FLAGS]
    shown = subprocess.run(
        [sys.executable, "-m", "tui.cli.main", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    ).stdout
    lines = shown.splitlines()
    assert lines[-1] == "samplescope: saved as chat 1"
    assert lines[-2].strip() and "saved as chat" not in lines[-2]
