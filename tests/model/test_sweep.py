"""`samplescope sweep` on the real default model: lockstep samples equal `generate`
alone, the CLI's JSON and CSV, saved samples, cancel."""

from __future__ import annotations

import csv
import io
import json
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from backend.session.llama_backend import LlamaBackend
from backend.session.recorded_sweep import kept_sweep
from backend.session.sweep import SweepEvent, SweepPlan, SweepSample, SweepSetting, run_sweep
from backend.session.sweep_result import METRIC_NAMES
from backend.store.store import ChatStore, SweepSummary
from sampling.settings.record import SamplerSettings
from tui.cli.commands import sweep as sweep_cli
from tui.cli.main import main

MODEL_FLAGS = ["--threads", "1", "--ctx", "1024"]
PLAN = SweepPlan(
    prompts=("Write one sentence about the sea.",),
    settings=(
        SweepSetting("t=0.7 min_p=0.1", SamplerSettings(temperature=0.7, min_p=0.1)),
        SweepSetting("t=1.5 top_p=0.9", SamplerSettings(temperature=1.5, top_p=0.9)),
    ),
    samples=2,
    seed=11,
    max_tokens=16,
)


def test_cancel_keeps_what_was_done(llama_backend: LlamaBackend) -> None:
    llama_backend.reset()
    cancel = threading.Event()
    plan = SweepPlan(PLAN.prompts * 2, PLAN.settings, 2, max_tokens=16)
    seen: list[SweepSample] = []
    tokens = 0
    for event in run_sweep(llama_backend, plan, cancel=cancel):
        if isinstance(event, SweepSample):
            seen.append(event)
        else:
            tokens += 1
            if tokens == 6:
                cancel.set()
    # The first prompt's batch finished as cancelled; the second never started.
    assert len(seen) == 4
    assert {s.finished.reason for s in seen} == {"cancelled"}
    assert {s.key.prompt for s in seen} == {0}
    assert sum(len(s.steps) for s in seen) >= 6


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


SWEEP = [
    "sweep",
    "--prompt",
    "Name a colour.",
    "--grid",
    "t=0.7,1.5",
    "--set",
    "min_p=0.1",
    "--samples",
    "2",
    "--max-tokens",
    "12",
    *MODEL_FLAGS,
]


