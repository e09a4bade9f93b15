"""`samplescope export CHAT_ID --format md|json|jsonl|csv`: a saved chat as Markdown or
JSON, or its per-token records as JSON Lines or CSV (one row per sampled token)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path

from backend.store.store import ChatRecord, MessageRecord, ReplyRecord
from backend.store.token_table import chat_token_rows
from sampling.errors import SamplescopeError
from tui.cli.store_access import add_db_flag, open_store
from tui.cli.token_export import rows_csv, rows_jsonl, vocabulary_text
from tui.cli.tree import tree_json
from tui.display import local_time

EXPORT_VERSION = 3


class ExportError(SamplescopeError):
    """The export file cannot be written."""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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


def _reply_json(reply: ReplyRecord) -> dict[str, object]:
    return {
        "number": reply.number,
        "model": asdict(reply.model),
        "seed": reply.seed,
        "rng": reply.rng,
        "max_tokens": reply.max_tokens,
        "n_ctx": reply.n_ctx,
        "n_batch": reply.n_batch,
        "finish_reason": reply.finish_reason,
        "error": reply.error,
        "stats": None if reply.stats is None else asdict(reply.stats),
        "token_ids": list(reply.token_ids),
        "settings_changes": [
            {"from_index": c.from_index, "settings": c.settings.to_dict()}
            for c in reply.settings_changes
        ],
        "created": reply.created.isoformat(),
        "finished": None if reply.finished is None else reply.finished.isoformat(),
        "branch_id": reply.id,
        "parent": reply.parent_id,
        "at": None if reply.fork_at is None else reply.fork_at + 1,
        "mode": reply.mode,
        "text": reply.text,
    }


def _message_json(message: MessageRecord) -> dict[str, object]:
    return {
        "id": message.id,
        "position": message.position,
        "role": message.role,
        "content": message.content,
        "created": message.created.isoformat(),
        "after_reply_id": message.after_reply_id,
        "reply": None if message.reply is None else _reply_json(message.reply),
        "branches": [_reply_json(branch) for branch in message.branches],
    }


def chat_to_json(chat: ChatRecord) -> dict[str, object]:
    """Everything stored about a chat, as JSON-ready data.

    "messages" holds the turns on screen; "hidden_messages" the stored turns off
    screen (continuations of branches the chat no longer follows). Each turn's
    "after_reply_id" and each branch's "parent" rebuild the whole tree.
    """
    return {
        "samplescope_export": EXPORT_VERSION,
        "id": chat.id,
        "title": chat.title,
        "created": chat.created.isoformat(),
        "updated": chat.updated.isoformat(),
        "model": None if chat.model is None else asdict(chat.model),
        "messages": [_message_json(message) for message in chat.messages],
        "hidden_messages": [_message_json(message) for message in chat.hidden],
        "tree": tree_json(chat),
    }


def _settings_text(values: Mapping[str, object]) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items())


def _reply_md(reply: ReplyRecord) -> list[str]:
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
    ]
    previous = first.to_dict()
    for change in reply.settings_changes[1:]:
        now = change.settings.to_dict()
        diff = {k: v for k, v in now.items() if previous.get(k) != v}
        lines.append(f"> from token {change.from_index}: {_settings_text(diff)}")
        previous = now
    if reply.stats is not None and reply.stats.decode_tokens:
        lines.append(
            f"> {reply.stats.decode_tps:.1f} tok/s, prompt {reply.stats.prompt_tokens} tokens"
        )
    if reply.error:
        lines.append(f"> error: {reply.error}")
    return lines


def chat_to_markdown(chat: ChatRecord) -> str:
    """The conversation as Markdown, with each reply's sampling record under it."""
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
            lines += [f"{line}  " for line in _reply_md(message.reply)] + [""]
    return "\n".join(lines).rstrip("\n") + "\n"


def run(args: argparse.Namespace) -> int:
    """Write the export."""
    with open_store(args) as store:
        chat = store.load_chat(args.chat_id)
        rows = (
            chat_token_rows(store, chat, vocabulary_text())
            if args.format in ("jsonl", "csv")
            else []
        )
    if args.format == "jsonl":
        text = rows_jsonl(rows)
    elif args.format == "csv":
        text = rows_csv(rows)
    elif args.format == "json":
        text = json.dumps(chat_to_json(chat), indent=2, ensure_ascii=False) + "\n"
    else:
        text = chat_to_markdown(chat)
    if args.output is None:
        sys.stdout.write(text)
    else:
        try:
            args.output.write_text(text, encoding="utf-8")
        except OSError as error:
            raise ExportError(f"cannot write {args.output}: {error}") from error
        print(f"wrote {args.output}", file=sys.stderr)
    return 0
