"""`samplescope fork A B`: where two stored replies of one prompt part, and whether
it was a near-tie or a disagreement."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from backend.errors import ModelFileError
from backend.llama.pieces import visible_piece
from backend.llama.ui_tokenizer import UiTokenizer
from backend.store.fork_runs import StoredRun, check_comparable, fork_of, load_run, parse_run_ref
from sampling.analysis.fork import NEAR_TIE_MARGIN, Fork, RunAtFork
from sampling.errors import SamplescopeError
from sampling.settings.registry import Registry
from tui.cli.options.output import add_json_flag
from tui.cli.store_access import add_db_flag, open_store

#: Characters of the shared text shown before the fork.
SHARED_SHOWN = 60


GROUP = "chats"


def register(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser], registry: Registry
) -> None:
    """Add `fork` to the command line."""
    parser = subparsers.add_parser(
        "fork",
        help="where two stored replies of one prompt part: near-tie or disagreement",
        description=(
            "Two stored replies of one prompt (two branches, two compare columns saved, a "
            "reply and its replay under another model or build): the first token where "
            "they differ, each run's probability margin there between its two most "
            "probable candidates (raw: temperature 1, before any filter), the logit of "
            "the first run's token minus the second's in each run, and the verdict: a "
            "near-tie when every run's margin is under --near-tie, else a disagreement. "
            "A reply is CHAT (its last reply, the branch shown), CHAT:N (reply N), "
            "CHAT:N:BRANCH or CHAT::BRANCH (a branch id from `samplescope tree`)."
        ),
    )
    parser.add_argument("first", metavar="A", help="a stored reply: CHAT[:N[:BRANCH]]")
    parser.add_argument("second", metavar="B", help="the other reply")
    parser.add_argument(
        "--near-tie",
        type=float,
        default=NEAR_TIE_MARGIN,
        metavar="P",
        help=f"the margin (top-1 minus top-2 probability) under which a fork is a near-tie"
        f" (default {NEAR_TIE_MARGIN})",
    )
    add_json_flag(parser)
    add_db_flag(parser)
    parser.set_defaults(func=run)


def token_namer(run: StoredRun) -> Callable[[int], str | None]:
    """A token's text from the reply's model file (None for every token when the file
    is gone: ids are shown alone)."""
    try:
        tokenizer = UiTokenizer.from_gguf(Path(run.reply.model.path))
    except ModelFileError:
        return lambda token: None
    return lambda token: tokenizer.piece_bytes(token).decode("utf-8", "replace")


def _run_json(
    run: StoredRun, at: RunAtFork | None, name: Callable[[int], str | None]
) -> dict[str, Any]:
    result: dict[str, Any] = {
        "chat": run.chat.id,
        "reply": run.reply.number,
        "branch": run.reply.id,
        "model": run.reply.model.path,
        "n_tokens": len(run.reply.token_ids),
        "finish_reason": run.reply.finish_reason,
    }
    if at is None:
        return result
    gap = at.logit_gap
    result.update(
        {
            "token_id": at.token_id,
            "text": None if at.token_id is None else name(at.token_id),
            "chosen_prob": at.chosen_prob,
            "top": [
                {"token_id": t, "text": name(t), "prob": p}
                for t, p in zip(at.top_ids, at.top_probs, strict=True)
            ],
            "margin": at.margin,
            "logit_gap": None if gap is None else {"value": gap.value, "bound": gap.bound},
        }
    )
    return result


def fork_json(runs: tuple[StoredRun, StoredRun], fork: Fork) -> dict[str, Any]:
    """The `--json` object."""
    name = token_namer(runs[0])
    ats: tuple[RunAtFork | None, ...] = fork.runs or (None, None)
    return {
        "position": None if fork.index is None else fork.index + 1,
        "shared_tokens": len(runs[0].reply.token_ids) if fork.index is None else fork.index,
        "verdict": fork.verdict,
        "near_tie_below": fork.threshold,
        "runs": [_run_json(run, at, name) for run, at in zip(runs, ats, strict=True)],
    }


def _shown(name: Callable[[int], str | None], token: int | None) -> str:
    """A token as quoted text (its id when the model file is gone)."""
    if token is None:
        return "(ended)"
    text = name(token)
    return f"{visible_piece(text)!r}" if text is not None else f"#{token}"


def fork_lines(runs: tuple[StoredRun, StoredRun], fork: Fork) -> list[str]:
    """What `samplescope fork` prints."""
    lines = [f"A: {runs[0].describe()}", f"B: {runs[1].describe()}"]
    if fork.index is None:
        lines.append(f"identical: the same {len(runs[0].reply.token_ids)} tokens")
        return lines
    shared = "".join(runs[0].pieces.get(i, "") for i in range(fork.index))
    if len(shared) > SHARED_SHOWN:
        shared = "…" + shared[-SHARED_SHOWN:]
    if fork.index == 0:
        lines.append("different from the first token on")
    else:
        tokens = "token" if fork.index == 1 else "tokens"
        lines.append(f"same for {fork.index} {tokens}: {visible_piece(shared)!r}")
    name = token_namer(runs[0])
    a, b = fork.runs
    lines.append(
        f"first difference at token {fork.index + 1}:"
        f" A {_shown(name, a.token_id)}, B {_shown(name, b.token_id)}"
    )
    if fork.verdict == "ended":
        ended = "A" if a.token_id is None else "B"
        run = runs[0] if ended == "A" else runs[1]
        lines.append(f"{ended} ended there ({run.reply.finish_reason}); the other went on")
        return lines
    lines.append(f"{'':3}{'top two (raw p)':<44}{'margin':>8}  logit(A) − logit(B)")
    for label, at in (("A", a), ("B", b)):
        if at.margin is None:
            lines.append(f"{label:3}(no record of this step)")
            continue
        top = ", ".join(
            f"{_shown(name, t)} {p:.3f}" for t, p in zip(at.top_ids, at.top_probs, strict=True)
        )
        lines.append(f"{label:3}{top:<44}{at.margin:>8.3f}  {at.logit_gap}")
    if fork.verdict == "near-tie":
        lines.append(f"near-tie: each run's margin is under {fork.threshold:g}")
    elif fork.verdict == "disagreement":
        lines.append(f"disagreement: a run's margin is {fork.threshold:g} or more")
    else:
        lines.append("unknown: a step at the fork was not recorded")
    return lines


def run(args: argparse.Namespace) -> int:
    """Find the fork and print it."""
    if not 0.0 < args.near_tie <= 1.0:
        raise SamplescopeError(
            f"invalid --near-tie {args.near_tie}: expected a probability in (0, 1]"
        )
    refs = (parse_run_ref(args.first), parse_run_ref(args.second))
    with open_store(args) as store:
        runs = (load_run(store, refs[0]), load_run(store, refs[1]))
    check_comparable(*runs)
    fork = fork_of(*runs, args.near_tie)
    if args.json:
        print(json.dumps(fork_json(runs, fork), ensure_ascii=False))
    else:
        print("\n".join(fork_lines(runs, fork)))
    return 0
