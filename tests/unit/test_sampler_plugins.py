"""A user's own sampler: the plugin file of docs/plugins.md, loaded as it stands, and plugins
that fail, switched off for the reply with the step run again without them."""

from __future__ import annotations

import json
import math
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from backend.chat.events import GenerationStats
from backend.store.store import ChatStore, ModelRef
from sampling import Sampler, SamplerSettings, settings_summary
from sampling.built_in import BUILT_IN_REGISTRY
from sampling.errors import SettingsError
from sampling.plugins import PluginError
from sampling.settings.placement import IN_ORDER
from sampling.settings.registry import Registry, build_registry, groups_of
from tests.golden import LOGITS
from tests.helpers import ROOT, readme_plugin, write_bonus_plugin, write_plugin
from tests.registries import origin_of, with_plugin

X = np.asarray(LOGITS, dtype=np.float32)


@pytest.fixture
def plugin_file(tmp_path: Path) -> Iterator[Path]:
    """The plugin of docs/plugins.md as a file."""
    path = tmp_path / "top_h.py"
    path.write_text(readme_plugin(), encoding="utf-8")
    yield path


def top_h_by_hand(logits: list[float], alpha: float, temperature: float = 1.0) -> int:
    """How many tokens Top-H keeps, computed term by term."""
    top = max(logits)
    weights = [math.exp((x - top) / temperature) for x in logits]
    total = math.fsum(weights)
    probs = sorted((w / total for w in weights), reverse=True)
    bound = alpha * -math.fsum(p * math.log(p) for p in probs)
    for k in range(1, len(probs) + 1):
        head = probs[:k]
        mass = math.fsum(head)
        entropy = -math.fsum(p / mass * math.log(p / mass) for p in head)
        if entropy > bound + 1e-12:
            return max(k - 1, 1)
    return len(probs)


def test_the_readme_plugin_loads_as_it_stands_and_joins_everything(plugin_file: Path) -> None:
    joined = with_plugin(plugin_file)
    origin = origin_of(joined, plugin_file)
    assert origin.name == "top_h" and len(origin.sha256) == 64
    assert joined.origins["top_h"].path == str(plugin_file)
    assert "top_h" in joined.samplers and joined.labels["top_h"] == "top-h"
    assert (
        joined.settings[-1] is joined.settings_by_name["top_h"]
        and joined.settings_by_name["top_h"] in joined.display_order
    )
    assert "top_h" in joined.settings_by_name["samplers"].choice_values
    settings = SamplerSettings(joined, samplers=("top_h",)).with_changes(top_h=0.4)
    assert settings.value("top_h") == 0.4 and settings.top_h == 0.4
    (record,) = settings.params.values()
    assert type(record) is joined.owners["top_h"] and record.top_h == 0.4
    assert settings.to_dict()["top_h"] == 0.4
    assert SamplerSettings.from_dict(settings.to_dict(), joined) == settings
    assert "top_h=0.4" in settings_summary(settings)
    assert joined.settings_by_name["samplers"].parse("top-h;temperature") == (
        "top_h",
        "temperature",
    )
    with pytest.raises(SettingsError, match="top_h"):
        settings.with_changes(top_h=1.5)
    assert with_plugin(plugin_file, joined) is joined  # the same file again changes nothing
    dropped = joined.without("top_h")
    assert "top_h" not in dropped.samplers and "top_h" not in dropped.settings_by_name
    assert [spec.name for spec in dropped.settings][-1] == "samplers"
    with pytest.raises(SettingsError, match="loaded sampler plugin"):
        SamplerSettings(dropped).with_changes(top_h=0.4)
    with pytest.raises(SettingsError, match="loaded sampler plugin"):
        SamplerSettings().with_changes(top_h=0.4)  # the built-in units' registry: none


def tables_agree(tables: Registry) -> None:
    """Every table a registry derives says the same as its `samplers` and `settings`,
    and a registry built afresh from the same plugins is the same."""
    assert tuple(tables.samplers) == tables.sampler_names
    logits = tuple(name for name, unit in tables.samplers.items() if unit.kind == "logits")
    assert logits == tables.logits_samplers
    order = tables.settings_by_name["samplers"]
    assert order.leading == tables.logits_samplers
    assert tuple(name for name, _ in order.choices) == tables.sampler_names
    declared = (spec for unit in BUILT_IN_REGISTRY.built_in for spec in unit.specs)
    assert groups_of((*declared, *tables.plugin_settings.values())) == list(tables.groups)
    assert set(groups_of(tables.settings)) == set(tables.groups) <= set(tables.group_titles)
    names = set(tables.units_by_name)
    assert names == set(tables.labels) == set(tables.row_labels) == set(tables.placements)
    assert set(tables.samplers) <= names
    assert {spec.name for spec in tables.display_order} <= set(tables.settings_by_name)
    assert tables == build_registry(tables.built_in, tables.plugins, tables.origins)


