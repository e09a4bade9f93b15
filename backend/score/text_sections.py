"""The sections of a text that `samplescope score` and `kld` take apart: which tags mark
the thinking, and each token's section.

The tags are those given (`--thinking-tags START,END`), else those of the model's chat
template (`backend.chat.thinking_format`); a model whose template does not think, given
none, has no sections. The tags are found as text across token boundaries
(`sampling.sections.SectionTracker`). A text begins in the answer, unless its first tag is
an end tag: then it begins in the thinking (a reply copied from a model whose template
opens the thinking in the prompt, as DeepSeek-R1's and Qwen3's do).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from backend.chat.thinking_format import thinking_format_of
from sampling.sections import Section, SectionState, SectionTracker

if TYPE_CHECKING:
    from backend.llama.runtime import LlamaRuntime


def thinking_tracker(
    runtime: LlamaRuntime, tags: Sequence[str] | None = None
) -> SectionTracker | None:
    """The tracker of `tags` (the start tag, then the end tags), else of the model's
    template's thinking format; None for neither.

    Raises:
        SettingsError: `tags` has no end tag, or an empty one.
    """
    if tags:
        return SectionTracker.of(tags[0], tags[1:])
    found = thinking_format_of(runtime.chat_template())
    return None if found is None else SectionTracker.of(found.start, found.ends)


def opens_in_thinking(tracker: SectionTracker, text: str) -> bool:
    """Whether the text's first tag is an end tag (then it begins in the thinking)."""
    data = text.encode("utf-8")
    start = data.find(tracker.start)
    ends = [at for end in tracker.ends if (at := data.find(end)) >= 0]
    return bool(ends) and (start < 0 or min(ends) < start)


def text_sections(
    tracker: SectionTracker | None, text: str, pieces: Iterable[bytes]
) -> tuple[Section, ...]:
    """Each token's section, from the bytes each token of `text` spells (a BOS or a
    control token: b""); () when there is no tracker or no token is in the thinking."""
    if tracker is None:
        return ()
    state = SectionState(thinking=opens_in_thinking(tracker, text))
    kinds = tracker.sections(state, pieces)
    return tuple(kinds) if Section.THINKING in kinds else ()
