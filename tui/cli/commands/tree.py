"""`samplescope tree CHAT_ID [--json]`: the branches of a saved chat's replies."""

from __future__ import annotations

import argparse
import json

from sampling.settings.registry import Registry
from tui.cli.chat_tree import tree_json
from tui.cli.options.output import add_json_flag
from tui.cli.store_access import add_db_flag, open_store

GROUP = "chats"


def register(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser], registry: Registry
) -> None:
    """Add `tree` to the command line."""
    parser = subparsers.add_parser(
        "tree",
        help="list the branches of a saved chat's replies",
        description="Each reply of a saved chat is a tree of branches: the first reply, and "
        "branches forking from a token of another (`samplescope branch`). Lists every branch "
        "of every stored turn, including turns that continue a branch of an earlier reply "
        "the chat no longer follows (not on screen): its id, reply, parent, fork position "
        "(from 1), tokens, finish reason, and the branch of the previous reply its turn "
        "continues; * marks the branches on screen, + the branch an off-screen turn follows.",
    )
    parser.add_argument("chat_id", type=int, metavar="CHAT_ID", help="the chat's id")
    add_json_flag(parser)
    add_db_flag(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the tree."""
    with open_store(args) as store:
        chat = store.load_chat(args.chat_id)
    rows = tree_json(chat)
    if args.json:
        print(json.dumps({"chat_id": chat.id, "branches": rows}))
        return 0
    if not rows:
        print(f"chat {chat.id} has no generated reply")
        return 0
    print(f"chat {chat.id} {chat.title!r}")
    for row in rows:
        fork = "root" if row["parent"] is None else f"from {row['parent']} at token {row['at']}"
        mark = "*" if row["shown"] else "+" if row["followed"] else " "
        after = "" if row["after_reply_id"] is None else f", after branch {row['after_reply_id']}"
        hidden = "" if row["turn_shown"] else " (not on screen)"
        print(
            f"{mark} reply {row['reply']} branch {row['id']}: {fork}, {row['tokens']} tokens, "
            f"{row['finish_reason']}{after}{hidden}"
        )
    return 0
