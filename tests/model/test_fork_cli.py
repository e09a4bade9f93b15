"""`samplescope fork` on replies the real default model and a Q4_0 copy of it stored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sampling.analysis.fork import first_difference
from tests.tiny_models import spm_vocab, write_tiny_llama
from tui.cli.main import main

PROMPT = "Write a short story about a cat."
OPENING = "The owl is a bird that"


def saved(
    capsys: pytest.CaptureFixture[str],
    db: Path,
    model: Path,
    prompt: str = PROMPT,
    mode: str = "chat",
) -> dict[str, object]:
    argv = ["generate", prompt, "-t", "0", "--max-tokens", "40", "--save", "--json", "--mode", mode]
    code = main([*argv, "--db", str(db), "--model", str(model), "--threads", "1"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    reply: dict[str, object] = json.loads(captured.out)
    return reply


def fork_json(capsys: pytest.CaptureFixture[str], db: Path, *args: str) -> dict[str, object]:
    code = main(["fork", *args, "--json", "--db", str(db)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    result: dict[str, object] = json.loads(captured.out)
    return result


def test_two_quantizations_fork(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    default_model_path: Path,
    q4_0_model_path: Path,
) -> None:
    """Greedy replies of two quantizations: the fork is at their first differing token,
    each run took its own most probable token there, and the verdict follows the margins."""
    db = tmp_path / "chats.sqlite3"
    a = saved(capsys, db, default_model_path)
    b = saved(capsys, db, q4_0_model_path)
    ids_a, ids_b = a["token_ids"], b["token_ids"]
    assert isinstance(ids_a, list) and isinstance(ids_b, list)
    index = first_difference(ids_a, ids_b)
    assert index is not None, "the two quantizations wrote the same reply"
    got = fork_json(capsys, db, str(a["chat_id"]), str(b["chat_id"]))
    assert got["position"] == index + 1
    runs = got["runs"]
    assert isinstance(runs, list)
    assert [r["token_id"] for r in runs] == [ids_a[index], ids_b[index]]
    for run, sign in zip(runs, (1, -1), strict=True):
        # Greedy: each run's chosen token is its most probable, so it puts its own
        # token ahead of the other's.
        assert run["top"][0]["token_id"] == run["token_id"]
        assert run["margin"] == pytest.approx(run["top"][0]["prob"] - run["top"][1]["prob"])
        assert sign * run["logit_gap"]["value"] >= 0
        assert run["text"]
    near = all(r["margin"] < 0.05 for r in runs)
    assert got["verdict"] == ("near-tie" if near else "disagreement")
    widest = max(r["margin"] for r in runs)
    loose = fork_json(
        capsys, db, str(a["chat_id"]), str(b["chat_id"]), "--near-tie", str(widest + 1e-6)
    )
    assert loose["verdict"] == "near-tie"
    code = main(["fork", str(a["chat_id"]), str(b["chat_id"]), "--db", str(db)])
    printed = capsys.readouterr().out
    assert code == 0
    assert f"first difference at token {index + 1}:" in printed
    assert got["verdict"] in printed


def test_replies_that_cannot_be_compared(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, default_model_path: Path
) -> None:
    db = tmp_path / "chats.sqlite3"
    a = saved(capsys, db, default_model_path)
    other = saved(capsys, db, default_model_path, prompt="Name a colour.")
    plain = saved(capsys, db, default_model_path, prompt=OPENING, mode="completion")
    code = main(["fork", str(a["chat_id"]), str(other["chat_id"]), "--db", str(db)])
    err = capsys.readouterr().err
    assert code == 2
    assert "answer different conversations" in err
    code = main(["fork", str(a["chat_id"]), str(plain["chat_id"]), "--db", str(db)])
    assert code == 2
    assert "in chat mode and" in capsys.readouterr().err
    tiny = write_tiny_llama(tmp_path / "tiny.gguf", spm_vocab(600), seed=3)
    small = saved(capsys, db, tiny, prompt=OPENING, mode="completion")
    code = main(["fork", str(plain["chat_id"]), str(small["chat_id"]), "--db", str(db)])
    err = capsys.readouterr().err
    assert code == 2
    assert "different vocabularies: 49152 tokens against 600" in err
    assert err.count("\n") == 1


def test_replies_apart_from_the_first_token_and_branches_numbered_per_reply(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, default_model_path: Path
) -> None:
    db = tmp_path / "chats.db"
    first = saved(capsys, db, default_model_path)
    token_ids = first["token_ids"]
    assert isinstance(token_ids, list)
    argv = ["generate", PROMPT, "-t", "0", "--max-tokens", "40", "--save", "--json"]
    argv += ["--logit-bias", f"{token_ids[0]}=-inf", "--db", str(db), "--threads", "1"]
    assert main([*argv, "--model", str(default_model_path)]) == 0
    other = json.loads(capsys.readouterr().out)
    assert main(["fork", str(first["chat_id"]), str(other["chat_id"]), "--db", str(db)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"A: chat {first['chat_id']}, reply 1, branch 1 of 1 (id ")
    assert lines[2] == "different from the first token on"
    assert lines[3].startswith("first difference at token 1:")
