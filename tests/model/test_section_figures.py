"""Figures by section on the default model with a thinking chat template
(tests/thinking_models.py): `score` and `kld` of a text that thinks, and a reply's score
and sweep figures, each section's from its tokens' own."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from backend.chat.events import TokenEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.session.llama_backend import LlamaBackend
from sampling.analysis.reply_score import reply_score
from sampling.analysis.sweep_metrics import sample_figures, setting_metrics
from sampling.records import Step
from sampling.sections import Section, SectionState, SectionTracker
from sampling.settings.record import SamplerSettings
from tui.cli.main import main
from tui.cli.reply_score_json import reply_score_json

THOUGHT = (
    "<think>\nThe user greets me. I should greet them back and offer help.\n</think>\n"
    "Hello! How can I help you today?"
)


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    code = main([*args, "--json", "--threads", "1"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    values: dict[str, object] = json.loads(captured.out)
    return values


@pytest.fixture(scope="module")
def text_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sections") / "thought.txt"
    path.write_text(THOUGHT, encoding="utf-8")
    return path


def test_score_gives_each_section_s_figures(
    text_file: Path, thinking_model_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = run_json(capsys, "score", str(text_file), "--model", str(thinking_model_path))
    tokens = data["tokens"]
    assert isinstance(tokens, list)
    # The tags are the template's; SmolLM2 spells "<think>" in three tokens, the one that
    # completes it is the thinking's first.
    spans = data["sections"]
    assert [span["kind"] for span in spans] == ["answer", "thinking", "answer"]  # type: ignore[index]
    thinking_text = "".join(t["text"] for t in tokens if t["section"] == "thinking")
    assert thinking_text.startswith(">\nThe user") and thinking_text.endswith("</think>")
    total = 0
    for kind in ("thinking", "answer"):
        figures = data[kind]
        assert isinstance(figures, dict)
        logprobs = [
            t["logprob"] for t in tokens if t["section"] == kind and t["logprob"] is not None
        ]
        assert figures["n_tokens"] == len(logprobs) > 0
        assert figures["logprob"] == pytest.approx(math.fsum(logprobs))
        assert figures["perplexity"] == pytest.approx(
            math.exp(-math.fsum(logprobs) / len(logprobs))
        )
        total += figures["n_tokens"]
    assert total == data["n_tokens"]
    # The table ends with a line per section.
    assert (
        main(["score", str(text_file), "--model", str(thinking_model_path), "--threads", "1"]) == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[-3].startswith("thinking: ") and lines[-2].startswith("answer: ")


def test_score_of_a_model_that_does_not_think_is_as_before_unless_given_tags(
    text_file: Path, default_model_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = run_json(capsys, "score", str(text_file), "--model", str(default_model_path))
    assert not {"sections", "thinking", "answer"} & set(plain)
    assert all("section" not in token for token in plain["tokens"])  # type: ignore[union-attr]
    tagged = run_json(
        capsys,
        "score",
        str(text_file),
        "--model",
        str(default_model_path),
        "--thinking-tags",
        "<think>,</think>",
    )
    assert tagged["logprob"] == plain["logprob"]
    assert [{k: v for k, v in t.items() if k != "section"} for t in tagged["tokens"]] == plain[  # type: ignore[union-attr]
        "tokens"
    ]
    assert tagged["thinking"]["n_tokens"] + tagged["answer"]["n_tokens"] == plain["n_tokens"]  # type: ignore[index]


def test_kld_gives_each_section_s_figures(
    text_file: Path,
    thinking_model_path: Path,
    q4_0_model_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ("kld", str(text_file), "--model", str(q4_0_model_path), "--base")
    data = run_json(capsys, *args, str(thinking_model_path), "--thinking-tags", "<think>,</think>")
    tokens = data["tokens"]
    assert isinstance(tokens, list)
    scored = 0
    for kind in ("thinking", "answer"):
        figures = data[kind]
        assert isinstance(figures, dict)
        mine = [t for t in tokens if t["section"] == kind]
        assert figures["n_scored"] == len(mine) > 0
        assert figures["mean_kld"] == pytest.approx(math.fsum(t["kld"] for t in mine) / len(mine))
        same = sum(t["top_base"] == t["top_test"] for t in mine)
        assert figures["same_top_p"] == pytest.approx(same / len(mine))
        scored += len(mine)
    assert scored == data["n_scored"]
    # The test model's template does not think and no tags are given: as before.
    plain = run_json(capsys, *args, str(thinking_model_path))
    assert not {"sections", "thinking", "answer"} & set(plain)
    assert plain["mean_kld"] == data["mean_kld"]
    assert (
        main(
            [
                "kld",
                *args[1:],
                str(thinking_model_path),
                "--thinking-tags",
                "<think>,</think>",
                "--threads",
                "1",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "====== By section ======" in out and "\nthinking: " in out and "\nanswer  : " in out


@pytest.fixture(scope="module")
def thinking_steps(thinking_model_path: Path) -> list[Step]:
    """A greedy reply of the thinking model, its thinking ended by a budget of 8 tokens,
    its steps' sections from the tracker over the bytes its tokens spell, the prompt's
    thinking open (the template opens it)."""
    backend = LlamaBackend.load(thinking_model_path, n_threads=1, n_ctx=512, n_batch=64)
    try:
        events = backend.generate(
            [ChatMessage("user", "What is 2 + 2? Think briefly, then answer.")],
            LiveSettings(SamplerSettings(temperature=0.0, reasoning_budget=8)),
            max_tokens=48,
        )
        steps = [event.step for event in events if isinstance(event, TokenEvent)]
        pieces = [backend.runtime.token_bytes(step.token_id) for step in steps]
    finally:
        backend.close()
    tracker = SectionTracker.of("<think>", ["</think>"])
    kinds = tracker.sections(SectionState(thinking=True), pieces)
    return [replace(step, section=kind) for step, kind in zip(steps, kinds, strict=True)]


def test_a_reply_of_the_thinking_model_is_scored_by_section(thinking_steps: list[Step]) -> None:
    """Each section's score is that of its own steps, and the two make the whole."""
    steps = thinking_steps
    score = reply_score(steps)
    assert score is not None and score.thinking is not None and score.answer is not None
    assert score.logprob_raw is not None
    parts = [part for _, part in score.sections]
    assert sum(part.n_tokens for part in parts) == score.n_tokens == len(steps)
    assert math.fsum(part.logprob_raw or 0.0 for part in parts) == pytest.approx(score.logprob_raw)
    thinking = [step for step in steps if step.section is Section.THINKING]
    alone = reply_score(thinking)
    assert alone is not None and score.thinking == replace(alone, thinking=None, answer=None)
    values = reply_score_json(steps)
    assert values is not None and values["thinking"]["n_tokens"] == len(thinking)


def test_a_sweep_sample_of_the_thinking_model_by_section(thinking_steps: list[Step]) -> None:
    figures = sample_figures(0, 0, thinking_steps, "", "max_tokens")
    thinking, answer = figures.sections
    assert thinking.n_tokens + answer.n_tokens == figures.n_tokens == len(thinking_steps)
    assert thinking.n_tokens == sum(s.section is Section.THINKING for s in thinking_steps)
    assert figures.logprob_raw is not None
    assert math.fsum([thinking.logprob_raw or 0.0, answer.logprob_raw or 0.0]) == pytest.approx(
        figures.logprob_raw
    )
    metrics = setting_metrics([figures], 0)
    assert metrics.thinking_length is not None and metrics.answer_length is not None
    assert metrics.thinking_length.mean + metrics.answer_length.mean == len(thinking_steps)
