"""A thinking model for the tests: SmolLM2 with a chat template that thinks.

SmolLM2 has no thinking of its own. A copy of its GGUF whose chat template opens a
`<think>` block in the generation prompt (as DeepSeek-R1's and Qwen3's do) and
leaves earlier replies' thinking out of the prompt (as Qwen3's does) stands in for
a thinking model: the weights are SmolLM2's, the metadata is rewritten by the `gguf`
package (its `gguf_new_metadata` copy). SmolLM2 spells `<think>` in several tokens,
so the tags are found across token boundaries.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

THINKING_TEMPLATE = (
    "{% for message in messages %}"
    "{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\\nYou are a helpful AI assistant named SmolLM, trained by"
    " Hugging Face<|im_end|>\\n' }}"
    "{% endif %}"
    "{% if message['role'] == 'assistant' and '</think>' in message['content'] %}"
    "{% set content = message['content'].split('</think>')[-1].lstrip('\\n') %}"
    "{% else %}{% set content = message['content'] %}{% endif %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + content + '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n<think>\\n' }}{% endif %}"
)
"""ChatML, with the thinking opened in the generation prompt and earlier replies'
thinking left out."""


def thinking_copy(source: Path, folder: Path, template: str = THINKING_TEMPLATE) -> Path:
    """A copy of the GGUF `source` in `folder` with `template` as its chat template.

    Args:
        source: The model to copy (the default SmolLM2).
        folder: Where to write the copy.
        template: The chat template to write (a thinking one by default).

    Returns:
        The copy's path.
    """
    import gguf
    from gguf.scripts.gguf_new_metadata import MetadataDetails

    return metadata_copy(
        source,
        folder / f"{source.stem}-thinking.gguf",
        {gguf.Keys.Tokenizer.CHAT_TEMPLATE: MetadataDetails(gguf.GGUFValueType.STRING, template)},
    )


def metadata_copy(source: Path, target: Path, new_metadata: Mapping[str, Any]) -> Path:
    """Copy the GGUF `source` to `target` with `new_metadata` (key → the `gguf`
    package's `MetadataDetails`) added or replaced; the weights are copied as they are.

    Returns:
        `target`.
    """
    import gguf
    from gguf.scripts.gguf_new_metadata import copy_with_new_metadata

    reader = gguf.GGUFReader(source, "r")
    architecture = reader.get_field(gguf.Keys.General.ARCHITECTURE)
    assert architecture is not None
    writer = gguf.GGUFWriter(target, arch=str(architecture.contents()), endianess=reader.endianess)
    alignment = reader.get_field(gguf.Keys.General.ALIGNMENT)
    if alignment is not None:
        writer.data_alignment = int(alignment.contents())
    copy_with_new_metadata(reader, writer, dict(new_metadata), [])
    return target
