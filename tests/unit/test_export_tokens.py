"""`export --format jsonl|csv`: one row per sampled token of every branch, read back
with the json and csv modules alone, equal to the stored step records."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from backend.store.store import ChatStore, Fork, ModelRef
from sampling.records import Step
from sampling.sampler import Sampler
from sampling.settings.record import SamplerSettings
from tests.helpers import DateClock
from tui.cli.commands.export.tokens import COLUMNS
from tui.cli.main import main

MODEL = ModelRef(path="/models/m.gguf", size=1234, sha256="ab" * 32)
# Hot and unfiltered but for top-k: tokens below the table's rows are drawn too.
HOT = SamplerSettings(temperature=2.5, top_k=40, top_p=1.0, min_p=0.0, seed=7)


def sampled_steps(n: int, seed: int) -> list[Step]:
    rng = np.random.default_rng(seed)
    sampler = Sampler(HOT, n_candidates=4)
    return [sampler.sample((rng.normal(size=64) * 3).astype(np.float32)) for _ in range(n)]


def piece(token: int) -> str:
    return f'<{token},"\n>'  # a comma, a quote and a newline: CSV must quote them


def record(store: ChatStore, chat: int, steps: list[Step], fork: Fork | None = None) -> int:
    start = 0 if fork is None else fork.at
    writer = store.begin_reply(chat, MODEL, HOT, max_tokens=99, fork=fork)
    for index, step in enumerate(steps, start=start):
        writer.append_token(index, step.token_id, step.settings, piece(step.token_id), step)
    text = (fork.text if fork else "") + "".join(piece(s.token_id) for s in steps)
    writer.finish("max_tokens", None, text)
    return writer.reply_id


@pytest.fixture
def branched(tmp_path: Path) -> tuple[Path, int]:
    """Reply 1 (12 tokens) with a branch from token 5 (followed), then a second turn."""
    db = tmp_path / "chats.sqlite3"
    with ChatStore(db, clock=DateClock()) as store:
        chat = store.new_chat("t", MODEL)
        store.add_message(chat, "user", "q1")
        record(store, chat, sampled_steps(12, seed=1))
        first = store.load_chat(chat).replies[0]
        shared = "".join(piece(t) for t in first.token_ids[:5])
        record(store, chat, sampled_steps(6, seed=2), Fork(first, 5, shared))
        store.add_message(chat, "user", "q2")
        record(store, chat, sampled_steps(7, seed=3))
    return db, chat


def export(capsys: pytest.CaptureFixture[str], db: Path, chat: int, fmt: str) -> str:
    capsys.readouterr()
    assert main(["export", str(chat), "--format", fmt, "--db", str(db)]) == 0
    return capsys.readouterr().out


def expected_rows(db: Path, chat: int) -> list[dict[str, Any]]:
    """The stored records, row by row, as the export should hold them."""
    rows: list[dict[str, Any]] = []
    with ChatStore(db) as store:
        record_ = store.load_chat(chat)
        for message in record_.stored_messages:
            for branch in message.branches:
                steps = store.load_steps(record_, branch)
                for index, token in enumerate(branch.token_ids):
                    step = steps[index]
                    raw = step.prob_unfiltered
                    assert raw is not None
                    table = step.table
                    rows.append(
                        {
                            "reply": branch.number,
                            "branch": branch.branch,
                            "branch_id": branch.id,
                            "position": index,
                            "token_id": token,
                            "text": piece(token),
                            "prob": step.prob,
                            "logprob_raw": math.log(raw),
                            "rank": step.rank,
                            "entropy": step.entropy,
                            "kept": step.n_kept,
                            "cut_by": step.cut_by,
                            "section": str(step.section),
                            "top": [
                                [int(t), float(b), float(a), bool(k), r]
                                for t, b, a, k, r in zip(
                                    table.token_ids,
                                    table.prob_before,
                                    table.prob_after,
                                    table.kept,
                                    table.removed_by,
                                    strict=True,
                                )
                            ],
                        }
                    )
    return rows


def comparable(row: dict[str, Any]) -> dict[str, Any]:
    """A parsed row with the candidates as lists, as `expected_rows` has them."""
    top = [
        [c["token_id"], c["prob_raw"], c["prob"], c["kept"], c["removed_by"]] for c in row["top"]
    ]
    left_out = ("chat", "followed", "top", "reports")
    return {name: row[name] for name in row if name not in left_out} | {"top": top}


def test_jsonl_rows_equal_the_stored_steps(
    branched: tuple[Path, int], capsys: pytest.CaptureFixture[str]
) -> None:
    db, chat = branched
    lines = export(capsys, db, chat, "jsonl").splitlines()
    rows = [json.loads(line) for line in lines]
    assert len(rows) == 12 + 11 + 7  # the branch's five shared tokens are rows of it too
    assert all(list(row) == list(COLUMNS) for row in rows)
    expected = expected_rows(db, chat)
    assert [comparable(row) for row in rows] == expected  # exact: floats in full
    assert [(r["reply"], r["branch"], r["followed"]) for r in rows[::6]] == [
        (1, 1, False),
        (1, 1, False),
        (1, 2, True),
        (1, 2, True),
        (2, 1, True),
    ]
    # Some drawn tokens were ranked below the four-row table: the rank is recorded.
    assert max(r["rank"] for r in rows) > 4
    assert all(r["top"][0]["text"] is None for r in rows)  # /models/m.gguf is not here


def test_csv_rows_equal_the_jsonl_rows(
    branched: tuple[Path, int], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db, chat = branched
    jsonl = [json.loads(line) for line in export(capsys, db, chat, "jsonl").splitlines()]
    out = tmp_path / "tokens.csv"
    assert main(["export", str(chat), "--format", "csv", "--db", str(db), "-o", str(out)]) == 0
    with out.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        assert tuple(reader.fieldnames or ()) == COLUMNS
        cells = list(reader)
    assert len(cells) == len(jsonl)
    ints = ("chat", "reply", "branch", "branch_id", "position", "token_id", "rank", "kept")
    floats = ("prob", "logprob_raw", "entropy")
    for cell, row in zip(cells, jsonl, strict=True):
        parsed: dict[str, Any] = {name: cell[name] for name in ("text", "cut_by", "section")}
        parsed |= {name: int(cell[name]) for name in ints}
        parsed |= {name: float(cell[name]) for name in floats}
        parsed["followed"] = {"true": True, "false": False}[cell["followed"]]
        parsed["top"] = json.loads(cell["top"])
        parsed["reports"] = json.loads(cell["reports"])
        assert parsed == row


def test_csv_quotes_texts_with_commas_quotes_and_newlines() -> None:
    from backend.store.token_table import TokenRow, TopToken
    from tui.cli.commands.export.tokens import rows_csv

    row = TokenRow(1, 1, 1, 3, True, 0, 9, 'a,"b"\nc', 0.5, -1.5, 2, 1.25, 3, "top_k", ())
    row = TokenRow(
        *[getattr(row, f) for f in COLUMNS[:-3]], (TopToken(4, "x,y", 0.3, 0.0, False, "top_k"),)
    )
    text = rows_csv([row])
    (cell,) = list(csv.DictReader(io.StringIO(text, newline="")))
    assert cell["text"] == 'a,"b"\nc'
    assert cell["logprob_raw"] == "-1.5" and cell["followed"] == "true"
    assert json.loads(cell["top"]) == [
        {
            "token_id": 4,
            "text": "x,y",
            "prob_raw": 0.3,
            "prob": 0.0,
            "kept": False,
            "removed_by": "top_k",
        }
    ]


def test_pandas_reads_the_export(
    branched: tuple[Path, int], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import pandas as pd  # a test dependency: the README's two lines, run

    db, chat = branched
    out = tmp_path / "tokens.jsonl"
    assert main(["export", str(chat), "--format", "jsonl", "--db", str(db), "-o", str(out)]) == 0
    # Without precise_float pandas parses floats to within an ulp, not exactly.
    frame = pd.read_json(out, lines=True, precise_float=True)
    assert list(frame.columns) == list(COLUMNS) and len(frame) == 30
    assert frame["logprob_raw"].tolist() == [r["logprob_raw"] for r in expected_rows(db, chat)]


def test_candidates_text_comes_from_the_models_vocabulary(tmp_path: Path) -> None:
    from tests.tiny_models import bpe_vocab, write_tiny_llama
    from tui.cli.commands.export.tokens import vocabulary_text

    vocab = bpe_vocab("smollm", ["<s>", "</s>"])
    path = write_tiny_llama(tmp_path / "tiny.gguf", vocab)
    model = ModelRef(str(path), path.stat().st_size, "00" * 32)
    text = vocabulary_text()
    # Token 256 is the first merge, "Ġt": a space and a t.
    assert [text(model, 256), text(model, vocab.tokens.index("a"))] == [" t", "a"]
    assert text(model, 10**6) is None  # outside the vocabulary
    changed = ModelRef(str(path), model.size + 1, model.sha256)
    assert text(changed, 256) is None  # the file is not the one that generated


def test_json_and_markdown_carry_each_branchs_score(
    branched: tuple[Path, int], capsys: pytest.CaptureFixture[str]
) -> None:
    from sampling.analysis.reply_score import reply_score
    from tui.cli.reply_score_json import reply_score_json
    from tui.score_label import score_label

    db, chat = branched
    with ChatStore(db) as store:
        record_ = store.load_chat(chat)
        steps = {
            b.id: [store.load_steps(record_, b)[i] for i in range(len(b.token_ids))]
            for m in record_.stored_messages
            for b in m.branches
        }
    data = json.loads(export(capsys, db, chat, "json"))
    branches = [b for m in data["messages"] for b in m["branches"]]
    assert len(branches) == 3
    for branch in branches:
        assert branch["score"] == reply_score_json(steps[branch["branch_id"]])
    assert branches[1]["score"]["n_tokens"] == 11  # the shared tokens count
    markdown = export(capsys, db, chat, "md")
    followed = [
        data["messages"][1]["reply"]["branch_id"],
        data["messages"][3]["reply"]["branch_id"],
    ]
    for branch_id in followed:
        label = score_label(reply_score(steps[branch_id]))
        assert label.startswith("logp −") and f"> score: {label} (raw, nats)" in markdown


def test_a_guided_steps_row_carries_both_distributions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(4)
    guided = HOT.with_changes(guidance_scale=2.0, negative_prompt="no")
    sampler = Sampler(guided, n_candidates=4)
    steps = [
        sampler.sample(
            (rng.normal(size=64) * 3).astype(np.float32),
            second=(rng.normal(size=64) * 3).astype(np.float32),
        )
        for _ in range(3)
    ]
    db = tmp_path / "chats.sqlite3"
    with ChatStore(db, clock=DateClock()) as store:
        chat = store.new_chat("t", MODEL)
        store.add_message(chat, "user", "q")
        record(store, chat, steps)
    for fmt in ("jsonl", "csv"):
        text = export(capsys, db, chat, fmt)
        if fmt == "jsonl":
            rows = [json.loads(line)["reports"] for line in text.splitlines()]
        else:
            rows = [json.loads(c["reports"]) for c in csv.DictReader(io.StringIO(text))]
        assert len(rows) == 3
        for row, step in zip(rows, steps, strict=True):
            report = step.reports["guidance"]
            shown = row["guidance"]
            assert shown["scale"] == 2.0 and shown["divergence"] == report["divergence"]
            for name in ("cond", "uncond", "guided"):
                pairs = [(c["id"], c["prob"]) for c in shown[name]]
                assert pairs == [tuple(pair) for pair in report[name]]  # type: ignore[union-attr]
                assert all(c["text"] is None for c in shown[name])  # the model is not here
            assert shown["raised"][0]["change"] > 0 > shown["lowered"][0]["change"]


def test_a_thinking_step_is_exported_with_its_section() -> None:
    from backend.store.token_table import TokenRow
    from tui.cli.commands.export.tokens import rows_csv, rows_jsonl

    row = TokenRow(1, 1, 1, 3, True, 0, 9, "hm", 0.5, -1.5, 2, 1.25, 3, "top_k", (), {}, "thinking")
    assert json.loads(rows_jsonl([row]))["section"] == "thinking"
    (cell,) = list(csv.DictReader(io.StringIO(rows_csv([row]), newline="")))
    assert cell["section"] == "thinking"
