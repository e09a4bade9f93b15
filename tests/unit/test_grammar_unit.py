"""The grammar unit over a fake constraint: the kept set, the mass removed, forced
tokens, the dead end, greedy, the state restored, and the settings."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import pytest

from sampling import Sampler, SamplerSettings, settings_summary
from sampling.built_in import BUILT_IN_REGISTRY
from sampling.constraint import GrammarSpec
from sampling.errors import GrammarDeadEnd, GrammarError
from sampling.samplers.grammar import GrammarParams
from tests.grammar_fakes import Words
from tui.cli.options.settings import add_settings_flags, settings_from_args

LOGITS = np.array([2.0, 1.0, 0.5, 0.0, -1.0, -3.0], dtype=np.float32)
GRAMMAR = 'root ::= "x"'


def softmax(values: np.ndarray) -> np.ndarray:
    weights = np.exp(values.astype(np.float64) - values.max())
    return weights / weights.sum()


def sampler_over(allowed: list[frozenset[int]], **changes: object) -> tuple[Sampler, Words]:
    words = Words(LOGITS.shape[0], allowed)
    settings = SamplerSettings(grammar=GRAMMAR, seed=3).with_changes(**changes)
    return Sampler(settings, vocabulary=words), words


def test_the_kept_set_is_what_the_grammar_allows_with_the_mass_it_removed() -> None:
    sampler, _ = sampler_over([frozenset({1, 3, 4})])
    step = sampler.sample(LOGITS, [5, 5])
    probs = softmax(LOGITS)
    assert step.token_id in (1, 3, 4)
    assert step.n_kept == 3
    assert step.cut_by == "grammar"
    assert step.figure("grammar", "removed") == pytest.approx(
        probs[0] + probs[2] + probs[5], rel=1e-12
    )
    assert step.forced is False
    table = step.table
    removed = dict(zip(table.token_ids.tolist(), table.removed_by, strict=True))
    assert removed == {0: "grammar", 1: "", 2: "grammar", 3: "", 4: "", 5: "grammar"}
    kept = probs[[1, 3, 4]] / probs[[1, 3, 4]].sum()
    after = dict(zip(table.token_ids.tolist(), table.prob_after.tolist(), strict=True))
    assert [after[t] for t in (1, 3, 4)] == pytest.approx(kept.tolist(), rel=1e-12)


def test_golden_mass_and_probabilities() -> None:
    # Allowed {1, 3}: kept mass e^1 + e^0 of e^2 + e^1 + e^.5 + e^0 + e^-1 + e^-3.
    sampler, _ = sampler_over([frozenset({1, 3})])
    step = sampler.sample(LOGITS, [])
    total = sum(math.exp(x) for x in (2.0, 1.0, 0.5, 0.0, -1.0, -3.0))
    assert step.figure("grammar", "removed") == pytest.approx(1 - (math.e + 1.0) / total, rel=1e-12)
    assert step.figure("grammar", "removed") == pytest.approx(0.71775, abs=5e-6)
    assert step.prob == pytest.approx(
        math.e / (math.e + 1) if step.token_id == 1 else 1 / (math.e + 1), rel=1e-12
    )


def test_a_single_legal_token_is_forced() -> None:
    sampler, _ = sampler_over([frozenset({4})])
    step = sampler.sample(LOGITS, [])
    assert (step.token_id, step.prob, step.forced, step.n_kept) == (4, 1.0, True, 1)


def test_the_grammar_follows_the_reply_from_the_history() -> None:
    sampler, words = sampler_over([frozenset({2}), frozenset({0, 5}), frozenset({3})])
    prompt = [1, 1, 1]
    first = sampler.sample(LOGITS, prompt)
    assert first.token_id == 2
    second = sampler.sample(LOGITS, [*prompt, 2])
    assert second.token_id in (0, 5)
    # The reply takes 5 whatever was drawn (a forced token): the grammar follows it.
    third = sampler.sample(LOGITS, [*prompt, 2, 5])
    assert third.token_id == 3 and third.forced
    assert words.built[0].taken == [2, 5]
    assert len(words.built) == 1  # built once per sampler


def test_no_legal_token_is_a_dead_end() -> None:
    sampler, _ = sampler_over([frozenset()])
    with pytest.raises(GrammarDeadEnd, match="allows none"):
        sampler.sample(LOGITS, [])


def test_a_ban_can_leave_the_grammar_nothing() -> None:
    sampler, _ = sampler_over([frozenset({3})], logit_bias=((3, -math.inf),))
    with pytest.raises(GrammarDeadEnd):
        sampler.sample(LOGITS, [])


def test_greedy_takes_the_best_legal_token_and_names_the_cut() -> None:
    sampler, _ = sampler_over([frozenset({2, 4})], temperature=0.0)
    step = sampler.sample(LOGITS, [])
    assert step.token_id == 2 and step.cut_by == "greedy"
    removed = dict(zip(step.table.token_ids.tolist(), step.table.removed_by, strict=True))
    assert removed[0] == "grammar" and removed[4] == "greedy" and removed[2] == ""


def test_the_grammar_runs_before_every_filter() -> None:
    # top-k 1 after the grammar keeps the best legal token, never an empty set.
    sampler, _ = sampler_over([frozenset({3, 5})], top_k=1, samplers="top_k;temperature")
    assert sampler.chain.names[0] == "grammar"
    step = sampler.sample(LOGITS, [])
    assert step.token_id == 3 and step.cut_by == "top_k"


def test_rewind_restores_the_grammar() -> None:
    sampler, words = sampler_over([frozenset({2}), frozenset({0, 5}), frozenset({3})])
    prompt = [1]
    sampler.sample(LOGITS, prompt)
    state = sampler.state()
    second = sampler.sample(LOGITS, [*prompt, 2])
    sampler.sample(LOGITS, [*prompt, 2, second.token_id])
    sampler.restore(state)
    again = sampler.sample(LOGITS, [*prompt, 2])
    assert again.token_id == second.token_id and again.draw == second.draw
    assert words.built[-1].taken == [2]


def test_a_what_if_at_step_n_takes_the_reply_so_far() -> None:
    words = Words(LOGITS.shape[0], [frozenset({2}), frozenset({0, 5}), frozenset({3})])
    sampler = Sampler(SamplerSettings(grammar=GRAMMAR), vocabulary=words)
    sampler.resume(2)
    step = sampler.sample(LOGITS, [1, 1, 2, 0])
    assert step.token_id == 3 and step.forced
    assert words.built[0].taken == [2, 0]


def test_settings_hold_grammar_schema_and_triggers() -> None:
    settings = SamplerSettings(json_schema='{"type": "boolean"}', grammar_triggers="\\{")
    assert settings.grammar_triggers == ("\\{",)
    assert settings.of(GrammarParams).spec == GrammarSpec("", '{"type": "boolean"}', ("\\{",))
    assert SamplerSettings().of(GrammarParams).spec is None
    assert settings_summary(settings) == 't=1 json-schema grammar_triggers=["\\\\{"]'
    assert SamplerSettings.from_dict(settings.to_dict()) == settings


def test_a_comma_inside_a_trigger_regex_does_not_split_it() -> None:
    parser = argparse.ArgumentParser()
    add_settings_flags(parser, BUILT_IN_REGISTRY)
    args = parser.parse_args(["--grammar-triggers", "x{1,3},foo"])
    assert settings_from_args(args, SamplerSettings()).grammar_triggers == ("x{1,3}", "foo")
    cases = {
        "(a,b)|[,;],c\\,d,\\d+": ("(a,b)|[,;]", "c\\,d", "\\d+"),
        "[{],x": ("[{]", "x"),
        "[0-9]+": ("[0-9]+",),
        '["a,b", "c"]': ("a,b", "c"),
    }
    for text, triggers in cases.items():
        assert SamplerSettings(grammar_triggers=text).grammar_triggers == triggers
    assert SamplerSettings(dry_sequence_breakers="(,)").dry_sequence_breakers == ("(", ")")


def test_without_a_constraint_source_the_grammar_is_an_error() -> None:
    sampler = Sampler(SamplerSettings(grammar=GRAMMAR))
    with pytest.raises(GrammarError, match="cannot run a grammar"):
        sampler.sample(LOGITS, [])


def test_the_reply_score_totals_the_grammar() -> None:
    from sampling.analysis.reply_score import reply_score

    sampler, _ = sampler_over([frozenset({1, 3}), frozenset({4})])
    first = sampler.sample(LOGITS, [])
    second = sampler.sample(LOGITS, [first.token_id])
    score = reply_score([first, second])
    assert score is not None
    r1, r2 = first.figure("grammar", "removed"), second.figure("grammar", "removed")
    assert r1 is not None and r2 is not None
    assert score.grammar_removed == pytest.approx(r1 + r2, rel=1e-12)
    assert score.grammar_kept_logprob == pytest.approx(math.log((1 - r1) * (1 - r2)), rel=1e-12)
    assert score.forced_tokens == 1
    plain = reply_score([Sampler(SamplerSettings()).sample(LOGITS, [])])
    assert plain is not None and plain.grammar_removed is None and plain.forced_tokens == 0


def test_llama_server_presets_carry_the_grammar_and_schema() -> None:
    from backend.config.llama_server_format import (
        completion_body,
        import_completion_body,
        import_server_flags,
        server_flags,
    )
    from backend.config.sillytavern_format import export_sillytavern

    schema = '{"type": "object", "properties": {"ok": {"type": "boolean"}}}'
    for changes in ({"grammar": GRAMMAR}, {"json_schema": schema}):
        settings = SamplerSettings(**changes)  # type: ignore[arg-type]
        body, unmapped = completion_body(settings)
        assert unmapped == []
        (name, value), *_ = changes.items()
        assert import_completion_body(body).changes[name] == value
        words, _ = server_flags(settings)
        assert import_server_flags(words).changes[name] == value
        _, left = export_sillytavern(settings)
        assert [entry.name for entry in left] == list(changes)
    assert completion_body(SamplerSettings(json_schema=schema))[0]["json_schema"] == {
        "type": "object",
        "properties": {"ok": {"type": "boolean"}},
    }
    lazy = SamplerSettings(grammar=GRAMMAR, grammar_triggers=("x",))
    assert [entry.name for entry in completion_body(lazy)[1]] == ["grammar_triggers"]


def test_the_config_file_sets_a_grammar(tmp_path: Path) -> None:
    from backend.config.config import load_config, settings_with_config
    from sampling import DEFAULT_CHAT_SETTINGS

    path = tmp_path / "config.toml"
    path.write_text(
        "[settings]\ngrammar = '''\nroot ::= answer\nanswer ::= \"yes\" | \"no\"\n'''\n"
        'grammar_triggers = ["Answer"]\n',
        encoding="utf-8",
    )
    settings = settings_with_config(DEFAULT_CHAT_SETTINGS, load_config(path))
    assert settings.grammar == 'root ::= answer\nanswer ::= "yes" | "no"'
    assert settings.grammar_triggers == ("Answer",)
