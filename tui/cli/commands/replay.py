"""`samplescope replay CHAT_ID [--reply N]`: regenerate a saved reply, compare tokens.

Exit status: 0 when the regenerated tokens are identical to the stored ones, 1 when
they differ (the first differing index is printed), 2 on an error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from backend.store.lookup import pick_reply
from backend.store.store import ReplyRecord
from sampling.settings.registry import Registry
from tui.cli.options.model import add_rpc_flag
from tui.cli.saved_reply import load_saved, recorded_adapters, recorded_model
from tui.cli.store_access import add_db_flag, open_store

if TYPE_CHECKING:
    from backend.session.replay import ReplayResult

GROUP = "chats"


def register(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser], registry: Registry
) -> None:
    """Add `replay` to the command line."""
    parser = subparsers.add_parser(
        "replay",
        help="regenerate a saved reply and check it is token-identical",
        description="Reload the model a saved reply used (with its control vectors and "
        "contrast model), rebuild the conversation up to that reply, regenerate it with "
        "the recorded seed and the settings recorded at each token, and compare the token "
        "ids. Exit 0 if identical, 1 if not.",
    )
    parser.add_argument("chat_id", type=int, metavar="CHAT_ID", help="the chat's id")
    parser.add_argument(
        "--reply",
        type=int,
        default=None,
        metavar="N",
        help="which reply of the chat, from 1 (default: the last)",
    )
    parser.add_argument(
        "--model",
        default=None,
        metavar="PATH",
        help="use this GGUF instead of the recorded path (e.g. a moved copy)",
    )
    parser.add_argument(
        "--contrast-model",
        default=None,
        metavar="PATH",
        help="use this GGUF as the contrast model instead of the recorded path",
    )
    parser.add_argument("--threads", type=int, default=None, help="llama.cpp threads")
    add_rpc_flag(parser)
    parser.add_argument("--text", action="store_true", help="print the regenerated text")
    add_db_flag(parser)
    parser.set_defaults(func=run)


def describe(result: ReplayResult, reply: ReplyRecord, piece: Callable[[int], str]) -> str:
    """One or two lines saying whether the replay matched."""
    n = len(result.stored)
    head = f"reply {reply.number} ({n} stored tokens, {reply.finish_reason})"
    if result.identical:
        return f"{head}: token-identical"
    index = result.first_difference
    assert index is not None
    stored = result.stored[index] if index < n else None
    again = result.replayed[index] if index < len(result.replayed) else None

    def show(token: int | None) -> str:
        return "(nothing)" if token is None else f"{token} {piece(token)!r}"

    return (
        f"{head}: DIFFERS at token {index}: stored {show(stored)}, replayed {show(again)} "
        f"({len(result.replayed)} tokens replayed, {result.finish_reason})"
    )


def run(args: argparse.Namespace) -> int:
    """Replay and compare."""
    from backend.session.replay import (  # only now: it loads llama.cpp
        forced_path,
        replay,
    )

    with open_store(args) as store:
        chat = store.load_chat(args.chat_id)
        reply = pick_reply(chat, args.reply)
        path = recorded_model(store, reply, args.model)
        adapters = recorded_adapters(store, reply, args.contrast_model, contrast=True)
        forced = forced_path(reply, store.load_steps(chat, reply))
    # The same context and prefill chunking as the original (both can change tokens),
    # its control vectors and its contrast model.
    backend = load_saved(path, reply, adapters, args)
    try:
        result = replay(backend, chat, reply, forced=forced)

        def show_piece(token: int) -> str:
            return backend.runtime.token_bytes(token, special=True).decode("utf-8", "replace")

        verdict = describe(result, reply, show_piece)  # before close: it reads the vocab
    finally:
        backend.close()
    for notice in result.notices:
        print(f"note: {notice}", file=sys.stderr)
    if args.text:
        print(result.text)
    print(f"chat {chat.id} {chat.title!r}, {verdict}")
    return 0 if result.identical else 1
