"""`samplescope compare`: one prompt under several settings and one seed, side by side."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from backend.chat.compare import first_divergence
from backend.chat.events import FinishedEvent, NoticeEvent, TokenEvent
from sampling.analysis.loops import first_loop
from sampling.analysis.reply_score import reply_score
from sampling.errors import SamplescopeError
from sampling.records import Step
from sampling.samplers.guidance import Guidance
from sampling.settings.record import SamplerSettings
from sampling.settings.registry import Registry
from sampling.settings.summary import settings_summary
from tui.cli.options.model import add_model_flags, load_backend
from tui.cli.options.output import add_json_flag
from tui.cli.options.prompt import add_system_flag
from tui.cli.options.sampler_registry import registry_of_args
from tui.cli.options.setting_sets import parse_set, short_keys
from tui.cli.options.template_flags import add_template_flags, template_switches
from tui.cli.prompt_messages import build_messages
from tui.cli.reply_score_json import reply_score_json
from tui.cli.sections_json import sections_json
from tui.cli.verbose import log, step_line
from tui.resources import available_presets
from tui.score_label import score_label


class CompareArgumentError(SamplescopeError):
    """--preset is wrong, or no prompt was given; the message says which and why."""


#: Narrower than this per column, the columns are printed one under the other.
MIN_COLUMN_WIDTH = 24
DEFAULT_SEED = 42


GROUP = "sample"


def register(subparsers: Any, registry: Registry) -> None:
    """Add `compare` to the command line."""
    keys_help = ", ".join(short_keys(registry))
    parser = subparsers.add_parser(
        "compare",
        help="one prompt under several sampler settings, side by side",
        description=(
            "Generate a reply to PROMPT once per --preset / --set (in the order given), all "
            "with one seed, print the replies side by side (stacked when the terminal is "
            "narrow) and mark each column's first token that differs from the first column. "
            "--set takes comma-separated key=value pairs on top of the off values "
            "(grammar=@PATH or json_schema=@PATH reads a file) "
            f"({keys_help} or any settings field name except seed: every column shares -s); "
            'a thinking model\'s thinking settings after "think." ("t=0.7,think.t=0.6").'
        ),
    )
    parser.add_argument("prompt", metavar="PROMPT", nargs="?", help="the user's message")
    parser.add_argument(
        "--preset", action="append", default=[], metavar="NAME", help="a preset (repeatable)"
    )
    parser.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="K=V,...",
        help='settings such as "t=0.8,k=40" (repeatable)',
    )
    parser.add_argument("--seed", "-s", type=int, default=None, help="the seed of every column")
    add_system_flag(parser)
    add_template_flags(parser)
    parser.add_argument("--max-tokens", type=int, default=64, help="reply length (default 64)")
    parser.add_argument("--raw", action="store_true", help="feed PROMPT without the chat template")
    parser.add_argument(
        "--sequential",
        action="store_true",
        help="generate the columns one after the other (default: in lockstep, one batch a step)",
    )
    add_json_flag(parser)
    parser.add_argument("--list-presets", action="store_true", help="list the presets and exit")
    add_model_flags(parser)
    parser.set_defaults(func=run)


def columns_from_args(args: argparse.Namespace) -> list[tuple[str, SamplerSettings]]:
    """The (label, settings) of every column, the seed applied."""
    columns: list[tuple[str, SamplerSettings]] = []
    if args.preset:
        presets = available_presets(registry_of_args(args))
        for name in args.preset:
            if name not in presets:
                raise CompareArgumentError(
                    f"unknown preset {name!r}: choose from {', '.join(repr(n) for n in presets)}"
                )
            columns.append((name, presets[name]))
    for text in args.sets:
        columns.append((text, parse_set(text, registry_of_args(args))))
    if not columns:
        raise CompareArgumentError(
            "nothing to compare: give --preset NAME or --set K=V at least once"
        )
    seed = DEFAULT_SEED if args.seed is None else args.seed
    return [(label, settings.with_changes(seed=seed)) for label, settings in columns]


def column_text(pieces: list[str], diverge_at: int | None) -> Text:
    """A column's reply as literal text, the first diverging token highlighted."""
    text = Text()
    for index, piece in enumerate(pieces):
        if index == diverge_at:
            text.append("▶", style="bold red")
            text.append(piece or "∅", style="reverse")
        else:
            text.append(piece)
    if diverge_at is not None and diverge_at >= len(pieces):
        text.append("▶(ends)", style="bold red")
    return text


