"""The sampler settings flags, the same on every command."""

from __future__ import annotations

import argparse
from typing import Any

from sampling.settings import SamplerSettings

# flag -> (short flag or None, SamplerSettings field, argparse type, help)
_FLAGS: tuple[tuple[str, str | None, str, Any, str], ...] = (
    ("--temperature", "-t", "temperature", float, "temperature; 0 is greedy"),
    ("--top-k", "-k", "top_k", int, "keep the k most probable tokens; 0 is off"),
    ("--top-p", "-p", "top_p", float, "nucleus: keep the mass p; 1 is off"),
    ("--min-p", None, "min_p", float, "keep p >= min_p * p_max; 0 is off"),
    ("--repeat-penalty", None, "repeat_penalty", float, "repeat penalty; 1 is off"),
    ("--repeat-last-n", None, "repeat_last_n", int, "tokens the penalties see; 0 is off"),
    ("--frequency-penalty", None, "frequency_penalty", float, "subtract count * f"),
    ("--presence-penalty", None, "presence_penalty", float, "subtract it once if seen"),
    ("--seed", "-s", "seed", int, "random seed, 0 .. 2**64-1"),
)


def add_settings_flags(parser: argparse.ArgumentParser) -> None:
    """Add the sampler settings flags to a command's parser (all default to unset)."""
    group = parser.add_argument_group("sampling")
    for long, short, dest, kind, help_text in _FLAGS:
        names = [long] if short is None else [long, short]
        group.add_argument(*names, dest=dest, type=kind, default=None, help=help_text)
    group.add_argument(
        "--top-p-scope",
        dest="top_p_scope",
        choices=("kept", "vocab"),
        default=None,
        help="measure p after top-k renormalises, or on the vocabulary",
    )
    group.add_argument(
        "--temperature-last",
        dest="temperature_last",
        action="store_const",
        const=True,
        default=None,
        help="apply temperature after the filters",
    )
    group.add_argument(
        "--draw",
        dest="draw",
        choices=("inverse_cdf", "gumbel"),
        default=None,
        help="how a token is drawn",
    )
    group.add_argument(
        "--rng",
        dest="rng",
        choices=("pcg64", "xorshift128"),
        default=None,
        help="random generator (xorshift128 reproduces run.c)",
    )


def settings_from_args(args: argparse.Namespace, base: SamplerSettings) -> SamplerSettings:
    """The settings the flags ask for, on top of `base`.

    Raises:
        SettingsError: A flag's value is out of range (the message names it).
    """
    changes = {
        dest: getattr(args, dest)
        for dest in (
            *(flag[2] for flag in _FLAGS),
            "top_p_scope",
            "temperature_last",
            "draw",
            "rng",
        )
        if getattr(args, dest, None) is not None
    }
    return base.with_changes(**changes)
