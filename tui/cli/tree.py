"""`samplescope tree CHAT_ID [--json]`: the branches of a saved chat's replies."""

from __future__ import annotations

import argparse
import json

from backend.store.store import ChatRecord
from tui.cli.store_access import add_db_flag, open_store


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `tree` to the command line."""
    parser = subparsers.add_parser(
        "tree",
        help="list the branches of a saved chat's replies",
        description="Each reply of a saved chat is a tree of branches: the first reply, and "
        "branches forking from a token of another (`samplescope branch`). Lists every branch: "
        "its id, reply, parent, fork position (from 1), tokens and finish reason; * marks "
        "the branch the conversation follows.",
    )
    parser.add_argument("chat_id", type=int, metavar="CHAT_ID", help="the chat's id")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_db_flag(parser)
    parser.set_defaults(func=run)


def tree_json(chat: ChatRecord) -> list[dict[str, object]]:
    """Every branch of the chat, reply by reply, oldest first."""
    rows: list[dict[str, object]] = []
    for message in chat.messages:
        for branch in message.branches:
            rows.append(
                {
                    "id": branch.id,
                    "reply": branch.number,
                    "parent": branch.parent_id,
                    "at": None if branch.fork_at is None else branch.fork_at + 1,
                    "tokens": len(branch.token_ids),
                    "finish_reason": branch.finish_reason,
                    "mode": branch.mode,
                    "shown": message.reply is not None and message.reply.id == branch.id,
                }
            )
    return rows


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
        mark = "*" if row["shown"] else " "
        print(
            f"{mark} reply {row['reply']} branch {row['id']}: {fork}, {row['tokens']} tokens, "
            f"{row['finish_reason']}"
        )
    return 0