def run(args: argparse.Namespace) -> int:
    """Generate every column and print them."""

    if args.list_presets:
        for name, settings in available_presets(registry_of_args(args)).items():
            print(f"{name:<34} {settings_summary(settings)}")
        return 0
    if args.prompt is None:
        raise CompareArgumentError("no PROMPT given (or use --list-presets)")
    columns = columns_from_args(args)
    messages = build_messages(args.prompt, args.system)
    # A guided column decodes its negative prompt beside it: one more sequence each.
    guided = sum(Guidance.is_on(settings) for _, settings in columns)
    switches = template_switches(args)
    backend = load_backend(args, n_seq_max=len(columns) + guided if guided else None)
    backend.template.switches = switches
    from backend.session.compare import compare  # only now: it loads llama.cpp

    pieces: list[list[str]] = [[] for _ in columns]
    steps: list[list[Step]] = [[] for _ in columns]
    finished: list[FinishedEvent | None] = [None for _ in columns]
    try:
        for item in compare(
            backend,
            messages,
            [s for _, s in columns],
            max_tokens=args.max_tokens,
            raw=args.raw,
            sequential=args.sequential,
        ):
            event = item.event
            if isinstance(event, TokenEvent):
                pieces[item.column].append(event.text)
                steps[item.column].append(event.step)
                if args.verbose >= 2:
                    log(f"column {item.column} " + step_line(event.index, event.step, event.piece))
            elif isinstance(event, NoticeEvent):
                log(event.message)
            elif isinstance(event, FinishedEvent):
                finished[item.column] = event
                if args.verbose >= 1:
                    log(
                        f"column {item.column} finished: {event.reason},"
                        f" {event.stats.decode_tokens} tokens,"
                        f" {event.stats.prefilled_tokens} prefilled"
                    )
    finally:
        backend.close()
    invariant = backend.info.batch_invariant
    results = [f for f in finished if f is not None]
    if len(results) != len(columns):
        raise SamplescopeError("the comparison stopped early")
    base = results[0].token_ids
    diverge = [
        None if i == 0 else first_divergence(base, r.token_ids) for i, r in enumerate(results)
    ]
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "label": label,
                        "settings": settings.to_json(),
                        "text": result.text,
                        "token_ids": list(result.token_ids),
                        "finish_reason": result.reason,
                        "loop": loop_json(result.token_ids),
                        "error": result.error,
                        "first_divergence": at,
                        "stats": asdict(result.stats),
                        "score": reply_score_json(column_steps),
                        "lockstep": lockstep_json(result, invariant),
                        **sections_json(column_steps, column_pieces, result.text),
                    }
                    for (label, settings), result, at, column_steps, column_pieces in zip(
                        columns, results, diverge, steps, pieces, strict=True
                    )
                ],
                ensure_ascii=False,
            )
        )
    else:
        scores = [score_label(reply_score(column_steps)) for column_steps in steps]
        note = lockstep_note(results, invariant)
        if note:
            print(note)
        print_columns(columns, pieces, results, diverge, scores)
    return 1 if any(r.reason == "error" for r in results) else 0


def loop_json(token_ids: Sequence[int]) -> dict[str, int | str] | None:
    """The first repetition loop that formed in a column's reply, for --json (None:
    none; `sampling.analysis.loops.first_loop` with the default rule)."""
    loop = first_loop(token_ids)
    return None if loop is None else loop.to_dict()


def lockstep_json(result: FinishedEvent, invariant: bool | None) -> dict[str, object] | None:
    """How a column was decoded beside the others (None: alone, in turn): its memory
    layout, and whether it is exact (the tokens `generate` gives it alone)."""
    decoding = result.decoding
    if decoding is None:
        return None
    exact = invariant is True and decoding.streams and not decoding.repack
    kv = "streams" if decoding.streams else "unified"
    return {"kv": kv, "repack": decoding.repack, "exact": exact}


def lockstep_note(results: list[FinishedEvent], invariant: bool | None) -> str:
    """The header's line when the columns were decoded in lockstep on weights repacked
    (`--repack`) or a model whose load found lockstep not exact ("" otherwise)."""
    lockstep = [r.decoding for r in results if r.decoding is not None]
    if not lockstep or (invariant is not False and not lockstep[0].repack):
        return ""
    why = "weights repacked (--repack)" if lockstep[0].repack else "this model and build"
    if invariant is not False:
        return f"note: decoded in lockstep on {why}; the load's self-check found it exact"
    return (
        f"note: decoded in lockstep on {why}: a sequence beside others does not get "
        "exactly its logits alone (the load's self-check), so a column can differ from "
        "`generate` with its settings; `replay` rebuilds it in lockstep"
    )


def print_columns(
    columns: list[tuple[str, SamplerSettings]],
    pieces: list[list[str]],
    results: list[FinishedEvent],
    diverge: list[int | None],
    scores: list[str] | None = None,
) -> None:
    """Side by side when each column gets MIN_COLUMN_WIDTH characters, else stacked;
    `scores` (each column's score label) go under each title."""
    width = shutil.get_terminal_size((100, 24)).columns
    console = Console(file=sys.stdout, width=width, highlight=False, markup=False, emoji=False)
    titles = []
    labels = scores if scores is not None else ["" for _ in columns]
    for index, ((label, settings), result, at, score) in enumerate(
        zip(columns, results, diverge, labels, strict=True)
    ):
        where = (
            "reference"
            if index == 0
            else ("same tokens" if at is None else f"differs at token {at + 1}")
        )
        error = f" ({result.error})" if result.error else ""
        loop = first_loop(result.token_ids)
        looped = "" if loop is None else f", loop {loop.period}×{loop.count}"
        titles.append(
            Text(
                f"{label}\n{settings_summary(settings)} seed={settings.seed}\n"
                f"{where}; {result.reason}{error}, {len(result.token_ids)} tokens{looped}"
                + (f"\n{score}" if score else "")
            )
        )
    bodies = [column_text(p, at) for p, at in zip(pieces, diverge, strict=True)]
    if width // len(columns) >= MIN_COLUMN_WIDTH:
        table = Table(show_lines=False, expand=True)
        for title in titles:
            table.add_column(title, ratio=1, overflow="fold")
        table.add_row(*bodies)
        console.print(table)
    else:
        for title, body in zip(titles, bodies, strict=True):
            console.print(title)
            console.print(Panel(body))
