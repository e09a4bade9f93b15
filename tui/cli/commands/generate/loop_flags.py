"""`--stop-on-loop[=MIN,MAX,COUNT]`: end a reply on a repetition loop.

Without the flag a reply is watched as the config file's [loops] says (by default
loops are found and reported, not stopped). With it the reply ends, finish reason
"loop", on the token that completes a loop: the smallest period in [MIN, MAX] whose
last copy repeats COUNT times back to back (vLLM's `repetition_detection`). MAX is at
most the context (`--ctx`) and `sampling.analysis.loops.LONGEST_PERIOD`.
"""

from __future__ import annotations

import argparse

from backend.session.loop_watch import LoopGuard
from sampling.analysis.loops import LoopRule
from sampling.errors import SamplescopeError
from sampling.settings.registry import Registry


class LoopFlagError(SamplescopeError):
    """`--stop-on-loop` was given a bad rule (the message says what is wrong)."""


def add_loop_flags(parser: argparse.ArgumentParser) -> None:
    """Add `--stop-on-loop` to a command's parser."""
    default = LoopRule()
    parser.add_argument(
        "--stop-on-loop",
        dest="stop_on_loop",
        nargs="?",
        const="",
        default=None,
        metavar="MIN,MAX,COUNT",
        help='end the reply (finish reason "loop") once its last MIN..MAX tokens repeat '
        f"COUNT times back to back (default {default.text}, or the config's [loops])",
    )


def loops_from_args(args: argparse.Namespace, base: LoopGuard) -> LoopGuard:
    """The loop watch the flags ask for, on top of `base` (the config's).

    Raises:
        LoopFlagError: The rule is not MIN,MAX,COUNT or out of range, or its longest
            period is longer than the context (`--ctx`).
    """
    text: str | None = getattr(args, "stop_on_loop", None)
    if text is None:
        return base
    try:
        rule = LoopRule.parse(text) if text.strip() else base.rule
    except ValueError as error:
        raise LoopFlagError(f"--stop-on-loop: {error}") from None
    context: int | None = getattr(args, "ctx", None)
    if context is not None and rule.max_period > context:
        raise LoopFlagError(
            f"--stop-on-loop: a period of up to {rule.max_period:,} tokens is longer than"
            f" the context (--ctx {context:,}): give MAX at most the context"
        )
    return LoopGuard("stop", rule)


def config_loops(registry: Registry) -> LoopGuard:
    """The user's config file's [loops] (the default when the file is broken: the
    commands that load a model report that)."""
    from backend.config.config import load_config_or_default

    config, _problem = load_config_or_default(registry=registry)
    return config.loops
