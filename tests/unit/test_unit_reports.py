"""A unit reports its step's figures by name and the pipeline names no unit: the step
keeps the reports by unit name, the store keeps them (and reads older rows' unit
fields as reports), a what-if redoes a step with the state it reported, beam search
refuses whatever keeps state, and `probabilities` restores any unit by name."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

from backend.chat.protocol import ChatMessage
from backend.session.beam_result import BeamSearchError
from backend.session.beams import beam_search
from backend.store.steps import StepLayout, layout_of, pack_reports, pack_step, unpack_step
from sampling.built_in import BUILT_IN_REGISTRY
from sampling.candidates import Candidates
from sampling.chain import build_chain
from sampling.plugins import joined
from sampling.records import Step
from sampling.sampler import Sampler, probabilities
from sampling.samplers.base import Report, description
from sampling.samplers.grammar import Grammar
from sampling.samplers.mirostat import Mirostat, MirostatState
from sampling.samplers.unit import Stateless, UnitState
from sampling.settings.record import SamplerSettings
from sampling.settings.spec import SettingSpec
from sampling.settings.summary import settings_summary
from tests.fake_backend import FakeBackend
from tui.cli.verbose import step_line

LOGITS = [np.random.default_rng(seed).normal(size=64).astype(np.float32) * 3 for seed in range(6)]
MIROSTAT = SamplerSettings(mirostat=2, mirostat_tau=3.0, seed=5)
ADAPTIVE = SamplerSettings(adaptive_target=0.3, adaptive_decay=0.5, min_p=0.02, seed=5)


def steps_of(settings: SamplerSettings, count: int = 5) -> tuple[list[Step], list[int]]:
    """`count` steps of one reply on LOGITS, and the history each step saw last."""
    sampler = Sampler(settings, n_candidates=8)
    history: list[int] = []
    steps = []
    for logits in LOGITS[:count]:
        step = sampler.sample(logits, list(history))
        steps.append(step)
        history.append(step.token_id)
    return steps, history


def test_each_unit_that_ran_reports_under_its_name() -> None:
    steps, _ = steps_of(MIROSTAT)
    assert steps[0].reports == {"mirostat": {"mu": 6.0}}  # mu starts at 2 * tau
    assert steps[1].figure("mirostat", "mu") != 6.0
    adaptive, _ = steps_of(ADAPTIVE)
    assert [set(step.reports) for step in adaptive] == [{"adaptive_p"}] * 5
    assert adaptive[0].figure("adaptive_p", "target") == pytest.approx(0.3)
    plain, _ = steps_of(SamplerSettings(top_k=5, seed=1))
    assert all(step.reports == {} for step in plain) and not plain[0].forced
    # Greedy: mirostat holds its mu but does not run, so it reports nothing.
    (greedy,), _ = steps_of(MIROSTAT.with_changes(temperature=0.0), 1)
    assert greedy.reports == {}


@pytest.mark.parametrize("settings", [MIROSTAT, ADAPTIVE], ids=["mirostat", "adaptive-p"])
def test_a_what_if_with_the_steps_own_settings_redoes_it_from_its_reports(
    settings: SamplerSettings,
) -> None:
    """A fresh sampler resumed at step 3 with the step's reports runs with the state that
    step ran with: the same token, probability and reports (without them, mirostat
    would start at 2 * tau and adaptive-p at its target)."""
    steps, history = steps_of(settings)
    stored = steps[3]
    sampler = Sampler(settings, n_candidates=8)
    sampler.resume(3, stored.reports)
    again = sampler.sample(LOGITS[3], history[:3], uniform=stored.draw)
    assert (again.token_id, again.prob, again.reports) == (
        stored.token_id,
        stored.prob,
        stored.reports,
    )
    fresh = Sampler(settings, n_candidates=8)
    fresh.resume(3)
    assert fresh.sample(LOGITS[3], history[:3], uniform=stored.draw).reports != stored.reports


def test_probabilities_restores_any_unit_by_name() -> None:
    logits = LOGITS[0]
    sampler = Sampler(MIROSTAT)
    sampler.settings = MIROSTAT
    for step_logits in LOGITS[1:4]:
        sampler.sample(step_logits)
    state = sampler.state()
    mu = dict(state.units)["mirostat"]
    assert isinstance(mu, MirostatState) and mu.mu is not None
    restored = probabilities(logits, MIROSTAT, states=state.units)
    assert not np.array_equal(restored, probabilities(logits, MIROSTAT))
    by_name = probabilities(logits, MIROSTAT, states={"mirostat": mu})
    from_record = probabilities(logits, MIROSTAT, recorded={"mirostat": {"mu": mu.mu}})
    np.testing.assert_array_equal(restored, by_name)
    np.testing.assert_array_equal(restored, from_record)
    step = sampler.sample(logits)
    np.testing.assert_allclose(restored[step.token_id], step.prob, rtol=1e-12)


def test_stored_reports_round_trip_in_their_own_column() -> None:
    steps, _ = steps_of(MIROSTAT)
    layout = layout_of(steps[0])
    assert "reports" not in layout.scalars
    for step in steps:
        again = unpack_step(*pack_step(step, layout), layout, step.settings, pack_reports(step))
        assert again == step and again.reports == step.reports
    plain, _ = steps_of(SamplerSettings(seed=1), 1)
    assert pack_reports(plain[0]) is None  # NULL: no unit reported


def test_a_row_of_schema_7_reads_its_unit_fields_as_reports() -> None:
    """Before units reported, a row's layout named mirostat's, adaptive-p's and the
    grammar's figures as fields of the step."""
    (step,), _ = steps_of(SamplerSettings(seed=1), 1)
    layout = layout_of(step)
    scalars, blob = pack_step(step, layout)
    older = ("mirostat_mu", "adapted_target", "grammar_removed", "forced")
    legacy = StepLayout((*layout.scalars, *older), layout.arrays)
    values = [*json.loads(scalars), 4.5, 0.25, 0.125, True]
    again = unpack_step(json.dumps(values), blob, legacy, step.settings)
    assert again.reports == {
        "mirostat": {"mu": 4.5},
        "adaptive_p": {"target": 0.25},
        "grammar": {"removed": 0.125, "forced": True},
    }
    assert again.forced
    values = [*json.loads(scalars), None, None, None, False]
    assert unpack_step(json.dumps(values), blob, legacy, step.settings).reports == {}


