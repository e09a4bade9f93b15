"""`samplescope generate`: one reply, streamed to stdout (or one JSON object)."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

from backend.chat.completion import MODES, as_document, mode_for_backend
from backend.chat.events import (
    FinishedEvent,
    NoticeEvent,
    PhaseEvent,
    PrefillProgress,
    RewindEvent,
    TokenEvent,
)
from backend.chat.protocol import LiveSettings
from backend.store.recorded import recorded
from backend.store.records import StoreError
from sampling.records import Step
from sampling.settings import DEFAULT_CHAT_SETTINGS
from tui.cli.ban_flags import add_ban_flags, bans_from_args, config_bans
from tui.cli.beams import add_beam_flags, run_beams
from tui.cli.held_back_text import HeldBackText
from tui.cli.loop_flags import add_loop_flags, config_loops, loops_from_args
from tui.cli.model_flags import add_model_flags, load_backend
from tui.cli.prompt_messages import build_messages
from tui.cli.reply_score_json import reply_score_json
from tui.cli.settings_flags import (
    add_settings_flags,
    bias_needs_tokenizer,
    settings_from_args,
    settings_with_user_config,
)
from tui.cli.store_access import add_db_flag, recorder_for
from tui.cli.text_input import read_stdin
from tui.cli.verbose import log, step_line


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    parser.add_argument("--system", default=None, help="a system prompt")
    parser.add_argument(
        "--max-tokens", type=int, default=256, help="stop after this many tokens (default 256)"
    )
    parser.add_argument(
        "--mode",
        choices=MODES,
        default=None,
        help="chat: PROMPT is a user turn in the chat template; completion: PROMPT is plain "
        "text the model continues (default: completion for a model with no chat template "
        "and no known turn tokens, else chat)",
    )
    parser.add_argument("--raw", action="store_true", help="the same as --mode completion")
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object instead of streaming text"
    )
    parser.add_argument(
        "--save",
        action="store_true",
        help="store the exchange as a saved chat (its id is printed; `chat_id` with --json)",
    )
    add_db_flag(parser)
    add_settings_flags(parser)
    add_ban_flags(parser)
    add_loop_flags(parser)
    add_beam_flags(parser)
    add_model_flags(parser)
    parser.set_defaults(func=run)


def guidance_json(steps: list[Step]) -> dict[str, object]:
    """For --json of a guided or contrasted reply: each step's report of each (both
    distributions' top tokens, the combination's, what it raised and lowered); nothing
    without them."""
    shown: dict[str, object] = {}
    for key in ("guidance", "contrast"):
        reports = [getattr(step, key) for step in steps]
        if any(report is not None for report in reports):
            shown[key] = [None if report is None else report.to_json() for report in reports]
    return shown


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


def loop_note(finished: FinishedEvent) -> str:
    """The finish line's words on the reply's loop ("" when none was found)."""
    loop = finished.loop
    if loop is None:
        return ""
    return f" loop of {loop.period} tokens × {loop.count} from token {loop.start},"


def run(args: argparse.Namespace) -> int:
    """Generate and print the reply; the exit code is 1 if the generation failed."""
    base = settings_with_user_config(DEFAULT_CHAT_SETTINGS)
    prompt = read_stdin() if args.prompt == "-" else args.prompt
    bans = bans_from_args(args, config_bans())
    loops = loops_from_args(args, config_loops())
    if bias_needs_tokenizer(args):  # --logit-bias names a token by its text
        backend = load_backend(args)
        try:
            settings = settings_from_args(
                args, base, lambda text: backend.runtime.tokenize(text, special=False)
            )
        except Exception:
            backend.close()
            raise
    else:
        settings = settings_from_args(args, base)
        backend = load_backend(args)
    messages = build_messages(prompt, args.system)
    mode, notice = mode_for_backend(backend, "completion" if args.raw else args.mode)
    if notice:
        log(notice)
    if mode == "completion":
        messages = as_document(messages)
    if args.beams is not None:
        return run_beams(args, backend, messages, settings, mode, bans)
    verbose: int = args.verbose
    finished: FinishedEvent | None = None
    recorder = recorder_for(args, backend) if args.save else None
    steps: list[Step] = []
    ghosts: list[RewindEvent] = []
    # With phrase bans, text a rewind may still take back is held.
    stream = not args.json
    held = HeldBackText(bans) if bans else None
    try:
        if recorder is not None:
            recorder.begin_reply(messages, settings, args.max_tokens, mode)
        events = backend.generate(
            messages,
            LiveSettings(settings),
            max_tokens=args.max_tokens,
            raw=mode == "completion",
            bans=bans or None,
            loops=loops or None,
        )
        for event in recorded(events, recorder):
            if isinstance(event, TokenEvent):
                steps.append(event.step)
                text = event.text if held is None else held.token(event)
                if stream and text:
                    sys.stdout.write(text)
                    sys.stdout.flush()
                if verbose >= 2:
                    log(step_line(event.index, event.step, event.piece))
            elif isinstance(event, RewindEvent):
                ghosts.append(event)
                del steps[event.index :]
                if held is not None:
                    held.rewind(event)
                if verbose >= 1:
                    log(
                        f"rejected {len(event.token_ids)} tokens at token {event.index}"
                        f" ({event.matched!r} is banned): {event.text!r}"
                    )
            elif isinstance(event, NoticeEvent):
                log(event.message)
            elif isinstance(event, PhaseEvent):
                if verbose >= 1:
                    log(f"phase {event.phase}")
            elif isinstance(event, PrefillProgress):
                if verbose >= 1:
                    log(f"prefill {event.done}/{event.total}")
            elif isinstance(event, FinishedEvent):
                finished = event
    finally:
        backend.close()
        if recorder is not None:
            recorder.store.close()
    assert finished is not None  # generate always ends with one
    if recorder is not None and recorder.error:
        raise StoreError(recorder.error)
    chat_id = None if recorder is None else recorder.chat_id
    if chat_id is not None and not args.json:
        log(f"saved as chat {chat_id}")
    if args.json:
        print(
            json.dumps(
                {
                    **({} if chat_id is None else {"chat_id": chat_id}),
                    "mode": mode,
                    "text": finished.text,
                    "token_ids": list(finished.token_ids),
                    "settings": settings.to_json(),
                    "seed": settings.seed,
                    "finish_reason": finished.reason,
                    "loop": None if finished.loop is None else finished.loop.to_dict(),
                    "error": finished.error,
                    "stats": asdict(finished.stats),
                    "score": reply_score_json(steps),
                    "ghosts": ghosts_json(ghosts, [] if recorder is None else recorder.ghost_ids),
                    "model": backend.info.path,
                    **guidance_json(steps),
                },
                ensure_ascii=False,
            )
        )
    else:
        if held is not None:
            sys.stdout.write(held.rest(finished.text))
        if finished.text and not finished.text.endswith("\n"):
            sys.stdout.write("\n")
    if finished.reason == "loop" and finished.loop is not None and not args.json:
        log(f"stopped on a{loop_note(finished).rstrip(',')}")
    if verbose >= 1:
        s = finished.stats
        log(
            f"finished: {finished.reason}; prompt {s.prompt_tokens} tokens"
            f" ({s.prefilled_tokens} prefilled in {s.prefill_ms:.0f} ms),"
            f" ttft {s.ttft_ms:.0f} ms, {s.decode_tokens} tokens at {s.decode_tps:.1f} tok/s,"
            f" {s.discarded_tokens} discarded,"
            f"{loop_note(finished)}"
            f" sampler {s.sampler_us / 1000:.1f} ms"
        )
    if finished.reason == "error":
        print(f"samplescope: {finished.error}", file=sys.stderr)
        return 1
    return 0
