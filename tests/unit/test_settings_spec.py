"""The settings spec: one entry per field, and everything derived from it agrees."""

from __future__ import annotations

import argparse
import math

import pytest

from sampling.built_in import BUILT_IN_REGISTRY, DEFAULT_CHAT_SETTINGS
from sampling.errors import SamplescopeError, SettingsError
from sampling.settings.record import SamplerSettings
from sampling.settings.spec import MAX_SEED, SettingSpec
from sampling.settings.summary import settings_summary
from tui.cli.commands.app import build_app_parser
from tui.cli.main import build_parser
from tui.cli.options.setting_sets import SetArgumentError, parse_set, short_keys
from tui.cli.options.settings import add_settings_flags, settings_from_args
from tui.compare.columns import coerce_value, compare_fields

FIELDS = [
    "temperature",
    "top_k",
    "top_p",
    "top_p_scope",
    "min_p",
    "repeat_penalty",
    "repeat_last_n",
    "frequency_penalty",
    "presence_penalty",
    "temperature_last",
    "draw",
    "rng",
    "seed",
    "typical_p",
    "top_n_sigma",
    "xtc_probability",
    "xtc_threshold",
    "dry_multiplier",
    "dry_base",
    "dry_allowed_length",
    "dry_penalty_last_n",
    "dry_sequence_breakers",
    "mirostat",
    "mirostat_tau",
    "mirostat_eta",
    "dynatemp_range",
    "dynatemp_exponent",
    "top_a",
    "tfs",
    "epsilon_cutoff",
    "eta_cutoff",
    "smoothing_factor",
    "smoothing_curve",
    "adaptive_target",
    "adaptive_decay",
    "min_tokens",
    "logit_bias",
    "grammar",
    "json_schema",
    "grammar_triggers",
    "p_less",  # units that declare no rank: after those that do, in the registry's order
    "guidance_scale",
    "negative_prompt",
    "negative_system",
    "contrast_beta",
    "contrast_alpha",
    "control_strength",
    "reasoning_budget",
    "reasoning_budget_message",
    "thinking_tags",
    "think_set",
    "samplers",
]
"""Every built-in setting in the order the units declare (`SettingSpec.rank`)."""
NUMBERS = [spec for spec in BUILT_IN_REGISTRY.settings if spec.is_number]
SWITCHES = [spec for spec in BUILT_IN_REGISTRY.settings if spec.is_scalar and not spec.is_number]
SEVERAL = [spec for spec in BUILT_IN_REGISTRY.settings if not spec.is_scalar]
#: A valid value other than the default for some fields (the others: `changed_value`).
CHOSEN: dict[str, object] = {
    "temperature": 0.25,
    "top_k": 7,
    "top_p": 0.5,
    "top_p_scope": "vocab",
    "min_p": 0.125,
    "repeat_penalty": 1.5,
    "repeat_last_n": 32,
    "frequency_penalty": -0.75,
    "presence_penalty": 0.5,
    "temperature_last": True,
    "draw": "gumbel",
    "rng": "xorshift128",
    "seed": MAX_SEED,
    "typical_p": 0.5,
    "top_n_sigma": 1.5,
    "xtc_probability": 0.5,
    "xtc_threshold": 0.25,
    "dry_multiplier": 0.8,
    "dry_base": 2.0,
    "dry_allowed_length": 3,
    "dry_penalty_last_n": -1,
    "dry_sequence_breakers": ("\n", "a,b"),
    "mirostat": 2,
    "mirostat_tau": 4.0,
    "mirostat_eta": 0.25,
    "dynatemp_range": 0.5,
    "dynatemp_exponent": 2.0,
    "logit_bias": ((17, -math.inf), (42, 2.0)),
    # The order given; CHANGED holds it as stored (below).
    "samplers": (
        "penalties",
        "top_k",
        "temperature",
        "smoothing",
        "epsilon_cutoff",
        "eta_cutoff",
        "tfs",
        "top_a",
        "min_p",
        "adaptive_p",
    ),
    "top_a": 0.25,
    "tfs": 0.95,
    "epsilon_cutoff": 0.0005,
    "eta_cutoff": 0.002,
    "smoothing_factor": 0.5,
    "smoothing_curve": 2.0,
    "adaptive_target": 0.5,
    "adaptive_decay": 0.5,
    "min_tokens": 16,
    "think_set": ("temperature=0.6", "top_k=20"),  # the thinking's own: key=value pairs
}


