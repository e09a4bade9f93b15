"""The newer sampler flags: --samplers, --logit-bias by id or text, and one-line errors."""

from __future__ import annotations

import argparse
import math

import pytest

from sampling.built_in import BUILT_IN_REGISTRY
from sampling.chain import build_chain
from sampling.errors import SettingsError
from sampling.settings.record import SamplerSettings
from sampling.settings.registry import LLAMA_CPP_ORDER
from tui.cli.options.settings import add_settings_flags, bias_needs_tokenizer, settings_from_args

WORDS = {"hello": [9], " hello": [10], "hello world": [9, 11]}


def parse(*argv: str, tokenize: bool = False) -> SamplerSettings:
    parser = argparse.ArgumentParser()
    add_settings_flags(parser, BUILT_IN_REGISTRY)
    args = parser.parse_args(list(argv))
    return settings_from_args(args, SamplerSettings(), WORDS.__getitem__ if tokenize else None)


def test_samplers_takes_semicolons_or_commas_and_llama_cpp_aliases() -> None:
    assert parse("--samplers", "top_k;temperature;min_p").samplers == (
        "top_k",
        "temperature",
        "min_p",
    )
    assert parse("--samplers", "penalties,dry,top-k,typ,xtc").samplers == (
        "penalties",
        "dry",
        "top_k",
        "typ_p",
        "xtc",
    )
    with pytest.raises(SettingsError, match="'topq' is not a sampler"):
        parse("--samplers", "top_k;topq")


def test_logit_bias_by_id_and_by_text() -> None:
    assert parse("--logit-bias", "42=+2,17=-inf").logit_bias == ((17, -math.inf), (42, 2.0))
    settings = parse("--logit-bias", "hello=-inf,' hello'=1.5,3=-1", tokenize=True)
    assert settings.logit_bias == ((3, -1.0), (9, -math.inf), (10, 1.5))
    with pytest.raises(SettingsError, match=r"'hello world' is 2 tokens \[9, 11\]"):
        parse("--logit-bias", "hello world=-inf", tokenize=True)
    with pytest.raises(SettingsError, match="no model is loaded"):
        parse("--logit-bias", "hello=-inf")
    with pytest.raises(SettingsError, match="not a number"):
        parse("--logit-bias", "42=much")


def test_only_text_entries_need_the_model() -> None:
    parser = argparse.ArgumentParser()
    add_settings_flags(parser, BUILT_IN_REGISTRY)
    assert bias_needs_tokenizer(parser.parse_args(["--logit-bias", "hello=1"]))
    assert not bias_needs_tokenizer(parser.parse_args(["--logit-bias", "42=1"]))
    assert not bias_needs_tokenizer(parser.parse_args([]))


def test_every_newer_setting_has_a_flag() -> None:
    settings = parse(
        "--typical-p", "0.9", "--top-n-sigma", "1.5", "--xtc-probability", "0.5",
        "--xtc-threshold", "0.2", "--dry-multiplier", "0.8", "--dry-base", "2",
        "--dry-allowed-length", "3", "--dry-penalty-last-n", "-1",
        "--dry-sequence-breakers", '["\\n", "###"]', "--mirostat", "2",
        "--mirostat-tau", "4", "--mirostat-eta", "0.2", "--dynatemp-range", "0.5",
        "--dynatemp-exponent", "2",
    )  # fmt: skip
    assert settings.dry_sequence_breakers == ("\n", "###")
    assert (settings.mirostat, settings.dry_penalty_last_n, settings.typical_p) == (2, -1, 0.9)
    with pytest.raises(SettingsError, match="mirostat"):
        parse("--mirostat", "3")


def test_compare_set_takes_every_newer_setting() -> None:
    from tui.cli.options.setting_sets import parse_set

    settings = parse_set("samplers=top_k;temperature;min_p,dry=0.8,bias=42=+2;7=-inf,typ=0.9")
    assert settings.samplers == ("top_k", "temperature", "min_p")
    assert settings.logit_bias == ((7, -math.inf), (42, 2.0))
    assert (settings.dry_multiplier, settings.typical_p) == (0.8, 0.9)
    with pytest.raises(SettingsError, match="xtc_probability"):
        parse_set("xtc=2")


def test_settings_stored_before_the_newer_samplers_replay_as_they_ran() -> None:
    import json

    from backend.store.records import settings_json

    old = {
        "temperature": 0.8,
        "top_k": 40,
        "top_p": 0.95,
        "top_p_scope": "kept",
        "min_p": 0.05,
        "repeat_penalty": 1.1,
        "repeat_last_n": 64,
        "frequency_penalty": 0.0,
        "presence_penalty": 0.0,
        "temperature_last": False,
        "draw": "inverse_cdf",
        "rng": "pcg64",
        "seed": 42,
    }
    settings = SamplerSettings.from_dict(old)
    # Temperature first, as every chat stored then ran (the newer samplers are off:
    # the order names them, in the registry's order, and they do not run).
    named = tuple(name for name in settings.order if name in LLAMA_CPP_ORDER)
    assert named[:3] == ("penalties", "dry", "temperature")
    assert named[3:] == ("top_n_sigma", "top_k", "typ_p", "top_p", "min_p", "xtc")
    assert build_chain(settings).names == ("penalties", "temperature", "top_k", "top_p", "min_p")
    assert SamplerSettings.from_dict(json.loads(settings_json(settings))) == settings
    biased = settings.with_changes(logit_bias=((3, -math.inf),), samplers=("top_k", "min_p"))
    assert SamplerSettings.from_dict(json.loads(settings_json(biased))) == biased
