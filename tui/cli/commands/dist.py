"""`samplescope dist`: exact probabilities next to observed frequencies (no model)."""

from __future__ import annotations

import argparse

from sampling import SamplerSettings, modes, probabilities
from sampling.errors import SamplescopeError
from sampling.experiments import draw_counts
from sampling.settings.registry import Registry
from tui.cli.options.sampler_registry import registry_of_args
from tui.cli.options.settings import add_settings_flags, settings_from_args

SEED000_LOGITS = (2.0, 1.5, 1.0, 0.5, 0.0, -1.0)

# Seed 000's `dist` table, row by row, as candle's modes.
SEED000_TABLE: tuple[tuple[str, SamplerSettings], ...] = (
    ("All t=1", modes.candle_all(1.0)),
    ("All t=0.5", modes.candle_all(0.5)),
    ("TopK k=2", modes.candle_top_k(2, 1.0)),
    ("TopP p=0.7", modes.candle_top_p(0.7, 1.0)),
    ("TopP p=0.8", modes.candle_top_p(0.8, 1.0)),
    ("TopKThenTopP k=3 p=0.6", modes.candle_top_k_then_top_p(3, 0.6, 1.0)),
    ("TopKThenTopP k=3 p=0.75", modes.candle_top_k_then_top_p(3, 0.75, 1.0)),
    ("TopKThenTopP k=3 p=0.9", modes.candle_top_k_then_top_p(3, 0.9, 1.0)),
)


class LogitsArgumentError(SamplescopeError):
    """--logits is not a comma-separated list of numbers."""


GROUP = "sample"


def register(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser], registry: Registry
) -> None:
    """Add `dist` to the command line."""
    parser = subparsers.add_parser(
        "dist",
        help="exact probabilities and observed frequencies for fixed logits",
        description=(
            "Draw many tokens from one fixed set of logits and print, per token, the exact "
            "probability the sampler uses and the observed frequency. With --table, seed "
            "000's whole table (candle's modes, 200000 draws each)."
        ),
    )
    parser.add_argument(
        "--logits",
        default=",".join(str(v) for v in SEED000_LOGITS),
        help="comma-separated logits (default: seed 000's 2,1.5,1,0.5,0,-1)",
    )
    parser.add_argument(
        "--draws", type=int, default=200_000, help=f"draws, at most {MAX_DRAWS} (default 200000)"
    )
    parser.add_argument(
        "--table", action="store_true", help="print seed 000's table (candle's modes)"
    )
    add_settings_flags(parser, registry)
    parser.set_defaults(func=run)


def parse_logits(text: str) -> list[float]:
    """Parse "2,1.5,-1" into floats, with a clear error."""
    try:
        values = [float(part) for part in text.split(",") if part.strip()]
    except ValueError as error:
        raise LogitsArgumentError(
            f"--logits must be comma-separated numbers, got {text!r}"
        ) from error
    if not values:
        raise LogitsArgumentError("--logits is empty: give at least one number")
    return values


MAX_DRAWS = 10_000_000
"""The most draws `dist` takes: their uniforms alone fill 80 MB."""


def _row(values: list[float]) -> str:
    return "[" + ", ".join(f'"{value:.4f}"' for value in values) + "]"


def run(args: argparse.Namespace) -> int:
    """Print the distribution(s)."""
    logits = parse_logits(args.logits)
    if not 1 <= args.draws <= MAX_DRAWS:
        raise LogitsArgumentError(
            f"--draws must be a positive number up to {MAX_DRAWS}, got {args.draws}"
        )
    if args.table:
        base = settings_from_args(args, SamplerSettings(registry_of_args(args)))
        rows = [(label, settings.with_changes(seed=base.seed)) for label, settings in SEED000_TABLE]
        print(f"{'softmax':<24} {_row(list(probabilities(logits, SamplerSettings())))}")
        for label, settings in rows:
            counts = draw_counts(logits, settings, args.draws)
            print(f"{label:<24} {_row(list(counts / args.draws))}")
        return 0
    settings = settings_from_args(args, SamplerSettings(registry_of_args(args)))
    exact = probabilities(logits, settings)
    counts = draw_counts(logits, settings, args.draws)
    print(f"settings: {settings}")
    print(f"{args.draws} draws, seed {settings.seed}")
    print(f"{'token':>5} {'logit':>9} {'exact':>9} {'observed':>9} {'diff':>9}")
    for token_id, logit in enumerate(logits):
        observed = counts[token_id] / args.draws
        print(
            f"{token_id:>5} {logit:>9.4f} {exact[token_id]:>9.4f} {observed:>9.4f} "
            f"{observed - exact[token_id]:>+9.4f}"
        )
    return 0
