"""Pure-numpy samplers: settings, the exact distribution, and the per-step record."""

from sampling import modes
from sampling.analysis.loops import Loop, LoopRule, LoopWatch, find_loop, loop_rate
from sampling.errors import LogitsError, SamplescopeError, SettingsError
from sampling.records import Candidate, CutBy, Step
from sampling.sampler import Sampler, SamplerState, probabilities
from sampling.samplers.penalties import penalized_logits
from sampling.settings.spec import SettingSpec
from sampling.settings_summary import (
    DEFAULT_CHAT_SETTINGS,
    SamplerSettings,
    settings_summary,
)

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
