"""A thinking model for the tests: SmolLM2 with a chat template that thinks.

SmolLM2 has no thinking of its own. A copy of its GGUF whose chat template opens a
`<think>` block in the generation prompt (as DeepSeek-R1's and Qwen3's do) and
leaves earlier replies' thinking out of the prompt (as Qwen3's does) stands in for
a thinking model: the weights are SmolLM2's, the metadata is rewritten by the `gguf`
package (its `gguf_new_metadata` copy). SmolLM2 spells `<think>` in several tokens,
so the tags are found across token boundaries.
"""

from __future__ import annotations

import mmap
import shutil
import struct
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
    package's `MetadataDetails`, a scalar or a string) added or replaced, as the `gguf`
    package's `gguf_new_metadata` does (a new chat template replaces the named ones too).

    Only the metadata is read and written again: the tensor infos and the weights are
    copied byte for byte (a tensor's offset counts from the start of the data, which
    stays aligned): a copy costs about a file copy, where the `gguf` package's reader
    spends seconds building every string of the vocabulary.

    Returns:
        `target`.
    """
    import gguf

    from backend.llama.gguf_reader import ValueReader

    new = dict(new_metadata)
    template = gguf.Keys.Tokenizer.CHAT_TEMPLATE
    replaces_template = template in new
    alignment = gguf.GGUF_DEFAULT_ALIGNMENT
    entries: list[bytes] = []
    with source.open("rb") as file:
        with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as buffer:
            reader = ValueReader(buffer, source, len(buffer), arrays=False)
            reader.pos = 8  # the magic and the version
            n_tensors, n_kv = reader.u64(), reader.u64()
            for _ in range(n_kv):
                start = reader.pos
                key = reader.string()
                value, _ = reader.value(reader.u32())
                if key == gguf.Keys.General.ALIGNMENT:
                    alignment = int(value)  # type: ignore[arg-type]
                if key in new:
                    entries.append(_packed_entry(key, new.pop(key)))
                elif not (replaces_template and key.startswith(template)):
                    entries.append(buffer[start : reader.pos])
            infos_start = reader.pos
            for _ in range(n_tensors):
                reader.string()  # name
                dims = reader.u32()
                reader.need(8 * dims + 4 + 8)  # the dimensions, the type, the offset
                reader.pos += 8 * dims + 4 + 8
            infos = buffer[infos_start : reader.pos]
            data_start = _aligned(reader.pos, alignment)
            header = buffer[:8]
        entries.extend(_packed_entry(key, details) for key, details in new.items())
        with target.open("wb") as out:
            out.write(header + struct.pack("<QQ", n_tensors, len(entries)))
            out.writelines(entries)
            out.write(infos)
            out.write(bytes(_aligned(out.tell(), alignment) - out.tell()))
            file.seek(data_start)
            shutil.copyfileobj(file, out, 1 << 20)
    return target


def _aligned(offset: int, alignment: int) -> int:
    return offset + (-offset % alignment)


def _packed_entry(key: str, details: Any) -> bytes:
    """One metadata entry as GGUF stores it: the key, the value's type, the value."""
    import gguf

    kind = gguf.GGUFValueType(details.type)
    if kind == gguf.GGUFValueType.STRING:
        value = _packed_string(str(details.value))
    else:
        value = struct.pack("<" + _SCALAR_FORMATS[kind.name], details.value)
    return _packed_string(key) + struct.pack("<I", int(kind)) + value


def _packed_string(text: str) -> bytes:
    raw = text.encode("utf-8")
    return struct.pack("<Q", len(raw)) + raw


_SCALAR_FORMATS = {
    "UINT8": "B",
    "INT8": "b",
    "UINT16": "H",
    "INT16": "h",
    "UINT32": "I",
    "INT32": "i",
    "FLOAT32": "f",
    "BOOL": "?",
    "UINT64": "Q",
    "INT64": "q",
    "FLOAT64": "d",
}
"""struct formats of the GGUF scalar types, by the `gguf` package's type name."""
