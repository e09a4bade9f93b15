"""Guidance with a negative prompt on the real model: exact, and replayed.

A guided reply decodes its negative prompt beside it, in its own KV stream: each step's
two distributions are then exactly what the reply and the negative prompt give each
decoded alone. The reference here takes them from separate single-sequence runs (the
prompt prefilled, the reply's tokens forced one at a time, as `SessionBackend.step_input`
rebuilds a step) and combines them in numpy; the guided reply must equal it token for
token, greedy and seeded. Scale 1 is no guidance, bit for bit.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from backend.chat.events import FinishedEvent, TokenEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.session.llama_backend import LlamaBackend
from backend.session.run import Steer
from sampling.built_in import DEFAULT_CHAT_SETTINGS
from sampling.records import Step
from sampling.sampler import Sampler
from sampling.samplers.guidance_report import token_figures
from sampling.settings.record import SamplerSettings
from tui.cli.main import main

QUESTION = [ChatMessage("user", "Write one sentence about the sea.")]
NEGATIVE = "Write one sentence about a desert."
NEGATIVE_TURN = [ChatMessage("user", NEGATIVE)]
MAX_TOKENS = 16
GREEDY = SamplerSettings(temperature=0.0)
SEEDED = DEFAULT_CHAT_SETTINGS.with_changes(temperature=1.0, seed=4321)


def guided_reply(
    backend: LlamaBackend, settings: SamplerSettings, raw: bool = False
) -> tuple[tuple[int, ...], list[Step]]:
    """The tokens and steps `generate` gives with `settings`."""
    backend.reset()
    steps: list[Step] = []
    finished: FinishedEvent | None = None
    messages = QUESTION if not raw else [ChatMessage("user", "The sea is")]
    for event in backend.generate(messages, LiveSettings(settings), max_tokens=MAX_TOKENS, raw=raw):
        if isinstance(event, TokenEvent):
            steps.append(event.step)
        elif isinstance(event, FinishedEvent):
            finished = event
    assert finished is not None and finished.error is None, finished
    return finished.token_ids, steps


def log_softmax(logits: np.ndarray) -> np.ndarray:
    values = logits.astype(np.float64)
    shifted = values - values.max()
    return shifted - np.log(np.exp(shifted).sum())


def forced_steps(
    backend: LlamaBackend, messages: list[ChatMessage], tokens: tuple[int, ...]
) -> list[tuple[np.ndarray, tuple[int, ...]]]:
    """The logits and history at each step of a single-sequence reply to `messages`
    made of `tokens`, forced one a step (each decoded alone, as `step_input` rebuilds
    a step)."""
    seen: dict[int, tuple[np.ndarray, tuple[int, ...]]] = {}
    live = LiveSettings(GREEDY)
    live.step_sink = lambda i, logits, history: seen.setdefault(
        i, (np.array(logits), tuple(history))
    )
    backend.reset()
    first, *then = tokens
    steer = Steer(force=first, then=tuple(then))
    for _ in backend.generate(messages, live, max_tokens=MAX_TOKENS, steer=steer):
        pass
    return [seen[i] for i in range(len(tokens))]


def reference(
    backend: LlamaBackend, settings: SamplerSettings, scale: float, tokens: tuple[int, ...]
) -> tuple[int, ...]:
    """The reply whose every step combines the two distributions of separate
    single-sequence runs: scale * (cond - uncond) + uncond on log-probabilities, drawn
    from by a sampler with the other settings (the same random stream).

    Both runs decode the guided reply's `tokens`: the reference follows them while it
    draws the same token, and ends at the first it draws otherwise (after it, its own
    reply would need other logits), so it equals `tokens` exactly when each of its
    steps does."""
    plain = settings.with_changes(guidance_scale=1.0, negative_prompt="")
    sampler = Sampler(plain, vocab_size=backend.info.n_vocab, vocabulary=backend.model)
    conds = forced_steps(backend, QUESTION, tokens)
    unconds = forced_steps(backend, NEGATIVE_TURN, tokens)
    drawn: list[int] = []
    for (cond, history), (uncond, _) in zip(conds, unconds, strict=True):
        cond_log, uncond_log = log_softmax(cond), log_softmax(uncond)
        guided = scale * (cond_log - uncond_log) + uncond_log
        token = sampler.sample(guided, history).token_id
        drawn.append(token)
        if token != tokens[len(drawn) - 1] or backend.model.is_eog(token):
            break
    return tuple(drawn)


@pytest.mark.parametrize("base", [GREEDY, SEEDED], ids=["greedy", "seeded"])
@pytest.mark.parametrize("scale", [1.5, 3.0])
def test_a_guided_reply_equals_the_reference(
    llama_backend: LlamaBackend, base: SamplerSettings, scale: float
) -> None:
    settings = base.with_changes(guidance_scale=scale, negative_prompt=NEGATIVE)
    tokens, steps = guided_reply(llama_backend, settings)
    assert tokens == reference(llama_backend, settings, scale, tokens)
    plain, _ = guided_reply(llama_backend, base)
    assert tokens != plain  # guidance changed the reply
    report = steps[0].reports.get("guidance")
    assert report is not None and report["scale"] == scale
    divergence = report["divergence"]
    assert token_figures(report, "cond") != token_figures(report, "uncond") or (
        isinstance(divergence, float) and divergence > 0
    )


@pytest.mark.parametrize("base", [GREEDY, SEEDED], ids=["greedy", "seeded"])
def test_scale_one_is_no_guidance_bit_for_bit(
    llama_backend: LlamaBackend, base: SamplerSettings
) -> None:
    tokens, steps = guided_reply(
        llama_backend, base.with_changes(guidance_scale=1.0, negative_prompt=NEGATIVE)
    )
    plain, plain_steps = guided_reply(llama_backend, base)
    assert tokens == plain
    for step, alone in zip(steps, plain_steps, strict=True):
        assert step.prob == alone.prob and step.draw == alone.draw
        assert np.array_equal(step.table.prob_before, alone.table.prob_before)
        assert "guidance" not in step.reports


def test_scale_zero_is_the_negative_prompt_alone(llama_backend: LlamaBackend) -> None:
    guided, _ = guided_reply(
        llama_backend, GREEDY.with_changes(guidance_scale=0.0, negative_prompt=NEGATIVE)
    )
    llama_backend.reset()
    events = llama_backend.generate(NEGATIVE_TURN, LiveSettings(GREEDY), max_tokens=MAX_TOKENS)
    alone = [e for e in events if isinstance(e, FinishedEvent)][-1].token_ids
    assert guided == alone


def test_an_empty_negative_prompt_is_the_empty_turn(llama_backend: LlamaBackend) -> None:
    _, steps = guided_reply(llama_backend, GREEDY.with_changes(guidance_scale=2.0))
    assert "guidance" in steps[0].reports
    # In completion mode an empty negative prompt (no BOS for SmolLM2) starts from the
    # prompt's last token.
    raw, raw_steps = guided_reply(llama_backend, GREEDY.with_changes(guidance_scale=2.0), raw=True)
    assert raw and "guidance" in raw_steps[0].reports


def test_the_command_line_carries_guidance_and_replays_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "chats.db"
    argv = ["generate", QUESTION[0].content, "--max-tokens", str(MAX_TOKENS), "--threads", "1"]
    argv += ["--guidance-scale", "2.5", "--negative-prompt", NEGATIVE, "--seed", "77"]
    assert main([*argv, "--json", "--save", "--db", str(db)]) == 0
    out = json.loads(capsys.readouterr().out)
    first = out["guidance"][0]
    assert first["scale"] == 2.5 and len(first["cond"]) == len(first["uncond"]) > 0
    assert all(isinstance(c["text"], str) for c in first["cond"] + first["uncond"])
    assert main(["replay", "--db", str(db), str(out["chat_id"]), "--threads", "1"]) == 0
    assert "token-identical" in capsys.readouterr().out


def test_bad_scales_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    for value in ("nan", "inf", "-inf"):
        assert main(["generate", "hi", f"--guidance-scale={value}"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "guidance_scale" in err[0]


def test_what_if_rebuilds_a_guided_step_with_its_negative_prompt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "chats.db"
    argv = ["generate", QUESTION[0].content, "--max-tokens", "8", "--threads", "1"]
    argv += ["--guidance-scale", "3", "--negative-prompt", NEGATIVE, "--seed", "5"]
    assert main([*argv, "--json", "--save", "--db", str(db)]) == 0
    out = json.loads(capsys.readouterr().out)
    for index in (0, 4):
        whatif = ["whatif", str(out["chat_id"]), "--at", str(index + 1), "--db", str(db)]
        assert main([*whatif, "--json", "--threads", "1"]) == 0
        step = json.loads(capsys.readouterr().out)
        assert step["drawn"] == out["token_ids"][index]
        guided = out["guidance"][index]["guided"]
        rows = {row["token_id"]: row["before"] for row in step["candidates"]}
        for top in guided[:3]:
            assert rows[top["id"]] == pytest.approx(top["prob"], rel=1e-6)


def test_the_guidance_bench_runs_on_a_tiny_budget(default_model_path: Path) -> None:
    from backend.bench.guidance import format_result, run_guidance_bench

    result = run_guidance_bench(default_model_path, n_threads=1, max_tokens=6, repeats=1)
    assert result.tokens == 6 and result.plain_tps > 0 and result.guided_tps > 0
    table = format_result(result)
    assert "| guided (negative prompt beside it) |" in table and "x a plain token" in table
    assert result.one_token_ms > 0 and result.two_tokens_ms > 0
    assert "two tokens in one batch" in table


def test_guided_compare_columns_are_each_guided_reply_alone(llama_backend: LlamaBackend) -> None:
    from backend.session.compare import compare

    columns = [
        GREEDY.with_changes(guidance_scale=2.0, negative_prompt=NEGATIVE),
        SEEDED.with_changes(guidance_scale=1.5, negative_prompt="Write about the moon."),
    ]
    llama_backend.reset()
    ends: dict[int, FinishedEvent] = {}
    for item in compare(llama_backend, QUESTION, columns, max_tokens=MAX_TOKENS):
        if isinstance(item.event, FinishedEvent):
            assert item.event.error is None
            ends[item.column] = item.event
    for column, settings in enumerate(columns):
        alone, _ = guided_reply(llama_backend, settings)
        assert ends[column].token_ids == alone