def test_the_panel_line_is_the_units_own_or_its_figures_by_name() -> None:
    settings = SamplerSettings(mirostat=2, grammar='root ::= "a"')
    assert Mirostat.describe({"mu": 5.234}, settings) == "mirostat 2 μ 5.23"
    assert Grammar.describe({"removed": 0.5, "forced": True}, settings) == (
        "grammar (gbnf) removed 50.0% · forced: the one token allowed"
    )
    assert description(None, "gone", {"k": 3, "ok": True}, settings) == "gone k 3 · ok yes"


@dataclass(frozen=True)
class Counting(Stateless):
    """A plugin that counts the tokens it heard and reports the count."""

    name: ClassVar[str] = "counting"
    kind = "candidates"
    specs: ClassVar[tuple[SettingSpec, ...]] = (
        SettingSpec("counting", "int", default=0, off=0, label="counting", help="count"),
    )
    group_titles: ClassVar[dict[str, str]] = {"core": "core"}
    label: ClassVar[str] = "count"
    row_label: ClassVar[str] = "count"
    keeps_state: ClassVar[bool] = True
    heard: list[int] | None = None

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> Counting | None:
        return cls([]) if settings.value("counting") else None

    def apply(self, candidates: Candidates) -> None:
        del candidates

    def accept(self, token: int, prob: float) -> None:
        assert self.heard is not None
        self.heard.append(token)

    def report(self) -> Report:
        return {"heard": len(self.heard or [])}

    @property
    def state(self) -> UnitState:
        return tuple(self.heard or [])


