"""`samplescope kld TEXT_FILE --model TEST (--base BASE | --base-logits FILE)`: how far
a model's distributions are from a base's on a text, as `llama-perplexity
--kl-divergence` measures it, with every token's figures."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from backend.llama.repack_probe import Weights
from backend.llama.vocab_match import check_same_vocabulary
from backend.score.base_file import BaseFileReader, BaseFileWriter, check_save_target
from backend.score.kld import (
    KLD_BATCH,
    KLD_CTX,
    FileBase,
    KldError,
    KldPlan,
    ModelBase,
    bos_of,
    load_scorer,
    plan_from_file,
    plan_kld,
    run_kld,
    text_tokens,
)
from backend.score.kld_pair import token_texts
from backend.score.kld_sections import divergence_by_section
from backend.score.text_sections import text_sections, thinking_tracker
from sampling.analysis.divergence import DivergenceTotals, summarize
from sampling.analysis.fork import first_difference
from sampling.settings.registry import Registry
from tui.cli.commands.kld.report import (
    CHUNK_HEADER,
    chunk_line,
    kld_json,
    section_lines,
    summary_lines,
)
from tui.cli.options.model import (
    add_model_flags,
    chosen_model_path,
    chosen_rpc,
    chosen_weights,
    model_or_hf,
)
from tui.cli.options.output import add_json_flag
from tui.cli.options.sampler_registry import registry_of_args
from tui.cli.options.thinking_tags import add_thinking_tags_flag
from tui.cli.text_input import read_text
from tui.cli.verbose import log

if TYPE_CHECKING:
    from backend.session.llama_backend import LlamaBackend

#: llama-perplexity's default context (tokens a chunk).
DEFAULT_CTX = KLD_CTX
#: llama-perplexity's default micro-batch: a chunk of 512 is decoded in one.
DEFAULT_BATCH = KLD_BATCH


GROUP = "model"


def register(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser], registry: Registry
) -> None:
    """Add `kld` to the command line."""
    parser = subparsers.add_parser(
        "kld",
        help="KL divergence of a model from a base model on a text, as llama-perplexity"
        " --kl-divergence, token by token",
        description=(
            "Compare the model (--model, the test) with a base (--base BASE.gguf, or "
            "--base-logits FILE written by llama-perplexity --kl-divergence-base or by "
            "--save-base) on a text, as llama-perplexity --kl-divergence does: chunks of "
            "--ctx tokens each decoded from BOS, the second half of each chunk scored, the "
            "base's log-probabilities kept 16 nats under the top. A text under two contexts "
            "is scored on every position in one pass instead (the output says which rule). "
            "Prints llama-perplexity's block of statistics with its uncertainties; --json "
            "adds every scored token's KLD (both ways), Δp and top tokens. The weights are "
            "repacked for llama.cpp's CPU kernels, as llama-perplexity loads them, where "
            "those kernels run here (--no-repack: plain); the output says which ran."
        ),
    )
    parser.add_argument("file", metavar="TEXT_FILE", help="a UTF-8 text file; - reads stdin")
    base = parser.add_mutually_exclusive_group(required=True)
    base.add_argument("--base", default=None, help="the base model: a GGUF file or a model name")
    base.add_argument(
        "--base-logits",
        default=None,
        metavar="FILE",
        help="the base's log-probabilities from llama-perplexity --kl-divergence-base FILE"
        " (or --save-base); its chunks and context are used",
    )
    parser.add_argument(
        "--save-base",
        default=None,
        metavar="FILE",
        help="also write the base model's log-probabilities in llama-perplexity's"
        " --kl-divergence-base format (a new file: never the text or a model, and an"
        " existing file only with --force)",
    )
    parser.add_argument(
        "--force", action="store_true", help="let --save-base replace an existing file"
    )
    add_thinking_tags_flag(parser)
    add_json_flag(parser)
    add_model_flags(parser, ctx=DEFAULT_CTX, one_sequence=True)
    for action in parser._actions:
        if action.dest == "ctx":
            action.help = (
                f"tokens a chunk (default {DEFAULT_CTX}, as llama-perplexity; with"
                " --base-logits, the file's)"
            )
        elif action.dest == "batch":
            action.help = f"tokens decoded at once (default {DEFAULT_BATCH})"
    parser.set_defaults(func=run, ctx=None, batch=DEFAULT_BATCH)


def _load(path: Path, args: argparse.Namespace, n_ctx: int, weights: Weights) -> LlamaBackend:
    """A model for scoring chunks of `n_ctx` with the flags' threads, layers and log."""
    return load_scorer(
        path,
        n_ctx,
        n_batch=args.batch,
        n_threads=args.threads,
        n_gpu_layers=args.gpu_layers,
        log_path=args.log,
        rpc=chosen_rpc(args.rpc, registry_of_args(args)),
        repack=weights.repack,
    )


def weights_line(weights: dict[str, Weights]) -> str:
    """Which kernels ran for each model, e.g. "test repacked, base repacked
    (llama-perplexity's default; --no-repack: plain)"."""
    reasons = {choice.reason for choice in weights.values()}
    if len(reasons) == 1:
        kernels = ", ".join(f"{role} {choice.kernels}" for role, choice in weights.items())
        return f"{kernels} ({reasons.pop()})"
    return ", ".join(f"{role} {choice.describe()}" for role, choice in weights.items())


