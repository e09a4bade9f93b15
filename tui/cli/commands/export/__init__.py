"""`samplescope export CHAT_ID --format md|json|jsonl|csv`: a saved chat as Markdown or
JSON, or its per-token records as JSON Lines or CSV (one row per sampled token)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path

from backend.store.store import (
    ChatRecord,
    ChatStore,
    MessageRecord,
    ReplyRecord,
    SettingsChange,
)
from backend.store.token_table import TokenRow, chat_token_rows
from sampling.analysis.reply_score import ReplyScore, reply_score
from sampling.errors import SamplescopeError
from sampling.settings.registry import Registry
from tui.cli.chat_tree import tree_json
from tui.cli.commands.export.tokens import rows_csv, rows_jsonl, vocabulary_text
from tui.cli.reply_score_json import reply_score_object
from tui.cli.store_access import add_db_flag, open_store
from tui.display import local_time
from tui.score_label import score_label

EXPORT_VERSION = 3


class ExportError(SamplescopeError):
    """The export file cannot be written."""


GROUP = "chats"


def register(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser], registry: Registry
) -> None:
    """Add `export` to the command line."""
    parser = subparsers.add_parser(
        "export",
        help="export a saved chat as Markdown or JSON, or its tokens as JSON Lines or CSV",
        description="Write a saved chat (see `samplescope history`) as Markdown (the "
        "conversation on screen, with each reply's model, seed and settings) or JSON "
        "(everything stored: every turn and reply branch, including turns off screen "
        "under a branch the chat no longer follows, token ids, settings changes, stats), or "
        "one row per sampled token of every branch (jsonl, csv: probability, raw "
        "log-probability, rank, entropy, tokens kept, the sampler that cut, the top "
        "candidates; in CSV the candidates are a JSON string). A notebook reads them "
        "with pandas.read_json(FILE, lines=True) or pandas.read_csv(FILE).",
    )
    parser.add_argument("chat_id", type=int, metavar="CHAT_ID", help="the chat's id")
    parser.add_argument(
        "--format", choices=("md", "json", "jsonl", "csv"), default="md", help="default md"
    )
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        default=None,
        metavar="FILE",
        help="write to FILE instead of standard output",
    )
    add_db_flag(parser)
    parser.set_defaults(func=run)


Scores = Mapping[int, ReplyScore | None]
"""Each branch's score by its id (from its stored steps)."""


def _reply_json(reply: ReplyRecord, scores: Scores) -> dict[str, object]:
    problem = {} if reply.replay_problem is None else {"cannot_run_again": reply.replay_problem}
    return problem | {
        "number": reply.number,
        "model": asdict(reply.model),
        "seed": reply.seed,
        "rng": reply.rng,
        "max_tokens": reply.max_tokens,
        "n_ctx": reply.n_ctx,
        "n_batch": reply.n_batch,
        "finish_reason": reply.finish_reason,
        "loop": None if reply.loop is None else reply.loop.to_dict(),
        "error": reply.error,
        "stats": None if reply.stats is None else asdict(reply.stats),
        "token_ids": list(reply.token_ids),
        "settings_changes": [_change_json(c) for c in reply.settings_changes],
        "created": reply.created.isoformat(),
        "finished": None if reply.finished is None else reply.finished.isoformat(),
        "branch_id": reply.id,
        "parent": reply.parent_id,
        "at": None if reply.fork_at is None else reply.fork_at + 1,
        "mode": reply.mode,
        "text": reply.text,
        "score": reply_score_object(scores.get(reply.id)),
    }


def _message_json(message: MessageRecord, scores: Scores) -> dict[str, object]:
    return {
        "id": message.id,
        "position": message.position,
        "role": message.role,
        "content": message.content,
        "created": message.created.isoformat(),
        "after_reply_id": message.after_reply_id,
        "reply": None if message.reply is None else _reply_json(message.reply, scores),
        "branches": [_reply_json(branch, scores) for branch in message.branches],
    }


def chat_to_json(chat: ChatRecord, scores: Scores | None = None) -> dict[str, object]:
    """Everything stored about a chat, as JSON-ready data.

    "messages" holds the turns on screen; "hidden_messages" the stored turns off
    screen (continuations of branches the chat no longer follows). Each turn's
    "after_reply_id" and each branch's "parent" rebuild the whole tree. Each branch's
    "score" comes from `scores` (null when not given or it has no token records).
    """
    scores = scores or {}
    return {
        "samplescope_export": EXPORT_VERSION,
        "id": chat.id,
        "title": chat.title,
        "created": chat.created.isoformat(),
        "updated": chat.updated.isoformat(),
        "model": None if chat.model is None else asdict(chat.model),
        "messages": [_message_json(message, scores) for message in chat.messages],
        "hidden_messages": [_message_json(message, scores) for message in chat.hidden],
        "tree": tree_json(chat),
    }


