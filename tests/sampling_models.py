"""A model with its own sampler settings for the tests: SmolLM2 with `general.sampling.*`.

SmolLM2's GGUF says nothing about how to sample it. A copy whose metadata holds
`general.sampling.*` keys (written by the `gguf` package, as `tests/thinking_models.py`
writes a chat template) stands in for a model that does (Qwen3's GGUFs carry them).
"""

from __future__ import annotations

from pathlib import Path

from tests.thinking_models import metadata_copy

QWEN3_LIKE: dict[str, float | int | str] = {
    "general.sampling.temp": 0.6,
    "general.sampling.top_k": 20,
    "general.sampling.top_p": 0.95,
    "general.sampling.min_p": 0.0,
}
"""Qwen3's thinking row (its model card), as a GGUF would hold it."""


def sampling_copy(
    source: Path, folder: Path, keys: dict[str, float | int | str | bool], name: str = "sampling"
) -> Path:
    """A copy of the GGUF `source` in `folder` with metadata `keys` added.

    Each value is written with the type the `gguf` package's writer gives that key
    (`add_sampling_temp`: float32, `add_sampling_top_k`: int32, the sequence a string);
    a value of another Python type is written as that type (a bad value on purpose).

    Args:
        source: The model to copy (the default SmolLM2).
        folder: Where to write the copy.
        keys: The metadata to add, by key.
        name: Added to the copy's file name.

    Returns:
        The copy's path.
    """
    from gguf.scripts.gguf_new_metadata import MetadataDetails

    new_metadata = {key: MetadataDetails(_type_of(value), value) for key, value in keys.items()}
    return metadata_copy(source, folder / f"{source.stem}-{name}.gguf", new_metadata)


def _type_of(value: float | int | str | bool) -> object:
    import gguf

    if isinstance(value, bool):
        return gguf.GGUFValueType.BOOL
    if isinstance(value, int):
        return gguf.GGUFValueType.INT32
    if isinstance(value, float):
        return gguf.GGUFValueType.FLOAT32
    return gguf.GGUFValueType.STRING
