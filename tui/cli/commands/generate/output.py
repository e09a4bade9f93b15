"""What `generate` prints when the reply is done: one JSON object (`--json`), or the
end of the streamed text; the stop on a loop, and with -v the run's figures, on stderr."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import asdict

from backend.chat.events import FinishedEvent, RewindEvent
from sampling.records import Step
from sampling.samplers.guidance_report import has_two_distributions, report_json
from sampling.sections import Section
from tui.cli.commands.generate.build import GenerateRun
from tui.cli.commands.generate.stream import StreamedReply
from tui.cli.reply_score_json import reply_score_json
from tui.cli.sections_json import sections_json
from tui.cli.verbose import log


def ghosts_json(ghosts: list[RewindEvent], reply_ids: list[int]) -> list[dict[str, object]]:
    """The rejected attempts for --json: where each began, its tokens and text, the
    banned text found, the tokens banned there, and its stored branch (with --save)."""
    return [
        {
            "at": ghost.index,
            "token_ids": list(ghost.token_ids),
            "text": ghost.text,
            "matched": ghost.matched,
            "banned": list(ghost.banned),
            **({"reply_id": reply_ids[n]} if n < len(reply_ids) else {}),
        }
        for n, ghost in enumerate(ghosts)
    ]


def guidance_json(
    steps: list[Step], text: Callable[[int], str | None] | None = None
) -> dict[str, object]:
    """For --json of a guided or contrasted reply: each step's report of each (both
    distributions' top tokens, the combination's, what it raised and lowered, from
    `Step.reports`; each token with its `text` when given); nothing without them."""
    shown: dict[str, object] = {}
    for unit in ("guidance", "contrast"):
        reports = [step.reports.get(unit) for step in steps]
        if any(report is not None for report in reports):
            shown[unit] = [
                None if report is None else report_json(report, text) for report in reports
            ]
    return shown


def report_texts(run: GenerateRun, steps: list[Step]) -> dict[int, str]:
    """The text of every token the steps' guidance and contrast reports name (special
    tokens by name, bad bytes replaced), read while the model is loaded."""
    tokens = {
        token
        for step in steps
        for report in step.reports.values()
        if has_two_distributions(report)
        for value in report.values()
        if isinstance(value, tuple)
        for token, _ in value
    }
    runtime = run.backend.runtime
    return {t: runtime.token_bytes(t, special=True).decode("utf-8", "replace") for t in tokens}


def reply_json(
    run: GenerateRun,
    reply: StreamedReply,
    finished: FinishedEvent,
    chat_id: int | None,
    ghost_ids: list[int],
    texts: Mapping[int, str],
    *,
    show_prompt: bool = False,
) -> str:
    """The `--json` object: the text and its tokens, the settings, where each one not
    at its default came from (`setting_sources`: model, config, preset or flag) and
    the seed, how it finished, the figures, its score, the rejected attempts, the
    model (and the saved chat's id, with --save), and each step's guidance and
    contrast reports (their tokens' text from `texts`)."""
    settings = run.settings
    return json.dumps(
        {
            **({} if chat_id is None else {"chat_id": chat_id}),
            "mode": run.mode,
            **sections_json(reply.steps, reply.texts, finished.text),
            "token_ids": list(finished.token_ids),
            "settings": settings.to_json(),
            "seed": settings.seed,
            "setting_sources": run.sources.to_json(),
            "finish_reason": finished.reason,
            "loop": None if finished.loop is None else finished.loop.to_dict(),
            "error": finished.error,
            "stats": asdict(finished.stats),
            "score": reply_score_json(reply.steps),
            "ghosts": ghosts_json(reply.ghosts, ghost_ids),
            "model": run.backend.info.path,
            **({"prompt": prompt_text(run)} if show_prompt else {}),
            **guidance_json(reply.steps, texts.get),
        },
        ensure_ascii=False,
    )


def prompt_text(run: GenerateRun) -> str:
    """The prompt as the chat template renders it with its switches (`--show-prompt`),
    or in completion mode the text itself; a template that fails says so."""
    from backend.chat.template import ChatTemplateError

    if run.mode == "completion":
        return run.messages[-1].content
    try:
        return run.backend.template.render(run.messages)
    except ChatTemplateError as error:
        return f"(cannot be rendered: {error})"


def log_open_thinking(reply: StreamedReply) -> None:
    """Say on stderr that the reply ended inside its thinking (it has no answer)."""
    steps = reply.steps
    if steps and steps[-1].section is Section.THINKING:
        log("the reply ended inside its thinking: it has no answer (the end tag never came)")


def loop_note(finished: FinishedEvent) -> str:
    """The finish line's words on the reply's loop ("" when none was found)."""
    loop = finished.loop
    if loop is None:
        return ""
    return (
        f" loop of {loop.period} tokens × {loop.count} from token {loop.start}{loop.section_note},"
    )


def log_loop_stop(finished: FinishedEvent) -> None:
    """Say on stderr that the reply stopped at a loop, when it did."""
    if finished.reason == "loop" and finished.loop is not None:
        log(f"stopped on a{loop_note(finished).rstrip(',')}")


def log_figures(finished: FinishedEvent) -> None:
    """The run's figures on stderr (-v): how it finished, the prompt's tokens and
    prefill, the time to the first token, the decode rate, the sampler's time."""
    s = finished.stats
    log(
        f"finished: {finished.reason}; prompt {s.prompt_tokens} tokens"
        f" ({s.prefilled_tokens} prefilled in {s.prefill_ms:.0f} ms),"
        f" ttft {s.ttft_ms:.0f} ms, {s.decode_tokens} tokens at {s.decode_tps:.1f} tok/s,"
        f" {s.discarded_tokens} discarded,"
        f"{loop_note(finished)}"
        f" sampler {s.sampler_us / 1000:.1f} ms"
    )