def _change_json(change: SettingsChange) -> dict[str, object]:
    """A settings change; a missing sampler plug-in's values under "unknown", as stored."""
    found: dict[str, object] = {
        "from_index": change.from_index,
        "settings": change.settings.to_json(),
    }
    if change.unknown:
        found["unknown"] = {name: json.loads(value) for name, value in change.unknown}
    return found


def _unknown_md(change: SettingsChange) -> list[str]:
    if not change.unknown:
        return []
    values = ", ".join(f"{name}={value}" for name, value in change.unknown)
    return [f"> unknown (a sampler plug-in that is not loaded): {values}"]


def _settings_text(values: Mapping[str, object]) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items())


def _reply_md(reply: ReplyRecord, score: ReplyScore | None) -> list[str]:
    first = reply.settings_changes[0].settings
    lines: list[str] = []
    if reply.parent_id is not None:
        at = (reply.fork_at or 0) + 1
        lines.append(f"> branch {reply.id}, from branch {reply.parent_id} at token {at}")
    lines += [
        f"> reply {reply.number} · {reply.model.name} (sha256 {reply.model.sha256[:12]}…) · "
        f"seed {reply.seed} · {reply.rng} · {len(reply.token_ids)} tokens · "
        f"{reply.finish_reason}",
        f"> settings: {_settings_text(first.to_dict())}",
        *_unknown_md(reply.settings_changes[0]),
    ]
    previous = first.to_dict()
    for change in reply.settings_changes[1:]:
        now = change.settings.to_dict()
        diff = {k: v for k, v in now.items() if previous.get(k) != v}
        lines.append(f"> from token {change.from_index}: {_settings_text(diff)}")
        lines += _unknown_md(change)
        previous = now
    if reply.stats is not None and reply.stats.decode_tokens:
        lines.append(
            f"> {reply.stats.decode_tps:.1f} tok/s, prompt {reply.stats.prompt_tokens} tokens"
        )
    label = score_label(score)
    if label and score is not None:
        lines.append(
            f"> score: {label} (raw, nats) · mean entropy {score.mean_entropy:.2f} · "
            f"{score.low_prob_tokens} tokens below p {score.low_prob_below:g}"
        )
    if reply.error:
        lines.append(f"> error: {reply.error}")
    return lines


def chat_to_markdown(chat: ChatRecord, scores: Scores | None = None) -> str:
    """The conversation as Markdown, with each reply's sampling record (and its score,
    from `scores`) under it."""
    scores = scores or {}
    lines = [f"# {chat.title}", ""]
    meta = f"chat {chat.id} · started {local_time(chat.created)}"
    if chat.model is not None:
        meta += f" · {chat.model.name}"
    lines += [f"*{meta}*", ""]
    for message in chat.messages:
        lines += [f"## {message.role.capitalize()}", "", message.content, ""]
        if len(message.branches) > 1:
            lines += [f"*(the branch shown; the reply has {len(message.branches)} branches)*", ""]
        if message.reply is not None:
            # Trailing double spaces: a Markdown line break inside the quote.
            reply_lines = _reply_md(message.reply, scores.get(message.reply.id))
            lines += [f"{line}  " for line in reply_lines] + [""]
    return "\n".join(lines).rstrip("\n") + "\n"


def chat_scores(store: ChatStore, chat: ChatRecord) -> dict[int, ReplyScore | None]:
    """The score of every stored branch of a chat, by id, from its steps (None for a
    branch without a record of every token).

    Raises:
        StoreError: A record cannot be read.
    """
    scores: dict[int, ReplyScore | None] = {}
    for message in chat.stored_messages:
        for branch in message.branches:
            steps = store.load_steps(chat, branch)
            indices = range(len(branch.token_ids))
            complete = all(index in steps for index in indices)
            scores[branch.id] = reply_score([steps[i] for i in indices]) if complete else None
    return scores


def run(args: argparse.Namespace) -> int:
    """Write the export."""
    with open_store(args) as store:
        chat = store.load_chat(args.chat_id)
        rows: list[TokenRow] = []
        scores: dict[int, ReplyScore | None] = {}
        if args.format in ("jsonl", "csv"):
            rows = chat_token_rows(store, chat, vocabulary_text())
        else:
            scores = chat_scores(store, chat)
    if args.format == "jsonl":
        text = rows_jsonl(rows)
    elif args.format == "csv":
        text = rows_csv(rows)
    elif args.format == "json":
        text = json.dumps(chat_to_json(chat, scores), indent=2, ensure_ascii=False) + "\n"
    else:
        text = chat_to_markdown(chat, scores)
    if args.output is None:
        sys.stdout.write(text)
    else:
        try:
            args.output.write_text(text, encoding="utf-8")
        except OSError as error:
            raise ExportError(f"cannot write {args.output}: {error}") from error
        print(f"wrote {args.output}", file=sys.stderr)
    return 0
