"""`samplescope history`: list saved chats."""

from __future__ import annotations

import argparse

from backend.store.store import ChatSummary
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
        "model and title. Use the id with `replay` and `export`.",
    )
    parser.add_argument(
        "--search",
        metavar="TEXT",
        default=None,
        help="only chats whose title or messages contain TEXT",
    )
    add_db_flag(parser)
    parser.set_defaults(func=run)


def format_table(chats: list[ChatSummary]) -> str:
    """The chat list as aligned columns."""
    rows = [("ID", "UPDATED", "REPLIES", "MODEL", "TITLE")]
    rows += [
        (str(c.id), local_time(c.updated), str(c.reply_count), c.model_name or "-", c.title)
        for c in chats
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = []
    for row in rows:
        head = "  ".join(
            cell.rjust(w) if i in (0, 2) else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(row[:4], widths, strict=True))
        )
        lines.append(f"{head}  {' '.join(row[4].split())}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Print the chat list."""
    with open_store(args) as store:
        chats = store.list_chats(args.search)
        if not chats:
            what = f"matching {args.search!r} " if args.search else ""
            print(f"no saved chats {what}in {store.path}")
            return 0
        print(format_table(chats))
    return 0
