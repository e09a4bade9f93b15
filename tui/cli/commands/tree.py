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
        "branches forking from a token of another (`samplescope branch`). Lists every branch "
        "of every stored turn, including turns that continue a branch of an earlier reply "
        "the chat no longer follows (not on screen): its id, reply, parent, fork position "
        "(from 1), tokens, finish reason, and the branch of the previous reply its turn "
        "continues; * marks the branches on screen, + the branch an off-screen turn follows.",
    )
    parser.add_argument("chat_id", type=int, metavar="CHAT_ID", help="the chat's id")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_db_flag(parser)
    parser.set_defaults(func=run)


def tree_json(chat: ChatRecord) -> list[dict[str, object]]:
    """Every branch of every stored turn of the chat, turn by turn, oldest first.

    "shown": the branch is on screen; "followed": its turn follows it (on screen
    or not); "turn_shown": its turn is on screen; "after_reply_id": the branch of
    the previous generated turn its turn continues.
    """
    on_screen = {message.id for message in chat.messages}
    rows: list[dict[str, object]] = []
    for message in chat.stored_messages:
        followed = None if message.reply is None else message.reply.id
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
                    "shown": message.id in on_screen and followed == branch.id,
                    "followed": followed == branch.id,
                    "turn_shown": message.id in on_screen,
                    "message_id": message.id,
                    "after_reply_id": message.after_reply_id,
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
        mark = "*" if row["shown"] else "+" if row["followed"] else " "
        after = "" if row["after_reply_id"] is None else f", after branch {row['after_reply_id']}"
        hidden = "" if row["turn_shown"] else " (not on screen)"
        print(
            f"{mark} reply {row['reply']} branch {row['id']}: {fork}, {row['tokens']} tokens, "
            f"{row['finish_reason']}{after}{hidden}"
        )
    return 0
