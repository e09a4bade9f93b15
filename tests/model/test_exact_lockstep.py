"""Exact side by side: a compare column's tokens never depend on what is decoded
beside it.

Every column decoded in lockstep (one `llama_decode` a step for every live column,
each column in its own KV stream, weights not repacked) gives exactly the tokens
`generate` gives alone with its settings and seed; adding or removing a neighbour
column changes no other column; beam search's beams are the beams of the same search
run one beam a decode. On SmolLM2's Q4_1 and on its Q4_0 copy (a type llama.cpp's CPU
backend would repack: tests/quantized_models.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from backend.chat.events import FinishedEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.session.beams import beam_search
from backend.session.compare import compare
from backend.session.llama_backend import LlamaBackend
from sampling.built_in import DEFAULT_CHAT_SETTINGS
from sampling.settings.record import SamplerSettings
from tui.cli.main import main

QUESTION = [ChatMessage("user", "Describe a walk through a forest in autumn.")]
MAX_TOKENS = 48
BASE = DEFAULT_CHAT_SETTINGS.with_changes(seed=1234)
#: Four columns of varied settings (greedy, top-k, top-p with a penalty, hot min-p).
COLUMNS = (
    BASE.with_changes(temperature=0.0),
    BASE.with_changes(temperature=0.7, top_k=20),
    BASE.with_changes(temperature=1.0, top_p=0.9, min_p=0.0, repeat_penalty=1.1),
    BASE.with_changes(temperature=1.4, min_p=0.08),
)


@pytest.fixture(scope="module", params=["SmolLM2 Q4_1", "SmolLM2 Q4_0"])
def backend(
    request: pytest.FixtureRequest, default_model_path: Path, q4_0_model_path: Path
) -> Iterator[LlamaBackend]:
    """The default model, and its Q4_0 copy."""
    path = default_model_path if request.param == "SmolLM2 Q4_1" else q4_0_model_path
    loaded = LlamaBackend.load(path, n_ctx=1024, n_batch=64, n_threads=1)
    yield loaded
    loaded.close()


def alone(backend: LlamaBackend, settings: SamplerSettings) -> tuple[int, ...]:
    """The tokens `generate` gives with `settings`, from an empty memory."""
    backend.reset()
    events = backend.generate(QUESTION, LiveSettings(settings), max_tokens=MAX_TOKENS)
    finished = [e for e in events if isinstance(e, FinishedEvent)][-1]
    assert finished.error is None
    return finished.token_ids


def side_by_side(
    backend: LlamaBackend, columns: Sequence[SamplerSettings]
) -> list[tuple[int, ...]]:
    """Each column's tokens, the columns decoded in lockstep."""
    backend.reset()
    ends: dict[int, FinishedEvent] = {}
    for item in compare(backend, QUESTION, columns, max_tokens=MAX_TOKENS):
        if isinstance(item.event, FinishedEvent):
            assert item.event.error is None and item.event.decoding is not None
            ends[item.column] = item.event
    return [ends[column].token_ids for column in range(len(columns))]


@pytest.fixture(scope="module")
def four(backend: LlamaBackend) -> list[tuple[int, ...]]:
    """The four columns' tokens, decoded in lockstep once a model (two tests read them)."""
    return side_by_side(backend, COLUMNS)


def test_the_load_finds_lockstep_exact(backend: LlamaBackend) -> None:
    assert backend.info.batch_invariant is True and backend.info.repack is False


def test_every_lockstep_column_is_generate_alone(
    backend: LlamaBackend, four: list[tuple[int, ...]]
) -> None:
    assert len({ids[:8] for ids in four}) > 1  # the columns do part
    for column, settings in enumerate(COLUMNS):
        assert four[column] == alone(backend, settings), f"column {column + 1}"


def test_a_column_keeps_its_tokens_when_a_neighbour_comes_or_goes(
    backend: LlamaBackend, four: list[tuple[int, ...]]
) -> None:
    three = side_by_side(backend, COLUMNS[1:])
    two = side_by_side(backend, (COLUMNS[3], COLUMNS[1]))
    assert three == four[1:]
    assert two == [four[3], four[1]]


def test_beam_search_in_lockstep_is_the_search_one_beam_a_decode(backend: LlamaBackend) -> None:
    settings = SamplerSettings(temperature=1.0)
    backend.reset()
    batched = beam_search(backend, QUESTION, settings, width=3, max_tokens=24)
    backend.reset()
    single = beam_search(backend, QUESTION, settings, width=3, max_tokens=24, lockstep=False)
    assert [b.token_ids for b in batched.beams] == [b.token_ids for b in single.beams]
    assert [b.logprob for b in batched.beams] == [b.logprob for b in single.beams]
    assert batched.steps == single.steps


def test_compare_json_and_info_say_lockstep_is_exact(
    capsys: pytest.CaptureFixture[str], default_model_path: Path
) -> None:
    argv = ["compare", "Hi there.", "--set", "t=0", "--set", "t=1", "--max-tokens", "4"]
    assert main([*argv, "--json", "--threads", "1", "--model", str(default_model_path)]) == 0
    columns = json.loads(capsys.readouterr().out)
    assert [c["lockstep"] for c in columns] == [
        {"kv": "streams", "repack": False, "exact": True}
    ] * 2
    assert main(["info", str(default_model_path)]) == 0
    out = capsys.readouterr().out
    assert "lockstep decoding: exact (self-check at load" in out


def test_repack_runs_inexact_or_is_refused_where_it_crashes_a_batch(
    capsys: pytest.CaptureFixture[str], q4_0_model_path: Path
) -> None:
    """`--repack` (llama.cpp's extra buffer types): where their kernels decode a batch,
    compare says its columns ran on them; where they crash one (this build's AMX
    kernels), the model is refused with one line, before anything is decoded."""
    argv = ["compare", "Hi there.", "--set", "t=0", "--set", "t=1", "--max-tokens", "4"]
    argv += ["--json", "--repack", "--threads", "1", "--model", str(q4_0_model_path)]
    code = main(argv)
    out, err = capsys.readouterr()
    if code == 0:
        columns = json.loads(out)
        assert all(c["lockstep"]["repack"] is True for c in columns)
    else:
        assert code == 2 and err.count("\n") == 1
        assert "--repack: llama.cpp's repacked weights crash a batched decode" in err