def _check_args(args: argparse.Namespace) -> None:
    if args.ctx is not None and args.ctx < 4:
        raise KldError(f"invalid --ctx {args.ctx}: expected at least 4 tokens a chunk")
    if args.batch < 1:
        raise KldError(f"invalid --batch {args.batch}: expected at least 1")
    if args.save_base is not None and args.base is None:
        raise KldError("--save-base writes the base model's log-probabilities: give --base")


def _file_plan(
    reader: BaseFileReader, test: LlamaBackend, tokens: list[int], args: argparse.Namespace
) -> KldPlan:
    """The plan of a base file, checked against the test model and the text."""
    layout = reader.layout
    name = args.base_logits
    if layout.n_vocab != test.runtime.n_vocab:
        raise KldError(
            f"{name} was written with a vocabulary of {layout.n_vocab} tokens; the model has"
            f" {test.runtime.n_vocab}"
        )
    if args.ctx is not None and args.ctx != layout.n_ctx:
        raise KldError(f"{name} holds chunks of {layout.n_ctx} tokens, not --ctx {args.ctx}")
    at = first_difference(tokens[: len(layout.tokens)], layout.tokens)
    if at is not None:
        raise KldError(
            f"{name} holds other tokens than {args.file} under this model (first difference"
            f" at token {at}): it was written for another text or tokenizer"
        )
    return plan_from_file(layout, bos_of(test.runtime))


def run(args: argparse.Namespace) -> int:
    """Compare the two models (or the model and the file) and print the statistics."""
    _check_args(args)
    text = read_text(args.file)
    if not text:
        raise KldError("the text is empty: there is nothing to score")
    test_path = chosen_model_path(
        model_or_hf(args.model, getattr(args, "hf", None)), registry_of_args(args)
    )
    base_path = None if args.base is None else chosen_model_path(args.base, registry_of_args(args))
    if args.save_base is not None and base_path is not None:
        inputs = [test_path, base_path]
        if args.file != "-":
            inputs.append(Path(args.file))
        check_save_target(Path(args.save_base), inputs, force=args.force)
    reader = BaseFileReader(Path(args.base_logits)) if args.base_logits else None
    backends: list[LlamaBackend] = []
    writer: BaseFileWriter | None = None
    try:
        n_ctx = reader.layout.n_ctx if reader else (args.ctx or DEFAULT_CTX)
        weights = {"test": chosen_weights(args, test_path)}
        test = _load(test_path, args, n_ctx, weights["test"])
        backends.append(test)
        tokens = text_tokens(test.runtime, text)
        if reader is not None:
            plan = _file_plan(reader, test, tokens, args)
        else:
            plan = plan_kld(tokens, n_ctx, bos_of(test.runtime))
            if plan.n_ctx > test.runtime.n_ctx:  # a short text longer than one context
                test.close()
                backends.remove(test)
                test = _load(test_path, args, plan.n_ctx, weights["test"])
                backends.append(test)
        if plan.n_ctx > test.runtime.n_ctx:
            raise KldError(
                f"a chunk of {plan.n_ctx} tokens is more than this model's context"
                f" ({test.runtime.n_ctx})"
            )
        if reader is not None:
            base_rows: FileBase | ModelBase = FileBase(reader)
            base_name = args.base_logits
        else:
            assert base_path is not None  # --base or --base-logits is required
            weights["base"] = chosen_weights(args, base_path)
            base = _load(base_path, args, plan.n_ctx, weights["base"])
            backends.append(base)
            check_same_vocabulary(test.runtime, base.runtime, ("the model", "the base"))
            if args.save_base is not None:
                if plan.every_position:
                    raise KldError(
                        f"--save-base needs llama-perplexity's rule: the text is"
                        f" {len(tokens)} tokens, under two contexts of {n_ctx}"
                    )
                writer = BaseFileWriter(
                    Path(args.save_base), plan.layout(test.runtime.n_vocab), force=args.force
                )
            base_rows = ModelBase(base, plan, writer)
            base_name = str(base_path)
        verbose = args.verbose >= 1
        if verbose:
            log(f"{test_path} against {base_name}: {plan.describe()}")
            print(CHUNK_HEADER, file=sys.stderr)
        started = time.perf_counter()

        def on_chunk(index: int, totals: DivergenceTotals) -> None:
            if verbose and totals.count >= 2:
                print(chunk_line(index, totals), file=sys.stderr, flush=True)

        result = run_kld(test, base_rows, plan, on_chunk)
        elapsed = time.perf_counter() - started
        texts = token_texts(test.runtime, plan.tokens)
        tracker = thinking_tracker(test.runtime, args.thinking_tags)
        pieces = (test.runtime.token_bytes(token) for token in plan.tokens)
        sections = text_sections(tracker, text, pieces)
    finally:
        if writer is not None:
            writer.close()
        if reader is not None:
            reader.close()
        for backend in backends:
            backend.close()
    summary = summarize(result.totals)
    by_section = divergence_by_section(result, sections)
    if args.json:
        kernels = {role: choice.kernels for role, choice in weights.items()}
        values = kld_json(result, summary, texts, sections, by_section)
        print(json.dumps({**values, "weights": kernels}, ensure_ascii=False))
        return 0
    print(f"rule: {plan.describe()}")
    print(f"test: {test_path}")
    print(f"base: {base_name}")
    print(f"weights: {weights_line(weights)}")
    print(f"{summary.count} positions in {elapsed:.2f} s ({summary.count / elapsed:.1f} tokens/s)")
    print()
    print("\n".join(summary_lines(summary) + section_lines(by_section)))
    return 0