def changed_value(spec: SettingSpec) -> object:
    """A valid value other than the default, read off the spec of a setting."""
    if spec.kind in ("bool", "choice"):
        return next(value for value in spec.choice_values if value != spec.default)
    if spec.kind == "texts":
        return ("\n", "a,b")
    if spec.kind == "bias":
        return ((17, -math.inf), (42, 2.0))
    if spec.kind == "text":
        return 'root ::= "yes" | "no"'
    if spec.kind == "order":
        return tuple(reversed([str(n) for n in spec.choice_values if n not in spec.leading]))
    assert spec.slider is not None
    candidates = (*spec.variations, spec.slider.soft_max, spec.slider.soft_min)
    return next(value for value in candidates if value != spec.default and spec.accepts(value))


#: A valid value other than the default for every field: what the round trips set.
CHANGED: dict[str, object] = {
    spec.name: CHOSEN[spec.name] if spec.name in CHOSEN else changed_value(spec)
    for spec in BUILT_IN_REGISTRY.settings
}
# Every sampler CHANGED switches on is named: a missing name joins the order given
# where its placement puts it, and the stored order is that one.
CHANGED["samplers"] = SamplerSettings().with_changes(**CHANGED).samplers
assert set(CHOSEN["samplers"]) <= set(CHANGED["samplers"])  # type: ignore[call-overload]


def ids(spec: SettingSpec) -> str:
    return spec.name


def one_changed(name: str, value: object) -> SamplerSettings:
    """`SamplerSettings()` with one field set, through the constructor's validation."""
    return SamplerSettings().with_changes(**{name: value})


# --- the spec covers the record ---------------------------------------------------------


def test_every_field_has_one_spec_in_field_order_with_its_default() -> None:
    assert [spec.name for spec in BUILT_IN_REGISTRY.settings] == FIELDS
    assert list(BUILT_IN_REGISTRY.settings_by_name) == FIELDS
    defaults = SamplerSettings()
    assert {s.name: s.default for s in BUILT_IN_REGISTRY.settings} == {
        n: getattr(defaults, n) for n in FIELDS
    }
    assert sorted(CHANGED) == sorted(FIELDS)
    for (
        spec
    ) in BUILT_IN_REGISTRY.settings:  # the value read off a spec is valid and not the default
        value = changed_value(spec)
        assert spec.accepts(value) and value != spec.default, spec.name


def test_display_order_lists_numbers_then_switches_each_in_field_order() -> None:
    assert [s.name for s in BUILT_IN_REGISTRY.display_order] == [s.name for s in NUMBERS + SWITCHES]
    assert [s.name for s in BUILT_IN_REGISTRY.display_order][len(NUMBERS) :][:4] == [
        "top_p_scope",
        "temperature_last",
        "draw",
        "rng",
    ]


@pytest.mark.parametrize("spec", BUILT_IN_REGISTRY.settings, ids=ids)
def test_off_default_and_slider_limits_are_valid_values(spec: SettingSpec) -> None:
    for value in (spec.default, spec.off):
        if value is not None:
            assert getattr(one_changed(spec.name, value), spec.name) == value
    assert len(spec.label) <= 12  # the controls' label width
    if spec.is_number:
        assert spec.slider is not None and not spec.choices
        slider = spec.slider
        assert slider.hard_min <= slider.soft_min < slider.soft_max <= slider.hard_max
        assert 0 < slider.fine < slider.coarse
        for limit in (slider.hard_min, slider.soft_min, slider.soft_max, slider.hard_max):
            assert spec.accepts(int(limit) if spec.kind == "int" else limit), limit
    elif not spec.is_scalar:
        # An order's choices are the sampler names it may hold, each with its label.
        assert spec.slider is None and bool(spec.choices) == (spec.kind == "order")
        assert spec.parse(spec.format(spec.default)) == spec.default
    else:
        assert spec.slider is None and len(spec.choices) >= 2
        for value in spec.choice_values:
            one_changed(spec.name, value)
        assert spec.default in spec.choice_values


