"""`samplescope history`: list saved chats; a kept sweep as one line standing for its
samples' chats (their ids, their count), as the app's saved chats list it."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from backend.store.store import ChatSummary, HistoryEntry, SweepSummary
from sampling.settings.registry import Registry
from tui.cli.store_access import add_db_flag, open_store
from tui.display import local_time

GROUP = "chats"


def register(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser], registry: Registry
) -> None:
    """Add `history` to the command line."""
    parser = subparsers.add_parser(
        "history",
        help="list saved chats",
        description="List saved chats, most recently updated first: id, date, replies, "
        "model and title; a kept sweep is one line, its samples' chat ids and count. Use an "
        "id with `replay` and `export`.",
    )
    parser.add_argument(
        "--search",
        metavar="TEXT",
        default=None,
        help="only chats whose title or messages contain TEXT",
    )
    add_db_flag(parser)
    parser.set_defaults(func=run)


def format_table(entries: Sequence[HistoryEntry], samples: dict[int, list[int]]) -> str:
    """The list as aligned columns: a chat a line, a sweep a line (`samples`: each sweep's
    samples' chat ids listed)."""
    rows: list[tuple[str, str, str, str, str]] = [("ID", "UPDATED", "REPLIES", "MODEL", "TITLE")]
    for entry in entries:
        if isinstance(entry, SweepSummary):
            ids = samples.get(entry.id, [])
            shown, replies = id_runs(ids), f"{len(ids)} sample{'s' if len(ids) != 1 else ''}"
        else:
            shown, replies = str(entry.id), str(entry.reply_count)
        updated, model = local_time(entry.updated), entry.model_name or "-"
        rows.append((shown, updated, replies, model, entry.title))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = []
    for row in rows:
        head = "  ".join(
            cell.rjust(w) if i in (0, 2) else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(row[:4], widths, strict=True))
        )
        lines.append(f"{head}  {' '.join(row[4].split())}")
    return "\n".join(lines)


def id_runs(ids: Sequence[int]) -> str:
    """Chat ids as runs, "5-8,12" (a sweep's samples are saved one after another)."""
    runs: list[str] = []
    ordered = sorted(ids)
    start = 0
    for i in range(1, len(ordered) + 1):
        if i == len(ordered) or ordered[i] != ordered[i - 1] + 1:
            first, last = ordered[start], ordered[i - 1]
            runs.append(str(first) if first == last else f"{first}-{last}")
            start = i
    return ",".join(runs)


def sweep_samples(chats: Sequence[ChatSummary]) -> dict[int, list[int]]:
    """Each sweep's samples among `chats`: their chat ids."""
    samples: dict[int, list[int]] = {}
    for chat in chats:
        if chat.sweep_id is not None:
            samples.setdefault(chat.sweep_id, []).append(chat.id)
    return samples


def run(args: argparse.Namespace) -> int:
    """Print the chat list."""
    with open_store(args) as store:
        chats = store.list_chats(args.search)
        if not chats:
            what = f"matching {args.search!r} " if args.search else ""
            print(f"no saved chats {what}in {store.path}")
            return 0
        entries = store.list_history(args.search)
        print(format_table(entries, sweep_samples(chats)))
    return 0
