"""Lockstep sweeps are batch-invariant: each sample equals `generate` alone with its
settings and seed, and the sweep in turn gives the same samples."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from backend.chat.events import FinishedEvent, TokenEvent
from backend.chat.protocol import LiveSettings
from backend.session.llama_backend import LlamaBackend
from backend.session.sweep import SweepSample, run_sweep
from tests.model.test_sweep import PLAN


def test_each_sample_equals_generate_alone(llama_backend: LlamaBackend) -> None:
    llama_backend.reset()
    samples = [e for e in run_sweep(llama_backend, PLAN) if isinstance(e, SweepSample)]
    assert sorted((s.key.setting, s.key.sample) for s in samples) == [
        (0, 0),
        (0, 1),
        (1, 0),
        (1, 1),
    ]
    for sample in samples:
        assert sample.settings == PLAN.settings_of(sample.key)
        llama_backend.reset()
        alone = list(
            llama_backend.generate(
                PLAN.messages(0), LiveSettings(sample.settings), max_tokens=PLAN.max_tokens
            )
        )
        finished = alone[-1]
        assert isinstance(finished, FinishedEvent)
        assert finished.token_ids == sample.finished.token_ids
        assert finished.text == sample.finished.text
        steps = [e.step for e in alone if isinstance(e, TokenEvent)]
        assert [s.prob for s in steps] == [s.prob for s in sample.steps]
        assert [s.prob_unfiltered for s in steps] == [s.prob_unfiltered for s in sample.steps]


def test_in_turn_gives_the_same_samples(llama_backend: LlamaBackend) -> None:
    llama_backend.reset()
    lockstep = {
        e.key: e.finished.token_ids
        for e in run_sweep(llama_backend, PLAN)
        if isinstance(e, SweepSample)
    }
    in_turn = [
        e for e in run_sweep(llama_backend, PLAN, in_turn=True) if isinstance(e, SweepSample)
    ]
    assert [e.key for e in in_turn] == list(PLAN.keys)
    assert {e.key: e.finished.token_ids for e in in_turn} == lockstep


def test_eight_samples_in_one_batch_equal_generate_alone(default_model_path: Path) -> None:
    plan = replace(PLAN, samples=4, max_tokens=12)
    backend = LlamaBackend.load(default_model_path, n_ctx=1024, n_threads=1, n_seq_max=8)
    try:
        samples = [e for e in run_sweep(backend, plan) if isinstance(e, SweepSample)]
        assert len(samples) == 8 and all(s.finished.decoding is not None for s in samples)
        for sample in samples:
            alone = list(
                backend.generate(
                    plan.messages(0), LiveSettings(sample.settings), max_tokens=plan.max_tokens
                )
            )
            steps = [e.step for e in alone if isinstance(e, TokenEvent)]
            assert tuple(s.token_id for s in steps) == sample.finished.token_ids
            assert [s.prob for s in steps] == [s.prob for s in sample.steps]
    finally:
        backend.close()
