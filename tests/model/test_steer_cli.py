"""`generate --save`, `whatif`, `branch`, `tree` and `export` on the real default model."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from backend.session.llama_backend import LlamaBackend
from backend.session.replay import replay
from backend.session.steer import recompute
from backend.store.lookup import settings_for
from backend.store.store import ChatStore
from tui.cli.main import main

MODEL_FLAGS = ["--threads", "1", "--ctx", "1024", "--batch", "64"]
STEP_FLAGS = ["--threads", "1"]


def run_json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert main(argv) == 0, capsys.readouterr().err
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    return data


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A chat saved by `generate --save --json` (sampled, 24 tokens)."""
    db = tmp_path_factory.mktemp("steer") / "chats.sqlite3"
    out = io.StringIO()  # capsys is function-scoped: capture by hand
    with contextlib.redirect_stdout(out):
        code = main(
            [
                "generate",
                "Tell me about owls.",
                "--save",
                "--json",
                "--max-tokens",
                "24",
                "--db",
                str(db),
                "--seed",
                "11",
                *MODEL_FLAGS,
            ]
        )
    assert code == 0
    return db, json.loads(out.getvalue())


def test_generate_save_adds_the_chat_id_and_stores_each_tokens_record(
    saved: tuple[Path, dict[str, Any]],
) -> None:
    db, result = saved
    assert isinstance(result["chat_id"], int) and result["mode"] == "chat"
    with ChatStore(db) as store:
        chat = store.load_chat(result["chat_id"])
        reply = chat.replies[0]
        assert list(reply.token_ids) == result["token_ids"]
        assert reply.text == result["text"] and (reply.n_ctx, reply.n_batch) == (1024, 64)
        steps = store.load_steps(chat, reply)
    assert [steps[i].token_id for i in sorted(steps)] == result["token_ids"]


