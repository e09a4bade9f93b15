"""Shared bits of the commands that read or write saved chats (`history`, `export`,
`replay`, `generate --save`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from backend.config.paths import default_store_path, exposed_folder_warnings
from backend.store.recorder import ChatRecorder
from backend.store.store import ChatStore
from tui.cli.options.sampler_registry import registry_of_args

if TYPE_CHECKING:
    from backend.session.backend import SessionBackend


def add_db_flag(parser: argparse.ArgumentParser) -> None:
    """Add `--db PATH` (default: the chat database in the user data directory)."""
    parser.add_argument(
        "--db",
        type=Path,
        default=None,
        metavar="PATH",
        help="chat database (default: chats.sqlite3 in the user data directory; "
        "$SAMPLESCOPE_DATA_DIR overrides the directory)",
    )


def open_store(args: argparse.Namespace) -> ChatStore:
    """The store `--db` names, or the default one (with a line on stderr when other
    users can read its folder or the log's)."""
    named = getattr(args, "db", None)
    store = ChatStore(named or default_store_path(), registry=registry_of_args(args))
    if named is None:
        for line in exposed_folder_warnings():
            print(line, file=sys.stderr)
    return store


def recorder_for(args: argparse.Namespace, backend: SessionBackend) -> ChatRecorder:
    """A recorder into the `--db` store for the loaded model (and the chat template's
    switches in force as each reply starts)."""
    return ChatRecorder.of_model(
        open_store(args), backend.info, lambda: backend.template.switches.to_json()
    )
