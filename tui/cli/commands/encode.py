"""`samplescope encode TEXT`: the token ids of a text and the visible piece of each."""

from __future__ import annotations

import argparse

from backend.llama.gguf import validate_gguf
from backend.llama.pieces import CR_GLYPH, NEWLINE_GLYPH, SPACE_GLYPH, TAB_GLYPH, visible_bytes
from backend.llama.ui_tokenizer import UiTokenizer
from sampling.settings.registry import Registry
from tui.cli.options.model import chosen_model_path
from tui.cli.options.sampler_registry import registry_of_args
from tui.cli.text_input import read_stdin

GLYPH_HELP = (
    f"Pieces are shown with a space as {SPACE_GLYPH}, a newline as {NEWLINE_GLYPH}, a tab as "
    f"{TAB_GLYPH}, a carriage return as {CR_GLYPH}, other control characters as their "
    "Control Pictures glyph, other invisible characters as ⟨U+XXXX⟩ and bytes that are "
    "only part of a character (a piece of an emoji) as ⟨0xNN⟩."
)


GROUP = "model"


def register(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser], registry: Registry
) -> None:
    """Add `encode` to the command line."""
    parser = subparsers.add_parser(
        "encode",
        help="show the token ids and pieces of a text",
        description=(
            "Tokenize TEXT with the model's own vocabulary (the ids llama.cpp uses, no BOS) "
            "and print each token's id and visible piece, then the ids and their count. "
            + GLYPH_HELP.replace("%", "%%")
        ),
    )
    parser.add_argument("text", metavar="TEXT", help="the text; - reads it from stdin")
    parser.add_argument("--model", help="a GGUF file (default: $SAMPLESCOPE_MODEL or SmolLM2)")
    parser.add_argument(
        "--special",
        action="store_true",
        help="recognize special-token text such as <|im_end|> (off: it is plain text)",
    )
    parser.set_defaults(func=run)


def encode_lines(tokenizer: UiTokenizer, text: str, *, special: bool) -> list[str]:
    """The lines `samplescope encode` prints."""
    ids = tokenizer.encode(text, special=special)
    width = max(len(str(tokenizer.vocab_size - 1)), 2)
    lines = [f"{'#':>4}  {'id':>{width}}  piece"]
    for position, token_id in enumerate(ids):
        lines.append(
            f"{position:>4}  {token_id:>{width}}  {visible_bytes(tokenizer.piece_bytes(token_id))}"
        )
    lines.append("ids: " + " ".join(map(str, ids)))
    lines.append(f"{len(ids)} token{'' if len(ids) == 1 else 's'}")
    return lines


def run(args: argparse.Namespace) -> int:
    """Print the tokens of the text."""
    text = read_stdin() if args.text == "-" else args.text
    tokenizer = UiTokenizer.from_gguf(
        validate_gguf(chosen_model_path(args.model, registry_of_args(args)))
    )
    print("\n".join(encode_lines(tokenizer, text, special=args.special)))
    return 0
