"""`samplescope fwd TOKEN_ID [POS]`: the top logits of one forward step (run.c's debug)."""

from __future__ import annotations

import argparse

from sampling.settings.registry import Registry
from tui.cli.options.model import add_model_flags, load_backend

GROUP = "model"


def register(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser], registry: Registry
) -> None:
    """Add `fwd` to the command line."""
    parser = subparsers.add_parser(
        "fwd",
        help="top-5 logits of one forward step of a token",
        description=(
            "Feed TOKEN_ID at position POS (default 0) into a fresh context and print the "
            "largest logits with their ids and visible pieces (run.c's `fwd` command). "
            "A lone token attends only to itself, so the logits do not depend on POS."
        ),
    )
    parser.add_argument("token", type=int, metavar="TOKEN_ID", help="the token id to feed")
    parser.add_argument("pos", type=int, nargs="?", default=0, metavar="POS", help="its position")
    parser.add_argument("--top", type=int, default=5, help="how many logits to print (default 5)")
    add_model_flags(parser, ctx=512)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the top logits."""
    backend = load_backend(args)
    try:
        ranked = backend.forward(args.token, args.pos)
        rt = backend.runtime
        fed = rt.shown_piece(args.token)
        print(f"fwd token {args.token} {fed!r} at pos {args.pos}: top {args.top} logits")
        for rank, (token_id, logit) in enumerate(ranked[: max(1, args.top)], start=1):
            print(f"{rank:>3}. {token_id:>6} {logit:>10.4f}  {rt.shown_piece(token_id)}")
    finally:
        backend.close()
    return 0
