"""Pure-numpy samplers: settings, the exact distribution, and the per-step record.

A settings record made without a registry (a script, a notebook) takes the registry
of the built-in units (`sampling.built_in`); a front door that loads plugins, or a
test that wants fewer units, builds its own registry and makes its records with it.
"""

from sampling import modes
from sampling.analysis.loops import Loop, LoopRule, LoopWatch, find_loop, loop_rate
from sampling.built_in import DEFAULT_CHAT_SETTINGS
from sampling.errors import LogitsError, SamplescopeError, SettingsError
from sampling.records import Candidate, CutBy, Step
from sampling.sampler import Sampler, SamplerState, probabilities
from sampling.samplers.penalties import penalized_logits
from sampling.settings.record import SamplerSettings
from sampling.settings.spec import SettingSpec
from sampling.settings.summary import settings_summary

__all__ = [
    "DEFAULT_CHAT_SETTINGS",
    "Candidate",
    "CutBy",
    "LogitsError",
    "Loop",
    "LoopRule",
    "LoopWatch",
    "Sampler",
    "SamplerSettings",
    "SamplerState",
    "SamplescopeError",
    "SettingSpec",
    "SettingsError",
    "Step",
    "find_loop",
    "loop_rate",
    "modes",
    "penalized_logits",
    "probabilities",
    "settings_summary",
]
