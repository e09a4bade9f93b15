"""`samplescope branch CHAT_ID [--reply N] --at POS (--rank R | --token ID | --resample)`:
a new branch of a saved reply from one of its tokens, generated and stored.

Deterministic: the branch's random stream starts from its seed at the fork, so the
same command on the same chat gives the same tokens.
"""

from __future__ import annotations

import argparse
import json
import sys

from sampling.settings.registry import Registry
from tui.cli.saved_reply import add_step_flags, find_target, load_for, with_text_bias
from tui.cli.store_access import open_store

GROUP = "chats"


def register(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser], registry: Registry
) -> None:
    """Add `branch` to the command line."""
    parser = subparsers.add_parser(
        "branch",
        help="branch a saved reply from one of its tokens",
        description="Keep a saved reply's tokens before POS, take another token at POS (the "
        "R-th candidate as `whatif` lists them, a given token id, or a fresh draw) and "
        "continue sampling with the given settings (default: the step's own). The branch is "
        "stored next to the reply; the chat follows it when the reply is its last turn.",
    )
    add_step_flags(parser, registry)
    choice = parser.add_mutually_exclusive_group(required=True)
    choice.add_argument("--rank", type=int, metavar="R", help="the R-th candidate, from 1")
    choice.add_argument("--token", type=int, metavar="ID", help="this token id")
    choice.add_argument("--resample", action="store_true", help="draw the token again")
    parser.add_argument(
        "--max-tokens",
        type=int,
        default=None,
        metavar="N",
        help="the most tokens the branch may have, those kept counted (default: the reply's"
        " own limit)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Generate, store and print the branch."""
    from backend.session.steer import (  # not for -h
        Choice,
        SteerError,
        make_branch,
        pick_token,
        recompute,
    )

    kind: Choice = (
        "rank" if args.rank is not None else "token" if args.token is not None else ("resample")
    )
    value = args.rank if kind == "rank" else args.token
    with open_store(args) as store:
        target = find_target(store, args)
        if args.max_tokens is not None and args.max_tokens <= target.index:
            raise SteerError(
                f"invalid --max-tokens {args.max_tokens}: the branch keeps {target.index}"
                f" tokens before POS {args.at}, so it needs more than {target.index}"
            )
        backend = load_for(target, args)
        try:
            target = with_text_bias(target, args, backend)
            force: int | None = None
            if kind == "rank":
                step, _ = recompute(
                    backend, target.chat, target.reply, target.index, target.settings
                )
                force = pick_token(step, kind, value)
            elif kind == "token":
                force = value
            result = make_branch(
                backend,
                store,
                target.chat,
                target.reply,
                target.index,
                target.settings,
                force,
                args.max_tokens,
            )
        finally:
            backend.close()
    for notice in result.notices:
        print(f"note: {notice}", file=sys.stderr)
    if args.json:
        print(
            json.dumps(
                {
                    "token_ids": list(result.reply.token_ids),
                    "branch": result.reply.id,
                    "parent": result.parent.id,
                    "at": result.at + 1,
                    "text": result.reply.text,
                    "finish_reason": result.reply.finish_reason,
                },
                ensure_ascii=False,
            )
        )
    else:
        print(result.reply.text)
        print(
            f"branch {result.reply.id} of reply {result.reply.number} from token {result.at + 1} "
            f"of branch {result.parent.id} ({len(result.reply.token_ids)} tokens, "
            f"{result.reply.finish_reason})",
            file=sys.stderr,
        )
    return 0