def test_every_table_agrees_after_a_plugin_loads_and_after_it_goes(tmp_path: Path) -> None:
    tables_agree(BUILT_IN_REGISTRY)
    built_in = (
        list(BUILT_IN_REGISTRY.sampler_names),
        list(BUILT_IN_REGISTRY.logits_samplers),
        list(BUILT_IN_REGISTRY.groups),
    )
    joined = with_plugin(write_bonus_plugin(tmp_path, "bonus"))
    tables_agree(joined)
    assert joined.sampler_names[-1] == "bonus" and joined.logits_samplers[-1] == "bonus"
    assert joined.groups[-2:] == ("bonus", "order") and joined.placements["bonus"] == IN_ORDER
    # A logits plugin leads an order like the penalties.
    settings = SamplerSettings(joined, samplers="bonus;top_k;temperature").with_changes(bonus=0.5)
    assert settings.order == ("bonus", "top_k", "temperature")
    with pytest.raises(SettingsError, match="'bonus' before every sampler"):
        SamplerSettings(joined, samplers="top_k;bonus")
    dropped = joined.without("bonus")
    tables_agree(dropped)
    assert (
        list(dropped.sampler_names),
        list(dropped.logits_samplers),
        list(dropped.groups),
    ) == built_in


@pytest.mark.parametrize(("alpha", "temperature"), [(0.2, 1.0), (0.4, 1.0), (0.7, 0.5), (0.9, 2.0)])
def test_top_h_keeps_what_its_paper_keeps(
    plugin_file: Path, alpha: float, temperature: float
) -> None:
    settings = SamplerSettings(
        with_plugin(plugin_file), temperature=temperature, samplers=("temperature", "top_h")
    ).with_changes(top_h=alpha)
    step = Sampler(settings, n_candidates=6).sample(X)
    kept = top_h_by_hand(list(LOGITS), alpha, temperature)
    assert step.n_kept == kept
    cut = "top_h" if kept < len(LOGITS) else "none"
    assert step.cut_by == cut
    assert step.table.removed_by == tuple([""] * kept + ["top_h"] * (len(LOGITS) - kept))


def test_a_plugin_settles_on_a_real_sized_vocabulary(plugin_file: Path) -> None:
    joined = with_plugin(plugin_file)
    logits = np.random.default_rng(3).normal(0.0, 4.0, 4096).astype(np.float32)
    settings = SamplerSettings(joined, samplers=("top_k", "top_h"))
    settings = settings.with_changes(top_h=0.3, top_k=200)
    step = Sampler(settings).sample(logits)
    assert 1 <= step.n_kept < 200 and step.cut_by == "top_h" and step.notes == ()


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("        raise RuntimeError('no luck')", "RuntimeError: no luck"),
        ("        candidates.cut(candidates.head(1)[:0], self.name)", "removed every token"),
        (
            "        candidates.replace_logits(np.full_like(candidates.logits, np.nan))",
            "NaN in the logits",
        ),
        ("        candidates.temperature = float('nan')", "temperature"),
    ],
)
def test_a_failing_plugin_is_switched_off_for_the_reply_and_the_step_run_again(
    tmp_path: Path, body: str, problem: str
) -> None:
    path = write_plugin(tmp_path, "shaky", body)
    base = SamplerSettings(with_plugin(path), top_k=3, seed=5)
    with_it = Sampler(base.with_changes(samplers=("shaky", "top_k", "temperature")))
    without = Sampler(base.with_changes(samplers=("top_k", "temperature")))
    first = with_it.sample(X)
    assert len(first.notes) == 1
    assert "sampler plugin shaky switched off" in first.notes[0] and problem in first.notes[0]
    assert with_it.switched_off.keys() == {"shaky"}
    expected = [without.sample(X).token_id for _ in range(6)]
    got = [first.token_id] + [with_it.sample(X).token_id for _ in range(5)]
    assert got == expected
    # A settings change keeps it off; a new reply (reset) switches it on again.
    with_it.settings = with_it.settings.with_changes(top_k=4)
    assert "shaky" not in with_it.chain.names
    with_it.reset()
    assert "shaky" in with_it.chain.names and with_it.switched_off == {}


