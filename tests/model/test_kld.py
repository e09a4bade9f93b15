"""`samplescope kld` on the default model against a Q4_0 copy of it (llama.cpp's own
quantizer), checked against an independent float64 computation from llama-cpp-python's
`Llama` logits."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from backend.llama.reference import llama_with
from backend.llama.repack_probe import one_sequence_weights
from backend.score.base_file import BaseFileReader
from tests.tiny_models import spm_vocab, write_tiny_llama
from tui.cli.main import main

CTX = 64
TEXT = (
    "Once upon a time, in a village at the edge of a great forest, there lived an old "
    "clockmaker who repaired every clock in the valley. Each morning he opened his shop, "
    "wound the tall clock by the door, and listened to its heavy tick. Children came to "
    "watch him work, and he told them stories about the gears: how each small wheel "
    "turns a larger one, how a spring stores the strength of a hand, and how a pendulum "
    "keeps time because it swings at its own steady pace whatever the weather. One "
    "winter the great clock on the church tower stopped, and nobody could climb to it. "
    "The mayor asked the clockmaker, who was too old for the ladder, so his granddaughter "
    "carried his tools up the narrow stairs while he called instructions from below."
)


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    code = main(["kld", *args, "--json", "--threads", "1"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    result: dict[str, object] = json.loads(captured.out)
    return result


def log_softmax64(rows: np.ndarray) -> np.ndarray:
    x = rows.astype(np.float64)
    top = x.max(axis=1, keepdims=True)
    return x - top - np.log(np.exp(x - top).sum(axis=1, keepdims=True))


@pytest.fixture(scope="module")
def text_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("kld") / "text.txt"
    path.write_text(TEXT, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def references(default_model_path: Path, q4_0_model_path: Path) -> Iterator[tuple[object, object]]:
    """llama-cpp-python's Llama on the base and the test model, every row's logits,
    chunks of CTX in one batch, flash attention on, the weights repacked where the
    repacked kernels run here (as llama-perplexity loads them, `kld`'s default)."""
    made = [
        llama_with(
            one_sequence_weights(path, None).repack,
            model_path=str(path),
            n_ctx=CTX,
            n_batch=CTX,
            n_ubatch=CTX,
            n_threads=1,
            n_threads_batch=1,
            logits_all=True,
            flash_attn=True,
            verbose=False,
        )
        for path in (default_model_path, q4_0_model_path)
    ]
    yield made[0], made[1]
    for llm in made:
        llm.close()  # type: ignore[attr-defined]


def chunk_log_probs(llm: object, chunk: list[int]) -> np.ndarray:
    """The float64 log-softmax of every row of one chunk decoded from an empty memory."""
    llm.reset()  # type: ignore[attr-defined]
    llm.eval(chunk)  # type: ignore[attr-defined]
    return log_softmax64(np.asarray(llm.scores[: len(chunk)]))  # type: ignore[attr-defined]


def test_statistics_match_llama_cpp_python(
    capsys: pytest.CaptureFixture[str],
    text_file: Path,
    default_model_path: Path,
    q4_0_model_path: Path,
    references: tuple[object, object],
) -> None:
    """Every scored token's KLD, Δp and top tokens, and the totals, as a float64 numpy
    computation from llama-cpp-python's logits under llama-perplexity's rules gives them."""
    got = run_json(
        capsys, str(text_file), "--model", str(q4_0_model_path), "--base",
        str(default_model_path), "--ctx", str(CTX),
    )  # fmt: skip
    kernels = {
        role: one_sequence_weights(path, None).kernels
        for role, path in (("test", q4_0_model_path), ("base", default_model_path))
    }
    assert got["weights"] == kernels  # the default: llama-perplexity's, where it runs
    base_llm, test_llm = references
    tokens = list(base_llm.tokenize(TEXT.encode(), add_bos=True, special=False))  # type: ignore[attr-defined]
    assert len(tokens) >= 2 * CTX
    n_chunk = len(tokens) // CTX
    first = CTX // 2
    kld, reverse, delta_p, same, nll, nll_base, positions = [], [], [], [], [], [], []
    for index in range(n_chunk):
        chunk = tokens[index * CTX : (index + 1) * CTX]  # SmolLM2 adds no BOS: as it is
        log_b = chunk_log_probs(base_llm, chunk)[first : CTX - 1]
        log_t = chunk_log_probs(test_llm, chunk)[first : CTX - 1]
        floor = np.maximum(log_b.min(axis=1), log_b.max(axis=1) - 16.0)
        log_b = np.maximum(log_b, floor[:, None])  # the base as stored: 16 nats deep
        targets = np.array(chunk[first + 1 :])
        rows = np.arange(targets.size)
        kld += list(np.where(log_b > -16, np.exp(log_b) * (log_b - log_t), 0).sum(axis=1))
        reverse += list((np.exp(log_t) * (log_t - log_b)).sum(axis=1))
        delta_p += list(np.exp(log_t[rows, targets]) - np.exp(log_b[rows, targets]))
        same += list(log_t.argmax(axis=1) == log_b.argmax(axis=1))
        nll += list(-log_t[rows, targets])
        nll_base += list(-log_b[rows, targets])
        positions += list(index * CTX + first + 1 + rows)
    per_token = got["tokens"]
    assert isinstance(per_token, list)
    assert got["rule"] == "chunks"
    assert got["n_scored"] == len(kld) == n_chunk * (CTX - 1 - first)
    assert [t["position"] for t in per_token] == positions
    assert [t["token_id"] for t in per_token] == [tokens[p] for p in positions]
    assert [t["kld"] for t in per_token] == pytest.approx(kld, rel=1e-3, abs=2e-4)
    assert [t["kld_reverse"] for t in per_token] == pytest.approx(reverse, rel=1e-3, abs=2e-4)
    assert [t["delta_p"] for t in per_token] == pytest.approx(delta_p, abs=1e-4)
    assert got["mean_kld"] == pytest.approx(np.mean(kld), rel=1e-3)
    assert got["median_kld"] == pytest.approx(np.median(kld), rel=1e-3)
    assert got["max_kld"] == pytest.approx(np.max(kld), rel=1e-3)
    assert got["same_top_p"] == pytest.approx(np.mean(same))
    assert got["ppl_test"] == pytest.approx(np.exp(np.mean(nll)), rel=1e-4)
    assert got["ppl_base"] == pytest.approx(np.exp(np.mean(nll_base)), rel=1e-4)
    assert got["rms_delta_p"] == pytest.approx(np.sqrt(np.mean(np.square(delta_p))), rel=1e-3)
    assert 0 < float(got["mean_kld"]) < 5  # type: ignore[arg-type]
    assert float(got["same_top_p"]) < 1  # type: ignore[arg-type]  # two quantizations do differ


def test_base_file_round_trip(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    text_file: Path,
    default_model_path: Path,
    q4_0_model_path: Path,
) -> None:
    """--save-base writes llama-perplexity's file; --base-logits reads it back to the
    same figures."""
    saved = tmp_path / "base.kld"
    model_args = ("--model", str(q4_0_model_path), "--ctx", str(CTX))
    direct = run_json(
        capsys, str(text_file), *model_args, "--base", str(default_model_path), "--save-base",
        str(saved),
    )  # fmt: skip
    reader = BaseFileReader(saved)
    assert (reader.layout.n_ctx, reader.layout.n_vocab) == (CTX, 49152)
    assert reader.layout.n_chunk == direct["n_chunk"]
    reader.close()
    from_file = run_json(
        capsys, str(text_file), "--model", str(q4_0_model_path), "--base-logits", str(saved)
    )
    weights = direct["weights"]
    assert isinstance(weights, dict)
    assert from_file == {**direct, "weights": {"test": weights["test"]}}  # no base model


def test_a_model_against_itself_and_a_short_text(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, default_model_path: Path
) -> None:
    """A text under two contexts is scored on every position (and says so); a model
    against itself differs by the codec's rounding only."""
    short = tmp_path / "short.txt"
    short.write_text("The quick brown fox jumps over the lazy dog.", encoding="utf-8")
    path = str(default_model_path)
    got = run_json(capsys, str(short), "--model", path, "--base", path, "--ctx", str(CTX))
    assert got["rule"] == "every_position"
    assert "every position" in str(got["rule_text"])
    per_token = got["tokens"]
    assert isinstance(per_token, list)
    assert [t["position"] for t in per_token] == list(range(1, len(per_token) + 1))
    assert got["n_scored"] == len(per_token) > 5
    assert abs(float(got["mean_kld"])) < 1e-4  # type: ignore[arg-type]
    assert got["same_top_p"] == 1.0
    assert all(t["top_base"] == t["top_test"] for t in per_token)


def test_different_vocabularies_are_one_line_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text_file: Path, default_model_path: Path
) -> None:
    tiny = write_tiny_llama(tmp_path / "tiny.gguf", spm_vocab(600), seed=3)
    code = main(["kld", str(text_file), "--model", str(default_model_path), "--base", str(tiny)])
    err = capsys.readouterr().err
    assert code == 2
    assert "different vocabularies: 49152 tokens against 600" in err
    assert err.count("\n") == 1


def test_bad_requests_are_one_line_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text_file: Path, default_model_path: Path
) -> None:
    path = str(default_model_path)
    saved = tmp_path / "never.kld"
    code = main(["kld", str(text_file), "--model", path, "--base-logits", str(text_file)])
    assert code == 2
    assert "does not begin with _logits_" in capsys.readouterr().err
    short = tmp_path / "short.txt"
    short.write_text("A few words.", encoding="utf-8")
    code = main(
        ["kld", str(short), "--model", path, "--base", path, "--save-base", str(saved)]
    )  # fmt: skip
    assert code == 2
    assert "--save-base needs llama-perplexity's rule" in capsys.readouterr().err
    assert not saved.exists()
