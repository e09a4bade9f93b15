"""`samplescope whatif CHAT_ID [--reply N] --at POS [flags] [--json]`: a past step
recomputed under other settings, without generating.

The step's logits are rebuilt through the replay path (the same cache, prefill and
decodes as the generation), so with the step's own settings (the default) the
probabilities are the stored ones.
"""

from __future__ import annotations

import argparse
import json
import sys

from sampling.records import Step
from sampling.settings.registry import Registry
from sampling.settings.summary import settings_summary
from tui.cli.saved_reply import (
    add_step_flags,
    find_target,
    load_for,
    piece_text,
    with_text_bias,
)
from tui.cli.store_access import open_store

GROUP = "chats"


def register(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser], registry: Registry
) -> None:
    """Add `whatif` to the command line."""
    parser = subparsers.add_parser(
        "whatif",
        help="recompute a past step of a saved reply under other settings",
        description="Rebuild exactly what the sampler saw at token POS of a saved reply and "
        "show that step's candidates under the given settings (default: the step's own): "
        "probability before and after the filters, how many are kept, which sampler cut.",
    )
    add_step_flags(parser, registry)
    parser.set_defaults(func=run)


def step_json(
    step: Step, stored: int, uniform: float | None, pieces: list[str]
) -> dict[str, object]:
    """The `--json` object: the stored choice, the step's uniform (`u`; null when it drew
    none: greedy, Gumbel, a forced token), the token that uniform draws under the given
    settings (`drawn`; without one, the first of a fresh stream's), the candidates."""
    table = step.table
    return {
        "token_id": stored,
        "drawn": step.token_id,
        "u": uniform,
        "candidates": [
            {
                "token_id": int(table.token_ids[i]),
                "text": pieces[i],
                "before": float(table.prob_before[i]),
                "after": float(table.prob_after[i]),
                "removed_by": table.removed_by[i],
            }
            for i in range(int(table.token_ids.shape[0]))
        ],
        "n_kept": step.n_kept,
        "cut_by": str(step.cut_by),
        "temperature": step.temperature,
        "reports": {unit: dict(figures) for unit, figures in step.reports.items()},
    }


def run(args: argparse.Namespace) -> int:
    """Recompute and print the step."""
    from backend.session.steer import recompute  # loads the model's runtime: not for `-h`

    with open_store(args) as store:
        target = find_target(store, args)
        own = store.load_steps(target.chat, target.reply).get(target.index)
    backend = load_for(target, args)
    try:
        target = with_text_bias(target, args, backend)
        uniform = None if own is None else own.draw
        recorded = None if own is None else own.reports
        step, notices = recompute(
            backend, target.chat, target.reply, target.index, target.settings, uniform, recorded
        )
        pieces = [piece_text(backend, int(t)) for t in step.table.token_ids]
        stored = target.reply.token_ids[target.index]
        chosen = piece_text(backend, stored)
        drawn = piece_text(backend, step.token_id)
    finally:
        backend.close()
    for notice in notices:
        print(f"note: {notice}", file=sys.stderr)
    if args.json:
        print(json.dumps(step_json(step, stored, uniform, pieces), ensure_ascii=False))
        return 0
    print(
        f"reply {target.reply.number} token {args.at}: stored {stored} {chosen!r}; "
        f"{settings_summary(target.settings)}: {step.n_kept} kept, cut by {step.cut_by}, "
        f"draws {step.token_id} {drawn!r}"
        + ("" if uniform is None else f" (the step's u {uniform:.4f})")
    )
    for rank, (token, text) in enumerate(zip(step.table.token_ids, pieces, strict=True), 1):
        mark = "*" if int(token) == stored else " "
        print(
            f"{mark}{rank:3d} {int(token):6d} {text!r:20} "
            f"{step.table.prob_before[rank - 1]:8.4f} → {step.table.prob_after[rank - 1]:.4f}"
            f"  {step.table.removed_by[rank - 1]}".rstrip()
        )
    return 0