def test_a_plugin_that_is_not_one_is_refused_naming_its_file(tmp_path: Path) -> None:
    cases = {
        "syntax.py": ("def (", "SyntaxError"),
        "nothing.py": ("x = 1\n", "SAMPLER"),
        "builtin.py": (
            write_plugin(tmp_path, "top_k", "        pass").read_text(),
            "name of a built-in sampler",
        ),
    }
    for file_name, (text, words) in cases.items():
        path = tmp_path / file_name
        path.write_text(text, encoding="utf-8")
        with pytest.raises(PluginError, match=words) as caught:
            with_plugin(path)
        assert str(path) in str(caught.value)
    with pytest.raises(PluginError, match="cannot read"):
        with_plugin(tmp_path / "absent.py")


def test_samplers_command_lists_built_ins_and_plugins(tmp_path: Path) -> None:
    folder = tmp_path / "config" / "samplers"
    folder.mkdir(parents=True)
    (folder / "top_h.py").write_text(readme_plugin(), encoding="utf-8")
    env = {
        **os.environ,
        "SAMPLESCOPE_CONFIG_DIR": str(tmp_path / "config"),
        "PYTHONPATH": str(ROOT),
    }
    command = [sys.executable, "-m", "tui.cli.main", "samplers", "--json"]
    listed = json.loads(subprocess.run(command, env=env, capture_output=True, check=True).stdout)
    by_name = {entry["name"]: entry for entry in listed}
    assert by_name["top_h"]["builtin"] is False and by_name["top_h"]["settings"] == ["top_h"]
    assert by_name["top_k"] == {
        "name": "top_k",
        "builtin": True,
        "placement": "order",
        "settings": ["top_k"],
    }
    # A plugin is listed as a built-in is, with its file besides.
    assert by_name["top_h"]["placement"] == "order"
    assert set(by_name["top_h"]) == {*by_name["top_k"], "file", "sha256"}
    assert by_name["p_less"]["placement"] == "order" and by_name["mirostat"]["placement"] == (
        "replaces"
    )
    assert all(entry["builtin"] for entry in listed if entry["name"] != "top_h")
    help_text = subprocess.run(
        [sys.executable, "-m", "tui.cli.main", "generate", "-h"],
        env=env,
        capture_output=True,
        check=True,
        text=True,
    ).stdout
    assert "--top-h" in help_text


def test_a_reply_keeps_the_plugin_file_it_ran_and_refuses_without_it(
    plugin_file: Path, tmp_path: Path
) -> None:
    joined = with_plugin(plugin_file)
    model = ModelRef(path="/models/m.gguf", size=1234, sha256="ab" * 32)
    settings = SamplerSettings(joined, samplers=("top_h", "temperature"), seed=3)
    settings = settings.with_changes(top_h=0.4)
    path = tmp_path / "chats.sqlite3"
    with ChatStore(path, registry=joined) as store:
        chat = store.new_chat("Plugged", model)
        store.add_message(chat, "user", "hi")
        writer = store.begin_reply(chat, model, settings)
        writer.append_token(0, 11, settings, "Hi")
        writer.finish("eos", GenerationStats(prompt_tokens=2, decode_tokens=1), "Hi")
        (reply,) = store.load_chat(chat).replies
        assert reply.settings_at(0) == settings
    stored = sqlite3.connect(path).execute("SELECT settings FROM settings_changes").fetchone()[0]
    assert json.loads(stored)["sampler_files"] == {"top_h": joined.origins["top_h"].sha256}
    with ChatStore(path, registry=joined.without("top_h")) as store:  # readable, not run again
        (reply,) = store.load_chat(chat).replies
    sha = json.loads(stored)["sampler_files"]["top_h"]
    # Gone: the message says it is not loaded (by name and the content it ran).
    assert reply.replay_problem == (
        f"it ran the sampler plugin 'top_h' (file SHA-256 {sha[:12]}…), which is not"
        " loaded: put its file in the config folder's samplers/ or give --sampler-file PATH"
    )
    plugin_file.write_text(readme_plugin() + "\n# changed\n", encoding="utf-8")
    changed = with_plugin(plugin_file)
    with ChatStore(path, registry=changed) as store:
        (reply,) = store.load_chat(chat).replies
    # Loaded, but its file's content changed: the message says so, naming the file.
    now = changed.origins["top_h"].sha256
    assert reply.replay_problem == (
        "it ran the sampler plugin 'top_h', which is loaded, but from a file whose content"
        f" changed: it ran SHA-256 {sha[:12]}…, {plugin_file} holds SHA-256 {now[:12]}…"
        " (put back the file it ran)"
    )
    assert reply.settings_at(0) == settings