@pytest.fixture
def counting() -> Iterator[SamplerSettings]:
    with_counting = joined(BUILT_IN_REGISTRY, Counting, "counting.py", "0" * 64)
    settings = SamplerSettings(with_counting, samplers=("counting", "temperature"), seed=2)
    yield settings.with_changes(counting=1)


def test_a_plugin_reports_and_its_state_is_seen_by_beam_search(
    counting: SamplerSettings,
) -> None:
    steps, _ = steps_of(counting, 3)
    assert [step.reports for step in steps] == [{"counting": {"heard": n}} for n in range(3)]
    assert build_chain(counting).keeping_state == ("counting",)
    question = [ChatMessage("user", "hi")]
    with pytest.raises(BeamSearchError, match="counting keeps state"):
        beam_search(FakeBackend(), question, counting, width=2, max_tokens=4)
    assert "count" in settings_summary(counting)  # its declarations give its part


def test_which_units_keep_state_is_their_declaration_not_their_name() -> None:
    keeping = {unit.name for unit in BUILT_IN_REGISTRY.units if unit.keeps_state}
    assert keeping == {"mirostat", "adaptive_p"}
    both = MIROSTAT.with_changes(adaptive_target=0.4)
    assert set(build_chain(both).keeping_state) == {"mirostat", "adaptive_p"}
    grammar = SamplerSettings(grammar='root ::= "a"', min_tokens=3)
    assert build_chain(grammar).keeping_state == ()  # the tokens give their state back


def test_a_resumed_samplers_state_is_still_a_value() -> None:
    steps, history = steps_of(MIROSTAT)
    sampler = Sampler(MIROSTAT)
    sampler.resume(3, steps[3].reports)
    state = sampler.state()
    hash(state)  # every part is an immutable value
    fresh = Sampler(MIROSTAT)
    fresh.restore(state)
    again = fresh.sample(LOGITS[3], history[:3], uniform=steps[3].draw)
    assert again.reports == steps[3].reports


def test_the_verbose_step_line_ends_with_each_units_figures() -> None:
    steps, _ = steps_of(MIROSTAT, 1)
    assert step_line(0, steps[0], "a").endswith(" mirostat.mu=6")
    plain, _ = steps_of(SamplerSettings(seed=1), 1)
    assert step_line(0, plain[0], "a").endswith("us")


@dataclass(frozen=True)
class Reporting(Stateless):
    """A plugin whose report is numpy's numbers, or (`bad`) not a mapping of figures."""

    name: ClassVar[str] = "reporting"
    kind = "candidates"
    specs: ClassVar[tuple[SettingSpec, ...]] = (
        SettingSpec("reporting", "int", default=0, off=0, label="reporting", help="report"),
    )
    group_titles: ClassVar[dict[str, str]] = {"core": "core"}
    label: ClassVar[str] = "rep"
    row_label: ClassVar[str] = "rep"
    bad: bool = False

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> Reporting | None:
        value = settings.value("reporting")
        return cls(value == 2) if value else None

    def apply(self, candidates: Candidates) -> None:
        del candidates

    def report(self) -> Report:
        if self.bad:
            return {"list": [1, 2]}  # type: ignore[dict-item]
        return {"p": np.float32(0.5), "yes": np.bool_(True)}


def test_a_plugins_report_takes_numpy_numbers_and_a_bad_one_switches_it_off() -> None:
    with_reporting = joined(BUILT_IN_REGISTRY, Reporting, "reporting.py", "1" * 64)
    base = SamplerSettings(with_reporting, samplers=("reporting", "temperature"), seed=2)
    (step,), _ = steps_of(base.with_changes(reporting=1), 1)
    assert step.reports == {"reporting": {"p": 0.5, "yes": True}}
    assert json.loads(pack_reports(step) or "") == {"reporting": {"p": 0.5, "yes": True}}
    (bad,), _ = steps_of(base.with_changes(reporting=2), 1)
    assert bad.reports == {}
    assert bad.notes == (
        "sampler plugin reporting switched off for this reply: its report must map names"
        " to numbers, yes/no or texts",
    )
