"""The thinking tags of a chat template, for the formats llama.cpp's chat parser knows.

llama.cpp recognises a template's reasoning markers by its text (`common/chat.cpp`:
gpt-oss by `<|channel|>`; the tag-based formats by their tags). samplescope looks for
the same markers in the template's source; `--thinking-tags` names them for any other
model and for completion mode.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ThinkingFormat:
    """A family of thinking tags.

    Attributes:
        name: What the format is called in messages and `info`.
        marker: The text whose presence in a template's source identifies the format.
        start: The tag that opens the thinking.
        ends: The tags that close it (the first is the one a budget forces).
    """

    name: str
    marker: str
    start: str
    ends: tuple[str, ...]

    @property
    def tags(self) -> tuple[str, ...]:
        """The start tag, then the end tags (the `thinking_tags` setting's shape)."""
        return (self.start, *self.ends)


#: The formats, checked in this order (the first whose marker is in the source).
THINKING_FORMATS: tuple[ThinkingFormat, ...] = (
    ThinkingFormat(
        "gpt-oss channels",
        "<|channel|>",
        "<|channel|>analysis<|message|>",
        ("<|channel|>final<|message|>",),
    ),
    ThinkingFormat("<seed:think>", "<seed:think>", "<seed:think>", ("</seed:think>",)),
    ThinkingFormat("[THINK]", "[THINK]", "[THINK]", ("[/THINK]",)),
    ThinkingFormat("<think>", "<think>", "<think>", ("</think>",)),
)


def thinking_format_of(template_source: str | None) -> ThinkingFormat | None:
    """The thinking format a chat template's source uses, or None for a model that does
    not think (as far as its template says)."""
    if not template_source:
        return None
    for known in THINKING_FORMATS:
        if known.marker in template_source:
            return known
    return None
