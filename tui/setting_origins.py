"""Where the app's live settings came from, and the model's own settings filling the rest.

The app starts from llama.cpp's defaults, the config file's [settings] and the flags;
when a model loads, its own settings (`general.sampling.*`) fill every setting the
user did not set, as llama.cpp fills them (`backend.config.setting_sources`). A slider
the user moves, a preset or a sweep's sample put on the sliders are the user's from
then on. Another model opened takes back what the one before filled and fills with
its own.
"""

from __future__ import annotations

from backend.config.setting_sources import SettingSources, fill_from_model
from backend.llama.model_sampling import NO_MODEL_SAMPLING, ModelSampling
from sampling.settings.record import SamplerSettings


class SettingOrigins:
    """Each live setting's source, and the settings the app started with.

    Args:
        started: The settings before any model's (defaults, config, flags).
        sources: Their sources.
    """

    def __init__(self, started: SamplerSettings, sources: SettingSources) -> None:
        self._user_start = started
        self._user_sources = sources
        self.start_sources = sources
        """The sources of the settings "reset" puts back."""
        self.sources = sources
        """The live settings' sources."""
        self.model = NO_MODEL_SAMPLING
        """The loaded model's own settings."""

    def moved(self, name: str) -> None:
        """The user set `name` on the panel."""
        self.sources = self.sources.given([name], "slider")

    def whole_set(self, settings: SamplerSettings) -> None:
        """The user put a whole set of settings on the sliders (a preset, a sample)."""
        self.sources = SettingSources().given(settings.registry.settings_by_name, "preset")

    def reset(self) -> None:
        """The settings the app started with are back."""
        self.sources = self.start_sources

    def model_loaded(
        self, live: SamplerSettings, own: ModelSampling
    ) -> tuple[SamplerSettings, SamplerSettings]:
        """A model loaded: the settings the model before filled go back to the user's,
        then this model's fill what the user did not set.

        Returns:
            The live settings and the settings "reset" puts back, each filled.
        """
        previous = self.sources.from_model()
        unfilled = {name: self._user_start.value(name) for name in previous}
        live = live.with_changes(**unfilled) if unfilled else live
        live, self.sources = fill_from_model(live, self.sources.without(previous), own)
        start, self.start_sources = fill_from_model(self._user_start, self._user_sources, own)
        self.model = own
        return live, start

    def subtitle(self, settings: SamplerSettings) -> str:
        """What the sampling panel's border says: the settings the model fills, by
        their labels on the panel ("model: order, top-k, top-p"; "" when none)."""
        specs = settings.registry.settings_by_name
        names = [specs[name].label for name in self.sources.from_model() if name in specs]
        return "model: " + ", ".join(names) if names else ""
