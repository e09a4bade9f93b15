"""`export --format jsonl|csv`: one row per sampled token, for a notebook.

JSON Lines holds one object per token with `top` a list of objects, `reports` an
object (what each unit reported of the step: guidance's and contrast's both
distributions' top tokens) and `section` ("thinking" or "answer"); CSV holds the
same columns with `top` and `reports` as JSON strings. Floats are written in full
(`repr`), so they read back equal to the stored records; a value that is unknown (or
an infinite log-probability) is null in JSON Lines and an empty cell in CSV.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict
from pathlib import Path

from backend.errors import ModelFileError
from backend.llama.ui_tokenizer import UiTokenizer
from backend.store.records import ModelRef
from backend.store.token_table import CandidateText, TokenRow
from tui.cli.json_numbers import finite_or_null

COLUMNS = (
    "chat",
    "reply",
    "branch",
    "branch_id",
    "followed",
    "position",
    "token_id",
    "text",
    "prob",
    "logprob_raw",
    "rank",
    "entropy",
    "kept",
    "cut_by",
    "top",
    "reports",
    "section",
)
"""The columns of every row, in order (`TokenRow`'s fields)."""


def row_object(row: TokenRow) -> dict[str, object]:
    """A row as a JSON object."""
    values = asdict(row)
    return {name: finite_or_null(values[name]) for name in COLUMNS}


def rows_jsonl(rows: list[TokenRow]) -> str:
    """The rows as JSON Lines."""
    return "".join(
        json.dumps(row_object(row), ensure_ascii=False, allow_nan=False) + "\n" for row in rows
    )


def rows_csv(rows: list[TokenRow]) -> str:
    """The rows as CSV with a header; `top` is a JSON string, booleans are true/false."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in rows:
        values = row_object(row)
        cells: list[object] = []
        for name in COLUMNS:
            value = values[name]
            if name in ("top", "reports"):
                cells.append(json.dumps(value, ensure_ascii=False, allow_nan=False))
            elif isinstance(value, bool):
                cells.append("true" if value else "false")
            elif value is None:
                cells.append("")
            else:
                cells.append(value)
        writer.writerow(cells)
    return out.getvalue()


def vocabulary_text() -> CandidateText:
    """Candidates' text from each reply's model file, read once per file; None for a
    model whose file is gone or has changed (its size differs)."""
    tokenizers: dict[tuple[str, int], UiTokenizer | None] = {}

    def text(model: ModelRef, token_id: int) -> str | None:
        key = (model.path, model.size)
        if key not in tokenizers:
            tokenizers[key] = _tokenizer(model)
        tokenizer = tokenizers[key]
        if tokenizer is None:
            return None
        try:
            return tokenizer.piece(token_id)
        except IndexError:
            return None

    return text


def _tokenizer(model: ModelRef) -> UiTokenizer | None:
    path = Path(model.path)
    try:
        if not path.is_file() or path.stat().st_size != model.size:
            return None
        return UiTokenizer.from_gguf(path)
    except (OSError, ModelFileError):
        return None
