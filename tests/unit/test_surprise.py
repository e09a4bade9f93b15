"""Surprising tokens: the rule, its text in the config, and the cursor's jump."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from backend.chat.events import TokenEvent
from backend.config.config import ConfigError, effective_toml, load_config
from sampling.analysis.surprise import (
    DEFAULT_SURPRISE,
    SURPRISE_PRESETS,
    SurpriseRule,
    next_rule,
    parse_surprise,
)
from sampling.errors import SettingsError
from sampling.sampler import Sampler
from sampling.settings.record import SamplerSettings
from tui.chat.surprise_nav import surprising_after
from tui.widgets.token_look import (
    UNKNOWN_RANK_STYLE,
    TokenLook,
    TokenMarks,
    prob_style,
    rank_bucket,
    rank_style,
)


def step_with(logits: list[float]):  # type: ignore[no-untyped-def]
    """The step of a greedy draw (the argmax) over these logits."""
    settings = SamplerSettings(temperature=0.0, top_k=0, top_p=1.0, min_p=0.0, seed=1)
    return Sampler(settings, vocab_size=len(logits)).sample(np.array(logits, dtype=np.float32))


def test_parse_and_text_round_trip() -> None:
    assert parse_surprise("p<0.05") == SurpriseRule("p", 0.05) == DEFAULT_SURPRISE
    assert parse_surprise(" Surprise > 2 ") == SurpriseRule("surprise", 2.0)
    assert parse_surprise("p<1e-3").threshold == 0.001
    for rule in SURPRISE_PRESETS:
        assert parse_surprise(rule.text) == rule
    for bad in ("p>0.05", "surprise<2", "p<0", "p<1.5", "entropy>1", "p<", ""):
        with pytest.raises(SettingsError, match="surprise"):
            parse_surprise(bad)


def test_the_rules_judge_the_raw_probability() -> None:
    # Greedy over ln([0.5, 0.3, 0.2]): the draw's probability is 1, the raw one 0.5.
    confident = step_with([math.log(0.5), math.log(0.3), math.log(0.2)])
    assert confident.prob == 1.0 and confident.prob_unfiltered == pytest.approx(0.5)
    assert SurpriseRule("p", 0.6).matches(confident)
    assert not SurpriseRule("p", 0.49).matches(confident)
    # −ln 0.5 = 0.693 nats against an entropy of 1.030: less surprising than expected.
    assert confident.entropy == pytest.approx(1.0297, abs=1e-4)
    assert not SurpriseRule("surprise", 0.0).matches(confident)
    # A token drawn at p_raw = 0.01 from a peaked distribution (entropy ≈ 0.1 nats).
    logits = [math.log(0.98), math.log(0.01), math.log(0.01)]
    low = Sampler(
        SamplerSettings(temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, seed=1), vocab_size=3
    )
    draws = [low.sample(np.array(logits, dtype=np.float32)) for _ in range(400)]
    unlikely = next(s for s in draws if s.token_id != 0)
    assert unlikely.prob_unfiltered == pytest.approx(0.01, rel=1e-5)
    margin = -math.log(0.01) - unlikely.entropy  # 4.605 − 0.112 = 4.49 nats
    assert SurpriseRule("surprise", 4.4).matches(unlikely)
    assert not SurpriseRule("surprise", 4.6).matches(unlikely)
    assert margin == pytest.approx(4.49, abs=0.01)


def test_the_presets_cycle() -> None:
    seen = [DEFAULT_SURPRISE]
    for _ in SURPRISE_PRESETS:
        seen.append(next_rule(seen[-1]))
    assert seen[-1] == DEFAULT_SURPRISE and len(set(seen)) == len(SURPRISE_PRESETS)
    assert next_rule(SurpriseRule("p", 0.33)) == SURPRISE_PRESETS[0]


def test_the_config_sets_the_rule_and_names_a_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('theme = "x"\nsurprise = "surprise>1.5"\n', encoding="utf-8")
    config = load_config(path)
    assert config.surprise == SurpriseRule("surprise", 1.5)
    assert 'surprise = "surprise>1.5"' in effective_toml(config, model="m.gguf")
    path.write_text('theme = "x"\nsurprise = "p>0.1"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"line 2: surprise: invalid surprise='p>0.1'"):
        load_config(path)
    path.write_text("surprise = 0.1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="line 1"):
        load_config(path)


def test_the_cursor_jumps_across_replies_both_ways() -> None:
    # Greedy picks the likelier token: to get a raw p below 0.5 the step must be hot.
    low = Sampler(
        SamplerSettings(temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, seed=3), vocab_size=2
    )
    rows = np.array([math.log(0.97), math.log(0.03)], dtype=np.float32)
    drawn = [low.sample(rows) for _ in range(300)]
    rare = next(s for s in drawn if s.token_id == 1)
    common = next(s for s in drawn if s.token_id == 0)
    reply_a = [TokenEvent(i, s, "x", "x") for i, s in enumerate([common, rare, common, rare])]
    reply_b = [TokenEvent(i, s, "x", "x") for i, s in enumerate([common, common, rare])]
    replies = [reply_a, reply_b]
    rule = SurpriseRule("p", 0.05)
    assert surprising_after(replies, None, 1, rule) == (0, 1)
    assert surprising_after(replies, (0, 1), 1, rule) == (0, 3)
    assert surprising_after(replies, (0, 3), 1, rule) == (1, 2)
    assert surprising_after(replies, (1, 2), 1, rule) is None
    assert surprising_after(replies, None, -1, rule) == (1, 2)
    assert surprising_after(replies, (1, 2), -1, rule) == (0, 3)
    assert surprising_after(replies, (0, 1), -1, rule) is None
    assert surprising_after(replies, (0, 0), 1, SurpriseRule("p", 0.01)) is None
    assert surprising_after([], None, 1, rule) is None


def test_rank_buckets_are_gltrs() -> None:
    assert [rank_bucket(r) for r in (1, 10, 11, 100, 101, 1000, 1001, 50000)] == [
        0,
        0,
        1,
        1,
        2,
        2,
        3,
        3,
    ]
    assert len({rank_style(r) for r in (1, 50, 500, 5000)}) == 4
    assert rank_style(None) == UNKNOWN_RANK_STYLE
    by_rank = TokenMarks(colour=True, by_rank=True)
    assert by_rank.look(0, 0.9, 500) == TokenLook(None, rank_style(500))
    assert TokenMarks(colour=True).look(0, 0.9, 500) == TokenLook(None, prob_style(0.9))
    assert TokenMarks(by_rank=True).look(0, 0.9, 500) == TokenLook(None, None)  # colour off
