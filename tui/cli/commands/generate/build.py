"""What one `generate` runs: the settings from the flags (on the config's, or a
preset's), the model loaded, the conversation, and the phrase bans and loop guard."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from backend.chat.completion import Mode
from backend.chat.protocol import ChatMessage
from backend.chat.template_switches import thinking_tags_of
from backend.config.setting_sources import NO_SOURCES, SettingSources, fill_from_model
from backend.llama.model_sampling import read_model_sampling
from backend.session.loop_watch import LoopGuard
from backend.session.phrase_bans import PhraseBans
from sampling.built_in import DEFAULT_CHAT_SETTINGS, chat_defaults
from sampling.errors import SettingsError
from sampling.settings.record import SamplerSettings
from sampling.settings.registry import Registry
from tui.cli.commands.generate.ban_flags import bans_from_args, config_bans
from tui.cli.commands.generate.loop_flags import config_loops, loops_from_args
from tui.cli.commands.generate.prompt import conversation
from tui.cli.options.model import load_backend
from tui.cli.options.sampler_registry import registry_of_args
from tui.cli.options.settings import (
    bias_needs_tokenizer,
    flag_settings,
    settings_from_args,
    settings_with_user_config,
    user_config_settings,
)
from tui.cli.options.template_flags import template_switches
from tui.cli.verbose import log

if TYPE_CHECKING:
    from backend.session.llama_backend import LlamaBackend


@dataclass(frozen=True)
class GenerateRun:
    """One reply's generation, ready to start.

    Attributes:
        backend: The model, loaded (the caller closes it).
        settings: The sampler settings: llama.cpp's defaults and the config's (or a
            preset's), the flags' on top.
        messages: The conversation sent.
        mode: Chat (the template) or completion (one plain document).
        bans: The phrases the reply may not hold (the config's, or the flags').
        loops: Whether and how loops stop the reply.
        sources: Where each setting came from (the model's own values fill the
            settings the user did not give).
    """

    backend: LlamaBackend
    settings: SamplerSettings
    messages: list[ChatMessage]
    mode: Mode
    bans: PhraseBans
    loops: LoopGuard
    sources: SettingSources = NO_SOURCES


def preset_settings(name: str, registry: Registry) -> SamplerSettings:
    """A preset's settings (made with `registry`) with the default seed (as compare
    seeds its columns).

    Raises:
        SettingsError: No preset has that name (the message lists them).
    """
    from tui.resources import available_presets

    presets = available_presets(registry)
    if name not in presets:
        raise SettingsError("preset", name, "one of " + ", ".join(repr(n) for n in presets))
    return presets[name].with_changes(seed=DEFAULT_CHAT_SETTINGS.seed)


def build_run(args: argparse.Namespace, prompt: str) -> GenerateRun:
    """The run the flags ask for. Every flag is checked before the model loads, but a
    `--logit-bias` naming a token by its text, which needs the model's tokenizer.

    Raises:
        SamplescopeError: A flag is wrong, or the model cannot load.
    """
    registry = registry_of_args(args)
    if args.preset is None:
        base = settings_with_user_config(chat_defaults(registry))
        sources = SettingSources().given(user_config_settings(registry), "config")
    else:
        base = preset_settings(args.preset, registry)
        sources = SettingSources().given(registry.settings_by_name, "preset")
    sources = sources.given(flag_settings(args), "flag")
    switches = template_switches(args)  # checked before the model loads
    bans = bans_from_args(args, config_bans(registry))
    loops = loops_from_args(args, config_loops(registry))
    if bias_needs_tokenizer(args):  # --logit-bias names a token by its text
        backend = load_backend(args)
        try:
            settings = settings_from_args(
                args, base, lambda text: backend.runtime.tokenize(text, special=False)
            )
        except Exception:
            backend.close()
            raise
    else:
        settings = settings_from_args(args, base)
        backend = load_backend(args)
    backend.template.switches = replace(switches, thinking_tags=thinking_tags_of(settings))
    own = read_model_sampling(backend.info.path, settings)
    for problem in own.problems:
        log(problem)
    settings, sources = fill_from_model(settings, sources, own)
    try:
        messages, mode = conversation(args, prompt, backend)
    except Exception:
        backend.close()
        raise
    return GenerateRun(backend, settings, messages, mode, bans, loops, sources)