def test_cli_json_has_every_setting_and_sample_saved(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "chats.sqlite3"
    code, out = run_cli(capsys, *SWEEP, "--json", "--db", str(db))
    assert code == 0
    result = json.loads(out)
    assert result["temperature_order"] == "first"
    assert (result["samples_per_setting"], result["seed"], result["max_tokens"]) == (2, 42, 12)
    assert [s["label"] for s in result["settings"]] == ["t=0.7 min_p=0.1", "t=1.5 min_p=0.1"]
    for setting in result["settings"]:
        assert setting["samples"] == 2
        assert set(setting["metrics"]) == set(METRIC_NAMES)
        logprob = setting["metrics"]["logprob"]
        assert logprob["n"] == 1 and logprob["stderr"] is None and logprob["mean"] < 0
        assert sum(setting["finish_reasons"].values()) == 2
    assert any(s["on_frontier"] for s in result["settings"])
    samples = result["samples"]
    assert sorted((s["setting"], s["seed"]) for s in samples) == [
        (0, 42),
        (0, 43),
        (1, 42),
        (1, 43),
    ]
    with ChatStore(db) as store:
        for sample in samples:
            chat = store.load_chat(sample["chat_id"])
            assert chat.title.startswith("sweep · ")
            reply = chat.messages[-1].branches[0]
            assert list(reply.token_ids) == sample["token_ids"]
            assert len(store.load_steps(chat, reply)) == sample["n_tokens"]
        # the saved chats list the sweep as one entry, which holds its result
        (entry,) = store.list_history()
        assert isinstance(entry, SweepSummary) and entry.samples == len(samples)
        assert json.loads(json.dumps(kept_sweep(store, entry.id).to_json())) == result


def test_a_saved_sweep_is_viewed_again_without_running(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tui.app import SamplescopeApp

    db = tmp_path / "chats.sqlite3"
    assert main([*SWEEP, "--db", str(db)]) == 0
    err = capsys.readouterr().err
    kept = tmp_path / "sweeps" / "sweep-chats-1-4.json"
    assert f"`samplescope sweep --view {kept}` shows this sweep again" in err
    ran: list[SamplescopeApp] = []
    monkeypatch.setattr(SamplescopeApp, "run", lambda self: ran.append(self))
    monkeypatch.setattr(sweep_cli, "run_sweep", None)  # viewing runs nothing
    assert main(["sweep", "--view", str(kept), "--db", str(db), "--threads", "1"]) == 0
    assert len(ran) == 1
    with ChatStore(db) as store:
        assert len(store.list_chats()) == 4  # no sample saved twice


def test_cli_csv_has_one_row_per_setting(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run_cli(capsys, *SWEEP, "--csv", "--no-save", "--temperature", "last")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["label"] for r in rows] == ["t=0.7 min_p=0.1", "t=1.5 min_p=0.1"]
    assert {r["temperature_order"] for r in rows} == {"last"}
    for row in rows:
        assert float(row["logprob"]) < 0 and row["logprob_stderr"] == "" and row["logprob_n"] == "1"
        assert float(row["length"]) <= 12
        assert row["on_frontier"] in ("true", "false")


def test_ctrl_c_keeps_what_was_done(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    real_run = sweep_cli.run_sweep

    def interrupted_after_five_tokens(*args: Any, **kwargs: Any) -> Iterator[SweepEvent]:
        for count, event in enumerate(real_run(*args, **kwargs)):
            if count == 5:
                signal.raise_signal(signal.SIGINT)  # as Ctrl-C does
            yield event

    monkeypatch.setattr(sweep_cli, "run_sweep", interrupted_after_five_tokens)
    db = tmp_path / "chats.sqlite3"
    argv = [*SWEEP, "--prompt", "Name a fruit.", "--json", "--db", str(db), "--parallel", "4"]
    code, out = run_cli(capsys, *argv)
    assert code == 130
    result = json.loads(out)
    assert result["cancelled"] is True
    # The first prompt's batch stopped as cancelled and was kept; the second never ran.
    assert {(s["prompt"], s["finish_reason"]) for s in result["samples"]} == {(0, "cancelled")}
    assert len(result["samples"]) == 4
    with ChatStore(db) as store:
        for sample in result["samples"]:
            assert store.load_chat(sample["chat_id"]).title.startswith("sweep · ")
    # Cancelled samples are left out of the figures.
    assert all(s["samples"] == 0 for s in result["settings"])


@pytest.mark.anyio
async def test_a_samples_copied_command_gives_its_tokens(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import shlex

    from tests.helpers import copied_in_sweep_screen

    path = tmp_path / "sweep.json"
    code, out = run_cli(capsys, *SWEEP, "--json", "--no-save")
    assert code == 0
    path.write_text(out, encoding="utf-8")
    result = sweep_cli.read_result(path)
    # t=1.5, its second sample
    [line] = await copied_in_sweep_screen(result, "down", "enter", "down", "y")
    sample = next(s for s in result.samples if (s.figures.setting, s.seed) == (1, 43))
    assert main([*shlex.split(line)[1:], "--json", *MODEL_FLAGS]) == 0
    assert tuple(json.loads(capsys.readouterr().out)["token_ids"]) == sample.token_ids


def test_a_sample_of_a_batch_wider_than_four_replays_and_whatifs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """whatif, replay and branch load the model with the sample's whole lockstep batch
    (6 here; the model's default holds 4), so a sweep's sample is rebuilt exactly."""
    db = tmp_path / "chats.sqlite3"
    argv = [*SWEEP, "--samples", "3", "--max-tokens", "8", "--json", "--db", str(db)]
    code, out = run_cli(capsys, *argv)
    assert code == 0
    sample = json.loads(out)["samples"][4]  # one of the six decoded together
    chat = str(sample["chat_id"])
    flags = ["--db", str(db), "--threads", "1", "--json"]
    assert main(["whatif", chat, "--at", "3", *flags]) == 0
    step = json.loads(capsys.readouterr().out)
    assert step["drawn"] == step["token_id"] == sample["token_ids"][2]
    assert main(["replay", chat, "--db", str(db), "--threads", "1"]) == 0
    assert "token-identical" in capsys.readouterr().out
