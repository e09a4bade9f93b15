"""`samplescope score FILE|-`: how likely a text is to the model, token by token."""

from __future__ import annotations

import argparse
import json
from typing import Any

from backend.llama.pieces import visible_piece
from backend.score.text_score import TOP_ALTERNATIVES, ScoreError, TextScore, score_text
from backend.score.text_sections import thinking_tracker
from sampling.analysis.section_sums import SectionSum
from sampling.analysis.token_scores import perplexity
from sampling.sections import spans_of
from sampling.settings.registry import Registry
from tui.cli.options.model import (
    add_model_flags,
    chosen_model_path,
    chosen_weights,
    load_backend,
    model_or_hf,
)
from tui.cli.options.output import add_json_flag
from tui.cli.options.sampler_registry import registry_of_args
from tui.cli.options.thinking_tags import add_thinking_tags_flag
from tui.cli.text_input import read_text

GROUP = "model"


def register(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser], registry: Registry
) -> None:
    """Add `score` to the command line."""
    parser = subparsers.add_parser(
        "score",
        help="score a text: each token's log-probability, rank, entropy; the perplexity",
        description=(
            "Score a text under the model's raw distribution (temperature 1, no filter): "
            "each token's log-probability, rank (1: the most probable), the entropy of the "
            "distribution it came from, the most probable alternatives, and the text's "
            "perplexity. The text is decoded in one batched pass with logits for every "
            "position (as llama-perplexity does), plain text: no chat template, no special "
            "markers. A text longer than the context needs --stride: it is then scored in "
            "windows of --window tokens advancing by --stride, each token after the first "
            "window with at least window - stride tokens before it. The weights are "
            "repacked for llama.cpp's CPU kernels, as llama-perplexity loads them, where "
            "those kernels run here (--no-repack: plain); the output says which ran. A text"
            " with thinking tags (the model's chat template's, or --thinking-tags) also has"
            " the thinking's and the answer's figures apart."
        ),
    )
    parser.add_argument("file", metavar="FILE", help="a UTF-8 text file; - reads stdin")
    parser.add_argument(
        "--window", type=int, default=None, help="tokens per window (default: the context size)"
    )
    parser.add_argument(
        "--stride",
        type=int,
        default=None,
        help="score a long text in windows advancing by this many tokens (default: the "
        "text must fit in one window)",
    )
    parser.add_argument(
        "--top",
        type=int,
        default=TOP_ALTERNATIVES,
        help=f"alternatives per token (default {TOP_ALTERNATIVES})",
    )
    add_thinking_tags_flag(parser)
    add_json_flag(parser)
    add_model_flags(parser, ctx=4096, one_sequence=True)
    parser.set_defaults(func=run)


def section_figures(part: SectionSum) -> dict[str, Any]:
    """A section's figures for --json: its scored tokens, log-probability, per token and
    perplexity (null for no scored token)."""
    return {
        "n_tokens": part.count,
        "logprob": part.total,
        "logprob_per_token": part.mean,
        "perplexity": perplexity(part.total, part.count) if part.count else None,
    }


def score_json(score: TextScore) -> dict[str, Any]:
    """The `--json` object: a text that thinks adds each token's section, the sections'
    spans (kind, first and last token) and the thinking's and the answer's figures."""
    sections = score.sections
    values: dict[str, Any] = {
        "tokens": [
            {
                "token_id": token.token_id,
                "text": token.text,
                "logprob": token.logprob,
                "rank": token.rank,
                "entropy": token.entropy,
                "top": [
                    {"token_id": alt.token_id, "text": alt.text, "logprob": alt.logprob}
                    for alt in token.top
                ],
                **({"section": str(sections[index])} if sections else {}),
            }
            for index, token in enumerate(score.tokens)
        ],
        "perplexity": score.perplexity,
        "logprob": score.logprob,
        "n_tokens": score.n_tokens,
        "window": score.window,
        "stride": score.stride,
        "bos": score.bos,
    }
    if sections:
        values["sections"] = [
            {"kind": str(span.kind), "first": span.first, "last": span.last}
            for span in spans_of(sections)
        ]
        values.update((str(part.kind), section_figures(part)) for part in score.section_logprobs())
    return values


def section_lines(score: TextScore) -> list[str]:
    """The thinking's and the answer's figures, one line each (none for a text that
    does not think)."""
    lines = []
    for part in score.section_logprobs():
        if part.mean is None:
            lines.append(f"{part.kind}: no token scored")
            continue
        lines.append(
            f"{part.kind}: {part.count} tokens scored, logprob {part.total:.4f}"
            f" ({part.mean:.4f}/token), perplexity {perplexity(part.total, part.count):.4f}"
        )
    return lines


def score_lines(score: TextScore) -> list[str]:
    """The table `samplescope score` prints."""
    lines = [f"{'#':>5}  {'id':>6}  {'logprob':>9}  {'rank':>6}  {'entropy':>7}  token → top"]
    for index, token in enumerate(score.tokens):
        shown = visible_piece(token.text)
        if token.logprob is None:
            lines.append(f"{index:>5}  {token.token_id:>6}  {'—':>9}  {'—':>6}  {'—':>7}  {shown}")
            continue
        alternatives = " ".join(
            f"{visible_piece(alt.text)}({alt.logprob:.2f})" for alt in token.top
        )
        lines.append(
            f"{index:>5}  {token.token_id:>6}  {token.logprob:>9.4f}  {token.rank:>6}"
            f"  {token.entropy:>7.3f}  {shown} → {alternatives}"
        )
    windows = (
        f"windows of {score.window} tokens, stride {score.stride}" if score.stride else "one window"
    )
    lines.append(
        f"{score.n_tokens} tokens scored ({windows}{', BOS first' if score.bos else ''}):"
        f" logprob {score.logprob:.4f}, perplexity {score.perplexity:.4f}"
    )
    return lines + section_lines(score)


def run(args: argparse.Namespace) -> int:
    """Score the text and print the table or the JSON object."""
    text = read_text(args.file)
    if args.top < 0:
        raise ScoreError(f"invalid --top {args.top}: expected 0 or more")
    if not text:
        raise ScoreError("the text is empty: there is nothing to score")
    path = chosen_model_path(
        model_or_hf(args.model, getattr(args, "hf", None)), registry_of_args(args)
    )
    weights = chosen_weights(args, path)
    backend = load_backend(args, n_seq_max=1, repack=weights.repack, path=path)
    try:
        tracker = thinking_tracker(backend.runtime, args.thinking_tags)
        score = score_text(
            backend, text, window=args.window, stride=args.stride, top_n=args.top, tracker=tracker
        )
    finally:
        backend.close()
    if args.json:
        print(json.dumps({**score_json(score), "weights": weights.kernels}, ensure_ascii=False))
    else:
        print("\n".join(score_lines(score)))
        print(f"weights: {weights.describe()}")
    return 0