def bad_values(spec: SettingSpec) -> list[object]:
    """Values of the wrong type, or just outside the range, for one setting."""
    if spec.kind == "bool":
        return [1, 0, "true", None]
    if spec.kind == "choice":
        return ["nope", str(spec.default).upper(), None, True]
    if spec.kind == "order":
        return [("top_k", "top_k"), ("top_k", "penalties"), ("nope",), ["top_k", "top_k"], 3]
    if spec.kind == "bias":
        return [((1, "2"),), ((1.5, 1.0),), ((-1, 1.0),), ((1, math.inf),), [(1, math.nan)], 42]
    if spec.kind == "texts":
        return [("",), (1,), [""], 7]
    if spec.kind == "text":
        return [None, 7, b"root", ("root",)]
    values: list[object] = [True, None, "1", [1]]
    if spec.kind == "int":
        values += [1.0, 2.5]
    else:
        values += [math.nan, math.inf, -math.inf]
    step = 1 if spec.kind == "int" else 1e-9
    if spec.minimum is not None:
        values.append(spec.minimum if spec.minimum_open else spec.minimum - step)
    if spec.maximum is not None:
        values.append(spec.maximum if spec.maximum_open else spec.maximum + step)
    return values


@pytest.mark.parametrize("spec", BUILT_IN_REGISTRY.settings, ids=ids)
def test_each_bad_value_is_refused_naming_the_field(spec: SettingSpec) -> None:
    for value in bad_values(spec):
        with pytest.raises(SettingsError) as caught:
            one_changed(spec.name, value)
        error = caught.value
        assert isinstance(error, SamplescopeError) and isinstance(error, ValueError)
        assert error.field == spec.name and error.value is value
        assert str(error) == f"invalid {spec.name}={value!r}: expected {spec.expected}"
        with pytest.raises(SettingsError, match=spec.name):
            DEFAULT_CHAT_SETTINGS.with_changes(**{spec.name: value})


def test_a_bad_value_is_refused_even_when_another_field_is_fine() -> None:
    with pytest.raises(SettingsError) as caught:
        SamplerSettings(temperature=0.5, top_k=-1, seed=3)
    assert caught.value.field == "top_k"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("temperature", "a number >= 0"),
        ("top_k", "an integer >= 0 (0 is off)"),
        ("top_p", "a number in (0, 1] (1 is off)"),
        ("min_p", "a number in [0, 1) (0 is off)"),
        ("repeat_penalty", "a number > 0 (1 is off)"),
        ("repeat_last_n", "an integer >= 0 (0 is off)"),
        ("frequency_penalty", "a finite number (0 is off)"),
        ("temperature_last", "true or false"),
        ("top_p_scope", "'kept' or 'vocab'"),
        ("draw", "'inverse_cdf' or 'gumbel'"),
        ("rng", "'pcg64' or 'xorshift128'"),
        ("seed", f"an integer from 0 to {MAX_SEED}"),
    ],
)
def test_expected_says_what_a_valid_value_looks_like(name: str, expected: str) -> None:
    assert BUILT_IN_REGISTRY.settings_by_name[name].expected == expected


# --- flags ------------------------------------------------------------------------------


def subcommand_parser(name: str) -> argparse.ArgumentParser:
    actions = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    parser = actions[0].choices[name]
    assert isinstance(parser, argparse.ArgumentParser)
    return parser


def flag_argv(spec: SettingSpec, value: object) -> list[str]:
    """The command-line words that set one setting to `value`."""
    if spec.kind == "bool":
        return [spec.flag if value else "--no-" + spec.flag.removeprefix("--")]
    return [spec.flag, spec.format(value)]  # type: ignore[arg-type]


@pytest.mark.parametrize("command", ["app", "generate", "dist"])
def test_every_field_has_a_flag_on_every_command(command: str) -> None:
    parser = build_app_parser() if command == "app" else subcommand_parser(command)
    options = {o for action in parser._actions for o in action.option_strings}
    assert {spec.flag for spec in BUILT_IN_REGISTRY.settings} <= options
    assert {"-t", "-k", "-p", "-s", "--no-temperature-last"} <= options


