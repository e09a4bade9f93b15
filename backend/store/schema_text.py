"""The chat database's schema as text: what `backend/store/schema.sql` holds.

`schema.sql` is the schema a new database gets (every migration run from version 0),
written out so that it can be read in one place. `normalised` makes two schemas
comparable whatever path made them: a database migrated from an old file carries the
old CREATE statements' comments and spacing, which SQLite keeps as written.

Write the file again after changing a migration:
`python -c "from backend.store.schema_text import write_schema_file; write_schema_file()"`.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from backend.store.schema import SCHEMA_VERSION, migrate

SCHEMA_FILE = Path(__file__).with_name("schema.sql")

_HEADER = f"""-- The chat database's schema at version {SCHEMA_VERSION} (PRAGMA user_version), as a
-- new database gets it by running every migration in backend/store/schema.py. Written
-- by backend.store.schema_text.write_schema_file; a test checks it against a new one.
"""


def schema_of(conn: sqlite3.Connection) -> str:
    """The CREATE statements of a database, tables then indexes, each by name."""
    rows = conn.execute(
        "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL "
        "ORDER BY CASE type WHEN 'table' THEN 0 ELSE 1 END, name"
    ).fetchall()
    return "".join(f"{row[0]};\n\n" for row in rows)


def fresh_schema() -> str:
    """What `schema.sql` holds: the schema of a new database, with its header."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        migrate(conn)
        return _HEADER + "\n" + schema_of(conn) + f"PRAGMA user_version = {SCHEMA_VERSION};\n"
    finally:
        conn.close()


def write_schema_file(path: Path = SCHEMA_FILE) -> None:
    """Write `schema.sql` from a new database."""
    path.write_text(fresh_schema(), encoding="utf-8")


def normalised(sql: str) -> list[str]:
    """The statements of a schema, sorted, without comments, quotes or spacing
    differences, so that equal schemas compare equal."""
    text = re.sub(r"--[^\n]*", "", sql)
    text = re.sub(r'"(\w+)"', r"\1", text)
    statements = []
    for statement in text.split(";"):
        words = " ".join(statement.split())
        words = re.sub(r"\s*([(),])\s*", r"\1", words)
        if words:
            statements.append(words)
    return sorted(statements)
