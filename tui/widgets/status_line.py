"""The status line: model, threads, context, and the phase indicator."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import PurePath
from typing import Any, Literal

from rich.text import Text
from textual.widget import Widget

from sampling.analysis.loops import Loop

Phase = Literal["loading", "error", "idle", "prefill", "decode"]
GGUF_SUFFIX = ".gguf"


def model_label(name: str, path: str) -> str:
    """What the status line calls a model: its file's name without ".gguf"
    ("SmolLM2-135M-Instruct.Q4_1", which says the quantization too), else the GGUF's
    own name when the file is not named for it (an Ollama blob "sha256-…")."""
    stem = PurePath(path).name.removesuffix(GGUF_SUFFIX)
    if not path.lower().endswith(GGUF_SUFFIX) or not stem:
        return name
    return stem


def contrast_label(path: str) -> str:
    """What the status line calls a contrast model loaded from `path` ("": none)."""
    return model_label(PurePath(path).name, path) if path else ""


_BAR_WIDTH = 20


@dataclass(frozen=True, slots=True)
class StatusState:
    """Everything the status line shows."""

    model: str = ""
    contrast: str = ""
    """The contrast model decoding beside the model ("": none)."""
    threads: int = 0
    placement: str = ""
    ctx_used: int = 0
    ctx_total: int = 0
    ctx_note: str = ""
    """Why `ctx_used` is not what the memory holds ("prefills again": the last reply's
    context was freed, the next reply computes the conversation again)."""
    phase: Phase = "loading"
    prefill_done: int = 0
    prefill_total: int = 0
    decode_tokens: int = 0
    decode_tps: float | None = None
    last_ttft_ms: float | None = None
    last_tps: float | None = None
    last_reason: str = ""
    last_discarded: int = 0
    """Tokens the last reply decoded and discarded (phrase bans going back)."""
    loop: str = ""
    """The last reply's repetition loop, as `loop_status` words it ("": none)."""
    note: str = ""


LOOP_SIGN = "↻"


def loop_status(loop: Loop | None) -> str:
    """What the status line says of a reply's loop ("" for none)."""
    if loop is None:
        return ""
    return (
        f"{LOOP_SIGN} loop: {loop.period} tokens × {loop.count} from token {loop.start + 1}"
        f"{loop.section_note}"
    )


def progress_bar(done: int, total: int, width: int = _BAR_WIDTH) -> str:
    """A text progress bar with eighth-cell resolution."""
    fraction = 0.0 if total <= 0 else min(max(done / total, 0.0), 1.0)
    eighths = round(fraction * width * 8)
    full, rest = divmod(eighths, 8)
    partial = " ▏▎▍▌▋▊▉"[rest] if full < width else ""
    return ("█" * full + partial).ljust(width)


class StatusLine(Widget):
    """One line at the bottom of the screen describing the model and the phase."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._state = StatusState()

    @property
    def state(self) -> StatusState:
        """What is shown."""
        return self._state

    def update(self, **changes: Any) -> None:
        """Change some fields and redraw if anything changed."""
        new = replace(self._state, **changes)
        if new != self._state:
            self._state = new
            self.refresh()

    def render(self) -> Text:
        s = self._state
        text = Text(no_wrap=True, overflow="ellipsis")
        if s.model:
            text.append(f" {s.model} ", style="bold reverse")
            if s.contrast:
                text.append(f" contrast {s.contrast} ", style="reverse")
            where = f" · {s.placement}" if s.placement else ""  # e.g. "2 RPC servers"
            note = f" ({s.ctx_note})" if s.ctx_note else ""
            text.append(f" {s.threads} threads{where} · ctx {s.ctx_used}/{s.ctx_total}{note} ")
        text.append("│ ", style="grey50")
        if s.phase == "loading":
            text.append("loading model…", style="bold yellow")
        elif s.phase == "error":
            text.append("model not loaded", style="bold red")
        elif s.phase == "prefill" and s.prefill_total == 0:
            # The first chunk is running; its progress event brings the total.
            text.append("prefill…", style="bold magenta")
        elif s.phase == "prefill":
            text.append("prefill ", style="bold magenta")
            text.append(progress_bar(s.prefill_done, s.prefill_total), style="magenta on grey23")
            text.append(f" {s.prefill_done}/{s.prefill_total} tokens")
        elif s.phase == "decode":
            text.append("decode ", style="bold green")
            rate = "…" if s.decode_tps is None else f"{s.decode_tps:.1f} tok/s"
            text.append(f"{rate} · {s.decode_tokens} tokens")
        else:
            text.append("idle ", style="bold cyan")
            if s.last_ttft_ms is not None and s.last_tps is not None:
                text.append(f"· last reply: TTFT {s.last_ttft_ms:.0f} ms · {s.last_tps:.1f} tok/s")
            if s.last_reason:
                text.append(f" · {s.last_reason}")
            if s.last_discarded:
                text.append(f" · {s.last_discarded} discarded")
        if s.loop and s.phase in ("decode", "idle"):
            text.append(f" · {s.loop}", style="bold magenta")
        if s.note:
            text.append(f" │ {s.note}", style="italic")
        return text