@pytest.mark.parametrize("spec", BUILT_IN_REGISTRY.settings, ids=ids)
def test_flag_round_trip(spec: SettingSpec) -> None:
    parser = argparse.ArgumentParser()
    add_settings_flags(parser, BUILT_IN_REGISTRY)
    value = CHANGED[spec.name]
    settings = settings_from_args(parser.parse_args(flag_argv(spec, value)), SamplerSettings())
    assert settings == SamplerSettings().with_changes(**{spec.name: value})
    if spec.kind == "bool":  # the --no- form turns it back off over a base that has it on
        args = parser.parse_args(flag_argv(spec, spec.off))
        assert getattr(settings_from_args(args, settings), spec.name) == spec.off


def test_all_flags_at_once_and_the_short_ones() -> None:
    parser = argparse.ArgumentParser()
    add_settings_flags(parser, BUILT_IN_REGISTRY)
    # A grammar and a JSON schema are refused together (the schema would win): the
    # schema's flag is read on its own.
    argv = [
        word
        for spec in BUILT_IN_REGISTRY.settings
        if spec.name != "json_schema"
        for word in flag_argv(spec, CHANGED[spec.name])
    ]
    expected = {**CHANGED, "json_schema": DEFAULT_CHAT_SETTINGS.json_schema}
    assert settings_from_args(parser.parse_args(argv), DEFAULT_CHAT_SETTINGS).to_dict() == expected
    schema = flag_argv(BUILT_IN_REGISTRY.settings_by_name["json_schema"], CHANGED["json_schema"])
    read = settings_from_args(parser.parse_args(schema), DEFAULT_CHAT_SETTINGS)
    assert read.json_schema == CHANGED["json_schema"]
    short = parser.parse_args(["-t", "0", "-k", "5", "-p", "0.9", "-s", "11"])
    settings = settings_from_args(short, DEFAULT_CHAT_SETTINGS)
    assert (settings.temperature, settings.top_k, settings.top_p, settings.seed) == (0, 5, 0.9, 11)
    assert settings_from_args(parser.parse_args([]), DEFAULT_CHAT_SETTINGS) == DEFAULT_CHAT_SETTINGS


def test_a_choice_flag_refuses_an_unknown_value(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    add_settings_flags(parser, BUILT_IN_REGISTRY)
    with pytest.raises(SystemExit):
        parser.parse_args(["--rng", "mt19937"])
    assert "xorshift128" in capsys.readouterr().err
    with pytest.raises(SettingsError, match="repeat_last_n"):
        settings_from_args(parser.parse_args(["--repeat-last-n", "-1"]), SamplerSettings())


# --- compare: fields, typed values, --set -----------------------------------------------


def test_compare_may_vary_every_field_but_the_seed() -> None:
    # and the control vectors' strength: one model, one strength for every column
    shared = {"seed", "control_strength"}
    scalar = {spec.name for spec in BUILT_IN_REGISTRY.settings if spec.is_scalar}
    variable, variations = compare_fields().variable, compare_fields().variations
    assert sorted(variable) == sorted(scalar - shared)
    assert list(variable) == [
        s.name for s in BUILT_IN_REGISTRY.display_order if s.name not in shared
    ]
    assert list(variations) == ["temperature", "top_k", "top_p", "min_p", "repeat_penalty"]
    for name, values in variations.items():
        for value in values:
            one_changed(name, value)


@pytest.mark.parametrize("spec", BUILT_IN_REGISTRY.settings, ids=ids)
def test_typed_text_becomes_the_fields_type(spec: SettingSpec) -> None:
    value = CHANGED[spec.name]
    text = spec.format(value)  # type: ignore[arg-type]
    spaced = f" {text} " if spec.verbatim else value  # text the model writes keeps its spaces
    assert coerce_value(spec.name, f" {text} ") == spaced
    assert type(coerce_value(spec.name, text)) is type(value)
    if spec.is_number:
        with pytest.raises(SettingsError, match=spec.name):
            coerce_value(spec.name, "many")
    if spec.kind == "float":
        assert type(coerce_value(spec.name, 1)) is float


def test_set_keys_are_the_short_keys_and_the_field_names() -> None:
    keys = short_keys()
    assert keys["t"] == "temperature" and keys["k"] == "top_k" and keys["p"] == "top_p"
    for spec in BUILT_IN_REGISTRY.settings:
        assert BUILT_IN_REGISTRY.find_setting(spec.name) is spec
        assert BUILT_IN_REGISTRY.find_setting(spec.name.replace("_", "-")) is spec
        if spec.short_key:
            assert BUILT_IN_REGISTRY.find_setting(spec.short_key) is spec
    assert BUILT_IN_REGISTRY.find_setting("warmth") is None
    variable = compare_fields().variable
    every = ",".join(f"{name}={CHANGED[name]}" for name in variable)
    changed = {name: CHANGED[name] for name in variable}
    assert parse_set(every) == SamplerSettings().with_changes(**changed)
    assert parse_set("t=0.8, k=40 ,min-p=0.05") == SamplerSettings(
        temperature=0.8, top_k=40, min_p=0.05
    )


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("q=1", "unknown key 'q'"),
        ("t=1,seed=5", "every column shares one seed; give it with -s/--seed"),
        ("t", "'t' is not key=value"),
    ],
)
def test_set_refuses_what_it_cannot_read(text: str, words: str) -> None:
    with pytest.raises(SetArgumentError, match=words):
        parse_set(text)


