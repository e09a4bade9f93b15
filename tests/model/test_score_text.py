"""`score` of a text against an independent computation through llama-cpp-python.

llama-cpp-python's `Llama(logits_all=True)` decodes the same tokens in batches of the
same size and keeps every row of logits; its log-softmax must equal samplescope's
log-probabilities within 1e-4, window by window when a long text is scored in windows.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from backend.chat.protocol import ChatMessage, LiveSettings
from backend.llama.repack_probe import one_sequence_weights
from backend.score.text_score import ScoreError, TextScore, score_text
from backend.session.llama_backend import LlamaBackend
from sampling.settings.record import SamplerSettings
from tests.tiny_models import spm_vocab, write_tiny_llama
from tui.cli.main import main

SHORT = "The quick brown fox jumps over the lazy dog. It was a sunny day in Paris, 1889."
LONG = (
    "Once upon a time, in a village at the edge of a great forest, there lived an old "
    "clockmaker who repaired every clock in the valley. Each morning he opened his shop, "
    "wound the tall clock by the door, and listened to its heavy tick. Children came to "
    "watch him work, and he told them stories about the gears: how each small wheel "
    "turns a larger one, how a spring stores the strength of a hand, and how a pendulum "
    "keeps time because it swings at its own steady pace whatever the weather. One "
    "winter the great clock on the church tower stopped, and nobody could climb to it."
)
TOLERANCE = 1e-4


def reference_logprobs(llm: object, window: list[int]) -> np.ndarray:
    """log p(window[i + 1] | window[: i + 1]) for every i, from llama-cpp-python."""
    llm.reset()  # type: ignore[attr-defined]
    llm.eval(window)  # type: ignore[attr-defined]
    rows = np.asarray(llm.scores[: len(window)], dtype=np.float64)  # type: ignore[attr-defined]
    shifted = rows - rows.max(axis=1, keepdims=True)
    log_softmax = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return log_softmax[np.arange(len(window) - 1), window[1:]]


def scored(score: TextScore) -> dict[int, float]:
    return {i: t.logprob for i, t in enumerate(score.tokens) if t.logprob is not None}


def test_tokens_match_llama_cpp_python(llama_backend: LlamaBackend, reference: object) -> None:
    ids = llama_backend.runtime.tokenize(SHORT, special=False)
    theirs = reference.tokenize(SHORT.encode(), add_bos=False, special=False)  # type: ignore[attr-defined]
    assert ids == list(theirs)


def test_short_text_equals_llama_cpp_python(llama_backend: LlamaBackend, reference: object) -> None:
    runtime = llama_backend.runtime
    assert not runtime.add_bos  # SmolLM2: the first token has nothing predicting it
    held = list(
        llama_backend.generate(
            [ChatMessage("user", "Hi.")],
            LiveSettings(SamplerSettings(temperature=0.0)),
            max_tokens=4,
        )
    )
    assert held and llama_backend.context_used > 0
    score = score_text(llama_backend, SHORT)
    # Scoring went through the backend: its memory says, truly, that nothing is held.
    assert llama_backend.context_used == 0 == len(llama_backend.session.memory.tokens())
    ids = [t.token_id for t in score.tokens]
    expected = reference_logprobs(reference, ids)
    ours = np.array([t.logprob for t in score.tokens[1:]])
    assert score.tokens[0].logprob is None
    assert np.max(np.abs(ours - expected)) < TOLERANCE
    assert score.n_tokens == len(ids) - 1
    assert score.logprob == pytest.approx(float(expected.sum()), abs=len(ids) * TOLERANCE)
    assert score.perplexity == pytest.approx(float(np.exp(-expected.mean())), rel=1e-4)
    for token in score.tokens[1:]:
        assert token.rank is not None and token.entropy is not None
        # The top alternatives are ordered and the chosen token sits at its rank.
        top = [alt.logprob for alt in token.top]
        assert top == sorted(top, reverse=True) and len(top) == 5
        if token.rank <= 5:
            assert token.top[token.rank - 1].token_id == token.token_id
        else:
            assert token.logprob is not None and token.logprob <= top[-1]
        assert token.entropy >= 0.0


def test_text_longer_than_a_batch_equals_llama_cpp_python(
    llama_backend: LlamaBackend, reference: object
) -> None:
    runtime = llama_backend.runtime
    score = score_text(llama_backend, LONG)
    ids = [t.token_id for t in score.tokens]
    assert len(ids) > runtime.n_batch  # prefilled in two batches of 64
    ours = np.array([t.logprob for t in score.tokens[1:]])
    assert np.max(np.abs(ours - reference_logprobs(reference, ids))) < TOLERANCE


def test_windows_equal_llama_cpp_python_window_by_window(
    llama_backend: LlamaBackend, reference: object
) -> None:
    window, stride = 48, 20
    score = score_text(llama_backend, LONG, window=window, stride=stride)
    ids = [t.token_id for t in score.tokens]
    assert score.window == window and score.stride == stride
    ours = scored(score)
    # Every token but the first is scored exactly once, by the window that reaches it
    # first: the first window from token 1, each later one past the previous window.
    assert sorted(ours) == list(range(1, len(ids)))
    start, scored_until = 0, 1
    while scored_until < len(ids):
        end = min(start + window, len(ids))
        expected = reference_logprobs(reference, ids[start:end])
        for index in range(scored_until, end):
            assert abs(ours[index] - expected[index - start - 1]) < TOLERANCE, index
            assert index - start >= min(index, window - stride)  # the context it had
        scored_until, start = end, start + stride
    # Scored in one window, the later tokens see more context: the scores differ.
    whole = scored(score_text(llama_backend, LONG))
    assert any(abs(whole[i] - ours[i]) > 1e-3 for i in range(window, len(ids)))


def test_too_long_without_stride_and_bad_windows(llama_backend: LlamaBackend) -> None:
    runtime = llama_backend.runtime
    with pytest.raises(ScoreError, match="give --stride"):
        score_text(llama_backend, LONG, window=32)
    with pytest.raises(ScoreError, match="invalid stride 32"):
        score_text(llama_backend, LONG, window=32, stride=32)
    with pytest.raises(ScoreError, match="invalid window"):
        score_text(llama_backend, LONG, window=runtime.n_ctx + 1)
    with pytest.raises(ScoreError, match="empty"):
        score_text(llama_backend, "")
    with pytest.raises(ScoreError, match="one token"):
        score_text(llama_backend, "The")


def test_cli_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "text.txt"
    path.write_text("Paris is the capital of France. ✨", encoding="utf-8")
    assert main(["score", str(path), "--json", "--threads", "1", "--ctx", "256"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) >= {"tokens", "perplexity", "logprob", "n_tokens"}
    assert "".join(t["text"] for t in data["tokens"]) == "Paris is the capital of France. ✨"
    assert data["n_tokens"] == len(data["tokens"]) - 1
    logprobs = [t["logprob"] for t in data["tokens"][1:]]
    assert data["logprob"] == pytest.approx(sum(logprobs))
    assert data["perplexity"] == pytest.approx(np.exp(-sum(logprobs) / len(logprobs)))
    first = data["tokens"][1]
    assert set(first) == {"token_id", "text", "logprob", "rank", "entropy", "top"}
    assert set(first["top"][0]) == {"token_id", "text", "logprob"}


def test_cli_weights_are_llama_perplexitys_and_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], q4_0_model_path: Path
) -> None:
    """A job of one sequence loads the weights as llama-perplexity does where the
    repacked kernels run here (Q4_0: repacked on a CPU with AVX2 or AVX-512), and
    says which kernels ran."""
    path = tmp_path / "text.txt"
    path.write_text("Paris is the capital of France, and Rome is the capital of Italy.")
    base = ["score", str(path), "--threads", "1", "--ctx", "256", "--model", str(q4_0_model_path)]
    expected = one_sequence_weights(q4_0_model_path, None)

    def scored(*flags: str) -> dict[str, object]:
        assert main([*base, "--json", *flags]) == 0
        data: dict[str, object] = json.loads(capsys.readouterr().out)
        return data

    default = scored()
    assert default["weights"] == expected.kernels
    asked = scored("--repack" if expected.repack else "--no-repack")
    assert asked["tokens"] == default["tokens"] and asked["weights"] == expected.kernels
    other = scored("--no-repack" if expected.repack else "--repack")
    assert other["weights"] != expected.kernels
    if expected.repack:  # Q4_0's repacked kernels sum in another order
        assert other["logprob"] != default["logprob"]
    assert main(base) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"weights: {expected.describe()}"


def test_cli_too_long_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "long.txt"
    path.write_text(LONG * 3, encoding="utf-8")  # llama.cpp pads a context to 256 tokens
    assert main(["score", str(path), "--threads", "1", "--ctx", "64"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "give --stride" in error


def test_a_model_split_across_rpc_servers_scores_the_same(
    default_model_path: Path, llama_backend: LlamaBackend, tmp_path: Path
) -> None:
    from tui.cli.commands.bench.local_rpc_servers import local_servers

    local = scored(score_text(llama_backend, LONG, window=48, stride=20))
    with local_servers(2, threads=1) as servers:
        split = LlamaBackend.load(
            default_model_path,
            n_ctx=2048,
            n_batch=64,
            n_threads=1,
            log_path=tmp_path / "llama.log",
            rpc=[s.endpoint for s in servers],
        )
        try:
            assert split.info.placement == "2 RPC servers"
            remote = scored(score_text(split, LONG, window=48, stride=20))
        finally:
            split.close()
    assert remote.keys() == local.keys()
    assert max(abs(remote[i] - local[i]) for i in local) < TOLERANCE


def test_with_a_bos_every_window_begins_with_it(tmp_path: Path) -> None:
    from llama_cpp import Llama

    # A SentencePiece vocabulary: llama.cpp adds a BOS to its texts.
    path = write_tiny_llama(tmp_path / "tiny.gguf", spm_vocab(600), seed=3)
    backend = LlamaBackend.load(path, n_ctx=256, n_batch=8, n_threads=1)
    text = " ".join(["the owl", "hello the sea", "a b c", "the hell"] * 6)
    try:
        runtime = backend.runtime
        assert runtime.add_bos
        window, stride = 16, 7
        score = score_text(backend, text, window=window, stride=stride)
    finally:
        backend.close()
    ids = [t.token_id for t in score.tokens]
    assert score.bos and len(ids) > 3 * window
    ours = scored(score)
    assert sorted(ours) == list(range(len(ids)))  # the first token too, after the BOS
    llm = Llama(
        model_path=str(path),
        n_ctx=256,
        n_batch=8,
        n_ubatch=8,
        n_threads=1,
        logits_all=True,
        verbose=False,
    )
    try:
        start, scored_until = 0, 0
        while scored_until < len(ids):
            end = min(start + window - 1, len(ids))
            expected = reference_logprobs(llm, [llm.token_bos(), *ids[start:end]])
            for index in range(scored_until, end):
                assert abs(ours[index] - expected[index - start]) < TOLERANCE, index
            scored_until, start = end, start + stride
    finally:
        llm.close()
