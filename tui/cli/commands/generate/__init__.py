"""`samplescope generate`: one reply, streamed to stdout (or one JSON object)."""

from __future__ import annotations

import argparse
import sys

from backend.chat.protocol import LiveSettings
from backend.config.setting_sources import sources_line
from backend.store.recorded import recorded
from backend.store.records import StoreError
from sampling.analysis.reply_score import reply_score
from sampling.settings.registry import Registry
from tui.cli.commands.generate.ban_flags import add_ban_flags
from tui.cli.commands.generate.beams import add_beam_flags, run_beams
from tui.cli.commands.generate.build import build_run
from tui.cli.commands.generate.loop_flags import add_loop_flags
from tui.cli.commands.generate.output import (
    log_figures,
    log_loop_stop,
    log_open_thinking,
    prompt_text,
    reply_json,
    report_texts,
)
from tui.cli.commands.generate.prompt import read_prompt
from tui.cli.commands.generate.stream import ReplyPrinter
from tui.cli.options.model import add_model_flags
from tui.cli.options.output import add_json_flag
from tui.cli.options.prompt import add_mode_flags, add_system_flag
from tui.cli.options.settings import add_settings_flags
from tui.cli.options.template_flags import add_show_prompt_flag, add_template_flags
from tui.cli.store_access import add_db_flag, recorder_for
from tui.cli.verbose import log
from tui.score_label import section_score_line

GROUP = "sample"


def register(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser], registry: Registry
) -> None:
    """Add `generate` to the command line."""
    parser = subparsers.add_parser(
        "generate",
        help="generate one reply to a prompt, headless",
        description=(
            "Generate the model's reply to PROMPT with our samplers and stream it to stdout. "
            "Settings start from llama.cpp's defaults (t=0.8 k=40 p=0.95 min_p=0.05 seed=42)."
        ),
    )
    parser.add_argument("prompt", metavar="PROMPT", help="the user's message; - reads stdin")
    add_system_flag(parser)
    parser.add_argument(
        "--max-tokens", type=int, default=256, help="stop after this many tokens (default 256)"
    )
    add_mode_flags(parser, raw=True)
    add_template_flags(parser)
    add_show_prompt_flag(parser)
    parser.add_argument(
        "--preset",
        default=None,
        metavar="NAME",
        help="start from a preset (`compare --list-presets` lists them) instead of llama.cpp's"
        " defaults; the flags go on top, and the seed is --seed's (default 42), as in compare",
    )
    add_json_flag(
        parser,
        "print one JSON object instead of streaming text (a thinking model's thinking in"
        ' "thinking", its answer in "text", and its "sections")',
    )
    parser.add_argument(
        "--hide-thinking",
        action="store_true",
        help="write a thinking model's thinking to stderr, the answer alone to stdout"
        " (else the thinking comes first on stdout, dimmed on a terminal)",
    )
    parser.add_argument(
        "--save",
        action="store_true",
        help="store the exchange as a saved chat (its id is printed; `chat_id` with --json)",
    )
    add_db_flag(parser)
    add_settings_flags(parser, registry)
    add_ban_flags(parser)
    add_loop_flags(parser)
    add_beam_flags(parser)
    add_model_flags(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Generate and print the reply; the exit code is 1 if the generation failed."""
    prompt = read_prompt(args)
    generation = build_run(args, prompt)
    if args.verbose >= 1:
        log(f"settings: {sources_line(generation.settings, generation.sources)}")
        switches = generation.backend.template.switches.described()
        if switches and generation.mode == "chat":
            log(f"chat template switches: {switches}")
    if args.show_prompt and not args.json:
        log("prompt:\n" + prompt_text(generation))
    if args.beams is not None:
        return run_beams(
            args,
            generation.backend,
            generation.messages,
            generation.settings,
            generation.mode,
            generation.bans,
        )
    recorder = recorder_for(args, generation.backend) if args.save else None
    printer = ReplyPrinter(
        generation.bans,
        stream=not args.json,
        verbose=args.verbose,
        hide_thinking=args.hide_thinking,
    )
    try:
        if recorder is not None:
            recorder.begin_reply(
                generation.messages, generation.settings, args.max_tokens, generation.mode
            )
        events = generation.backend.generate(
            generation.messages,
            LiveSettings(generation.settings),
            max_tokens=args.max_tokens,
            raw=generation.mode == "completion",
            bans=generation.bans or None,
            loops=generation.loops or None,
        )
        reply = printer.read(recorded(events, recorder))
        texts = report_texts(generation, reply.steps) if args.json else {}
    finally:
        generation.backend.close()
        if recorder is not None:
            recorder.store.close()
    finished = reply.finished
    assert finished is not None  # generate always ends with one
    if recorder is not None and recorder.error:
        raise StoreError(recorder.error)
    chat_id = None if recorder is None else recorder.chat_id
    if args.json:
        ghost_ids = [] if recorder is None else recorder.ghost_ids
        print(
            reply_json(
                generation,
                reply,
                finished,
                chat_id,
                ghost_ids,
                texts,
                show_prompt=args.show_prompt,
            )
        )
    else:
        printer.finish(finished.text)
        log_open_thinking(reply)
        if chat_id is not None:
            log(f"saved as chat {chat_id}")
        log_loop_stop(finished)
    if args.verbose >= 1:
        log_figures(finished)
        if sections := section_score_line(reply_score(reply.steps)):
            log(sections)
    if finished.reason == "error":
        print(f"samplescope: {finished.error}", file=sys.stderr)
        return 1
    return 0