def test_set_refuses_a_bad_value_naming_the_field() -> None:
    with pytest.raises(SettingsError, match="temperature"):
        parse_set("t=hot")
    with pytest.raises(SettingsError, match="top_p"):
        parse_set("p=1.5")


# --- the one summary --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "active", "fixed"),
    [
        (
            DEFAULT_CHAT_SETTINGS,  # llama.cpp's chain: the temperature last
            "t=0.8 k=40 p=0.95 min_p=0.05 t-last",
            "T 0.80 · k 40 · p 0.95 · min-p 0.05 · rep 1.00×64",
        ),
        (
            SamplerSettings(temperature=0.0, top_k=5, temperature_last=True),
            "greedy k=5",
            "T 0.00 · k 5 · p 1.00 · min-p 0.00 · rep 1.00×0",
        ),
        (
            SamplerSettings(
                top_p=0.9,
                top_p_scope="vocab",
                repeat_penalty=1.3,
                repeat_last_n=64,
                frequency_penalty=0.5,
                presence_penalty=-0.25,
                temperature_last=True,
                draw="gumbel",
                rng="xorshift128",
                seed=9,
            ),
            "t=1 p=0.9(vocab) rep=1.3/64 freq=0.5 pres=-0.25 t-last gumbel xorshift128",
            "T 1.00 · k 0 · p 0.90 · min-p 0.00 · rep 1.30×64",
        ),
        # Penalties without a window and a scope without top-p change nothing: left out.
        (
            SamplerSettings(repeat_penalty=1.3, frequency_penalty=1.0, top_p_scope="vocab"),
            "t=1",
            "T 1.00 · k 0 · p 1.00 · min-p 0.00 · rep 1.30×0",
        ),
        (SamplerSettings(top_k=1_000_000), "t=1 k=1000000", None),
        # The temperature first names no order; any other order is named as it runs.
        (
            DEFAULT_CHAT_SETTINGS.with_changes(samplers=SamplerSettings().samplers),
            "t=0.8 k=40 p=0.95 min_p=0.05",
            None,
        ),
        (
            SamplerSettings(samplers=("top_k", "temperature"), temperature_last=True),
            "t=1 order=top_k;temperature",
            None,
        ),
        (SamplerSettings(samplers=("penalties", "min_p")), "t=1 order=penalties;min_p", None),
    ],
)
def test_settings_summary_in_both_styles(
    settings: SamplerSettings, active: str, fixed: str | None
) -> None:
    assert settings_summary(settings) == active
    if fixed is not None:
        assert settings_summary(settings, style="fixed") == fixed