def test_replay_reproduces_what_generate_printed(
    saved: tuple[Path, dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    """Checked against generate's own output, not only against the stored record."""
    db, result = saved
    chat_id = result["chat_id"]
    capsys.readouterr()
    assert main(["replay", str(chat_id), "--text", "--db", str(db), *STEP_FLAGS]) == 0
    out = capsys.readouterr().out
    assert out.startswith(result["text"] + "\n") and "token-identical" in out
    with ChatStore(db) as store:
        chat = store.load_chat(chat_id)
    backend = LlamaBackend.load(result["model"], n_threads=1, n_ctx=1024, n_batch=64)
    try:
        replayed = replay(backend, chat, chat.replies[0])
    finally:
        backend.close()
    assert list(replayed.replayed) == result["token_ids"]
    assert replayed.text == result["text"] and replayed.finish_reason == result["finish_reason"]


@pytest.mark.parametrize("position", [1, 7, 19])
def test_whatif_with_the_steps_own_settings_reproduces_the_stored_probabilities(
    saved: tuple[Path, dict[str, Any]], capsys: pytest.CaptureFixture[str], position: int
) -> None:
    db, result = saved
    chat_id = result["chat_id"]
    out = run_json(
        capsys, ["whatif", str(chat_id), "--at", str(position), "--json", "--db", str(db)]
    )
    with ChatStore(db) as store:
        chat = store.load_chat(chat_id)
        stored = store.load_steps(chat, chat.replies[0])[position - 1]
    assert out["token_id"] == result["token_ids"][position - 1] == stored.token_id
    # The step's own uniform under its own settings draws the stored token.
    assert out["u"] == stored.draw is not None and out["drawn"] == stored.token_id
    assert (out["n_kept"], out["cut_by"]) == (stored.n_kept, stored.cut_by)
    ids = [c["token_id"] for c in out["candidates"]]
    assert ids == [int(t) for t in stored.table.token_ids]
    # Stored at float32 precision; the recomputation is the same arithmetic on the same logits.
    np.testing.assert_allclose(
        [c["before"] for c in out["candidates"]], stored.table.prob_before, rtol=1e-6, atol=1e-9
    )
    np.testing.assert_allclose(
        [c["after"] for c in out["candidates"]], stored.table.prob_after, rtol=1e-6, atol=1e-9
    )
    assert stored.token_id in ids[: stored.n_kept]


def test_whatif_with_own_settings_draws_the_stored_token_at_every_step(
    saved: tuple[Path, dict[str, Any]],
) -> None:
    """The randomness stays: every step's own uniform, under its own settings, on the
    rebuilt logits draws the token the reply has (a sampled reply, temperature > 0)."""
    db, result = saved
    with ChatStore(db) as store:
        chat = store.load_chat(result["chat_id"])
        reply = chat.replies[0]
        steps = store.load_steps(chat, reply)
    assert reply.settings_at(0).temperature > 0 and len(steps) == len(reply.token_ids) == 24
    backend = LlamaBackend.load(result["model"], n_threads=1, n_ctx=1024, n_batch=64)
    try:
        drawn = []
        for index in range(len(reply.token_ids)):
            own = settings_for(chat, reply, index)
            step, _ = recompute(backend, chat, reply, index, own, steps[index].draw)
            drawn.append(step.token_id)
            assert step.draw == steps[index].draw is not None, index
    finally:
        backend.close()
    assert drawn == list(reply.token_ids)


def test_whatif_under_other_settings_changes_the_cut_not_the_logits(
    saved: tuple[Path, dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    db, result = saved
    base = ["whatif", str(result["chat_id"]), "--at", "7", "--json", "--db", str(db)]
    own = run_json(capsys, base)
    greedy = run_json(capsys, [*base, "-t", "0"])
    wide = run_json(capsys, [*base, "--top-k", "0", "--top-p", "1", "--min-p", "0"])
    assert (greedy["n_kept"], greedy["cut_by"]) == (1, "greedy")
    # The same uniform, other settings: greedy takes the argmax; all tokens kept, the
    # uniform walks the wider distribution (at least as far down the ranks).
    assert greedy["u"] == own["u"] is not None
    assert greedy["drawn"] == greedy["candidates"][0]["token_id"]
    ranks = [c["token_id"] for c in wide["candidates"]]
    if wide["drawn"] in ranks and own["drawn"] in ranks:
        assert ranks.index(wide["drawn"]) >= ranks.index(own["drawn"])
    assert [c["before"] for c in greedy["candidates"]] == [c["before"] for c in own["candidates"]]
    assert wide["n_kept"] > own["n_kept"] or own["n_kept"] >= 40
    assert greedy["candidates"][0]["after"] == 1.0


def test_whatif_takes_newer_samplers_and_a_logit_bias_by_text(
    saved: tuple[Path, dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    db, result = saved
    for at in range(1, 25):  # a step where the model hesitates between two tokens
        base = ["whatif", str(result["chat_id"]), "--at", str(at), "--json", "--db", str(db)]
        own = run_json(capsys, base)
        if own["candidates"][1]["before"] > 0.1:
            break
    top = own["candidates"][0]
    banned = run_json(capsys, [*base, "--logit-bias", f"{top['text']}=-inf"])
    assert top["token_id"] not in [c["token_id"] for c in banned["candidates"] if c["after"] > 0]
    xtc = run_json(
        capsys, [*base, "--temperature-last", "--xtc-probability", "1", "--xtc-threshold", "0.05"]
    )
    # XTC removes from the head: the most probable candidate is removed, by xtc.
    assert xtc["candidates"][0]["after"] == 0.0
    assert xtc["candidates"][0]["removed_by"] == "xtc"
    dynamic = run_json(capsys, [*base, "--dynatemp-range", "0.5"])
    assert 0.3 <= dynamic["temperature"] <= 1.3 and dynamic["temperature"] != own["temperature"]


def test_branch_by_rank_is_deterministic_and_stored_in_the_tree(
    saved: tuple[Path, dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    db, result = saved
    chat = str(result["chat_id"])
    listing = run_json(capsys, ["whatif", chat, "--at", "4", "--json", "--db", str(db)])
    argv = ["branch", chat, "--branch", "1", "--at", "4", "--rank", "2", "--json"]
    first = run_json(capsys, [*argv, "--db", str(db), *STEP_FLAGS])
    second = run_json(capsys, [*argv, "--db", str(db), *STEP_FLAGS])
    assert first["token_ids"] == second["token_ids"]
    assert first["branch"] != second["branch"]
    assert (first["parent"], first["at"]) == (1, 4)
    assert first["token_ids"][:3] == result["token_ids"][:3]
    assert first["token_ids"][3] == listing["candidates"][1]["token_id"]
    assert first["token_ids"][3] != result["token_ids"][3]

    tree = run_json(capsys, ["tree", chat, "--json", "--db", str(db)])
    rows = {row["id"]: row for row in tree["branches"]}
    assert rows[1]["parent"] is None and rows[1]["at"] is None
    assert rows[first["branch"]]["parent"] == 1 and rows[first["branch"]]["at"] == 4
    assert rows[first["branch"]]["tokens"] == len(first["token_ids"])
    assert rows[second["branch"]]["shown"] is True  # the newest branch of the last turn

    # What-if on the branch, past its fork, reproduces the branch's own records.
    at = 6
    out = run_json(
        capsys,
        [
            "whatif",
            chat,
            "--branch",
            str(first["branch"]),
            "--at",
            str(at),
            "--json",
            "--db",
            str(db),
        ],
    )
    with ChatStore(db) as store:
        record = store.load_chat(result["chat_id"])
        branch = next(b for b in record.messages[-1].branches if b.id == first["branch"])
        stored = store.load_steps(record, branch)[at - 1]
    assert out["token_id"] == first["token_ids"][at - 1] == stored.token_id
    np.testing.assert_allclose(
        [c["after"] for c in out["candidates"]], stored.table.prob_after, rtol=1e-6, atol=1e-9
    )

    # `export --format json` carries the tree; replaying the branch is token-identical.
    export = run_json(capsys, ["export", chat, "--format", "json", "--db", str(db)])
    assert [row["id"] for row in export["tree"]] == [row["id"] for row in tree["branches"]]
    assert main(["replay", chat, "--db", str(db), *STEP_FLAGS]) == 0


def test_branch_by_token_and_by_resample(
    saved: tuple[Path, dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    db, result = saved
    chat = str(result["chat_id"])
    forced = run_json(
        capsys,
        [
            "branch",
            chat,
            "--branch",
            "1",
            "--at",
            "2",
            "--token",
            "42",
            "--json",
            "--db",
            str(db),
            *STEP_FLAGS,
        ],
    )
    assert forced["token_ids"][:2] == [result["token_ids"][0], 42]
    argv = ["branch", chat, "--branch", "1", "--at", "10", "--resample", "--seed", "5", "--json"]
    again = [run_json(capsys, [*argv, "--db", str(db), *STEP_FLAGS]) for _ in range(2)]
    assert again[0]["token_ids"] == again[1]["token_ids"]
    assert again[0]["token_ids"][:9] == result["token_ids"][:9]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["whatif", "999", "--at", "1"], "has no chat 999"),
        (["whatif", "{chat}", "--reply", "3", "--at", "1"], "has no reply 3"),
        (["whatif", "{chat}", "--at", "0"], "the position must be 1 to 24, not 0"),
        (["branch", "{chat}", "--branch", "1", "--at", "99", "--resample"], "not 99"),
        (
            ["branch", "{chat}", "--branch", "1", "--at", "2", "--rank", "21"],
            "rank must be 1 to 20",
        ),
        (["branch", "{chat}", "--branch", "77", "--at", "2", "--resample"], "has no branch 77"),
        (
            ["branch", "{chat}", "--at", "5", "--resample", "--max-tokens", "4"],
            "invalid --max-tokens 4: the branch keeps 4 tokens before POS 5",
        ),
        (["tree", "999"], "has no chat 999"),
    ],
)
def test_clear_errors_for_a_missing_chat_reply_branch_or_position(
    saved: tuple[Path, dict[str, Any]],
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    message: str,
) -> None:
    db, result = saved
    argv = [a.replace("{chat}", str(result["chat_id"])) for a in argv]
    capsys.readouterr()
    assert main([*argv, "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and err.count("\n") == 1


def test_completion_mode_continues_plain_text_and_branches(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "chats.sqlite3"
    argv = ["generate", "The owl is a bird that", "--mode", "completion", "--save", "--json"]
    result = run_json(capsys, [*argv, "--max-tokens", "12", "--db", str(db), *MODEL_FLAGS])
    assert result["mode"] == "completion"
    raw = run_json(
        capsys,
        [
            "generate",
            "The owl is a bird that",
            "--raw",
            "--json",
            "--max-tokens",
            "12",
            *MODEL_FLAGS,
        ],
    )
    assert raw["token_ids"] == result["token_ids"]  # --raw is completion mode
    chat = str(result["chat_id"])
    assert main(["replay", chat, "--db", str(db), *STEP_FLAGS]) == 0
    out = run_json(capsys, ["whatif", chat, "--at", "3", "--json", "--db", str(db)])
    with ChatStore(db) as store:
        record = store.load_chat(result["chat_id"])
        assert record.replies[0].mode == "completion"
        stored = store.load_steps(record, record.replies[0])[2]
    np.testing.assert_allclose(
        [c["after"] for c in out["candidates"]], stored.table.prob_after, rtol=1e-6, atol=1e-9
    )
    branch = run_json(
        capsys, ["branch", chat, "--at", "3", "--rank", "2", "--json", "--db", str(db), *STEP_FLAGS]
    )
    assert branch["token_ids"][:2] == result["token_ids"][:2]


def test_export_jsonl_rows_add_up_to_the_replys_text_and_score(
    saved: tuple[Path, dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    from backend.llama.ui_tokenizer import UiTokenizer
    from backend.store.store import ChatStore

    db, result = saved
    capsys.readouterr()
    assert main(["export", str(result["chat_id"]), "--format", "jsonl", "--db", str(db)]) == 0
    every = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    rows = [r for r in every if (r["reply"], r["branch"]) == (1, 1)]  # other tests branch it
    assert [r["token_id"] for r in rows] == result["token_ids"]
    assert "".join(r["text"] for r in rows) == result["text"]
    # The raw log-probabilities are the score's, read back from float32 records.
    total = sum(r["logprob_raw"] for r in rows)
    assert total == pytest.approx(result["score"]["logprob_raw"], abs=1e-4)
    assert sum(r["entropy"] for r in rows) / len(rows) == pytest.approx(
        result["score"]["mean_entropy"], abs=1e-5
    )
    # Candidates' text comes from the model file's vocabulary.
    with ChatStore(db) as store:
        model_path = store.load_chat(result["chat_id"]).replies[0].model.path
    tokenizer = UiTokenizer.from_gguf(model_path)
    for row in every:
        for candidate in row["top"]:
            assert candidate["text"] == tokenizer.piece(candidate["token_id"])
        ranked = [c["token_id"] for c in row["top"]]
        if row["token_id"] in ranked:
            assert row["rank"] == ranked.index(row["token_id"]) + 1
        elif row in rows:  # drawn: ranked over the vocabulary
            assert row["rank"] > len(ranked)
        else:  # a token forced from below the table (`branch --token`) has no rank
            assert row["rank"] is None or row["rank"] > len(ranked)
