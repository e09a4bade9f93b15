"""The phrase ban flags: `--ban TEXT` (repeatable) and how the phrases are matched.

They go on top of the config file's [bans] table: any `--ban` replaces its phrases,
`--ban-ignore-case` / `--ban-regex` (and their `--no-` forms) and `--ban-tries`
replace what it says.
"""

from __future__ import annotations

import argparse

from backend.session.phrase_bans import DEFAULT_TRIES, PhraseBans
from sampling.settings.registry import Registry


def add_ban_flags(parser: argparse.ArgumentParser) -> None:
    """Add the phrase ban flags to a command's parser (all default to unset)."""
    group = parser.add_argument_group(
        "phrase bans",
        "A reply never holds a banned phrase: when one appears the reply goes back to "
        "the token where it began, bans that token there and samples again (each "
        "rejected attempt is kept as a ghost branch when the reply is saved).",
    )
    group.add_argument(
        "--ban",
        dest="ban",
        action="append",
        default=None,
        metavar="TEXT",
        help="a phrase the reply may not hold (repeat for more; replaces the config's)",
    )
    group.add_argument(
        "--ban-ignore-case",
        dest="ban_ignore_case",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="match the banned phrases regardless of case",
    )
    group.add_argument(
        "--ban-regex",
        dest="ban_regex",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="each banned phrase is a Python regular expression (searched in the text so far)",
    )
    group.add_argument(
        "--ban-tries",
        dest="ban_tries",
        type=int,
        default=None,
        metavar="N",
        help=f"stop the reply after N tokens banned at one place (default {DEFAULT_TRIES})",
    )


def bans_from_args(args: argparse.Namespace, base: PhraseBans) -> PhraseBans:
    """The phrase bans the flags ask for, on top of `base` (the config's).

    Raises:
        PhraseBanError: A phrase is empty or not a usable regular expression.
    """
    phrases: list[str] | None = getattr(args, "ban", None)
    ignore_case: bool | None = getattr(args, "ban_ignore_case", None)
    regex: bool | None = getattr(args, "ban_regex", None)
    tries: int | None = getattr(args, "ban_tries", None)
    return PhraseBans(
        base.phrases if phrases is None else tuple(phrases),
        ignore_case=base.ignore_case if ignore_case is None else ignore_case,
        regex=base.regex if regex is None else regex,
        tries=base.tries if tries is None else tries,
    )


def config_bans(registry: Registry) -> PhraseBans:
    """The user's config file's [bans] (none when the file is broken: the commands
    that load a model report that)."""
    from backend.config.config import load_config_or_default

    config, _problem = load_config_or_default(registry=registry)
    return config.bans
