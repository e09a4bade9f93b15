"""Render a conversation with the model's chat template, keeping user text apart.

The template comes from the GGUF (untrusted) and is rendered in Jinja's immutable
sandbox. Every message's content is replaced by a unique sentinel while rendering, so
the rendered string can be cut back into the template's own text (whose markers such as
``<|im_start|>`` must become special tokens) and the messages' text (which must not: a
user typing ``<|im_end|>`` must not forge a turn).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, NoReturn

from jinja2 import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from backend.chat.protocol import ChatMessage
from backend.chat.template_switches import NO_SWITCHES, TemplateSwitches
from backend.chat.thinking_format import thinking_format_of
from sampling.errors import SamplescopeError
from sampling.sections import DEFAULT_TAGS

if TYPE_CHECKING:
    from backend.llama.runtime import LlamaRuntime

#: The template used when the GGUF has none (ChatML).
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


#: llama.cpp's built-in templates for models whose GGUF has none, each with the
#: special tokens that identify it in a vocabulary (checked in this order).
BUILTIN_TEMPLATES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("ChatML", ("<|im_start|>", "<|im_end|>"), CHATML_TEMPLATE),
    (
        "Llama 3",
        ("<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"),
        "{{ bos_token }}{% for message in messages %}"
        "{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'"
        " + message['content'] + '<|eot_id|>' }}{% endfor %}"
        "{% if add_generation_prompt %}"
        "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}",
    ),
    (
        "Gemma",
        ("<start_of_turn>", "<end_of_turn>"),
        "{{ bos_token }}{% for message in messages %}"
        "{{ '<start_of_turn>' + ('model' if message['role'] == 'assistant' else 'user')"
        " + '\n' + message['content'] + '<end_of_turn>\n' }}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<start_of_turn>model\n' }}{% endif %}",
    ),
    (
        "Mistral",
        ("[INST]", "[/INST]"),
        "{{ bos_token }}{% for message in messages %}"
        "{% if message['role'] == 'assistant' %}{{ message['content'] + eos_token }}"
        "{% else %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% endif %}"
        "{% endfor %}",
    ),
)

#: With no template and no known turn tokens: the messages as plain text.
RAW_TEMPLATE = "{% for message in messages %}{{ message['content'] + '\n' }}{% endfor %}"


def fallback_template(specials: Collection[str]) -> tuple[str, str]:
    """The template for a model whose GGUF has none, and a notice saying why.

    The first built-in template whose turn tokens are all in the vocabulary's
    special tokens; with none, the raw text of the messages.

    Args:
        specials: The texts of the vocabulary's special (control) tokens.

    Returns:
        (Jinja source, a one-line notice for the user).
    """
    builtin = builtin_template_for(specials)
    if builtin is not None:
        name, markers, source = builtin
        return source, (
            f"The model has no chat template; its vocabulary has {name}'s turn tokens"
            f" ({' '.join(markers)}), so {name}'s template is used."
        )
    return RAW_TEMPLATE, (
        "The model has no chat template and no turn tokens samplescope knows:"
        " the conversation is fed as raw text."
    )


def builtin_template_for(
    specials: Collection[str],
) -> tuple[str, tuple[str, ...], str] | None:
    """The first built-in (name, turn tokens, source) whose turn tokens are all among
    a vocabulary's special tokens, or None."""
    present = set(specials)
    for name, markers, source in BUILTIN_TEMPLATES:
        if all(marker in present for marker in markers):
            return name, markers, source
    return None


class ChatTemplateError(SamplescopeError):
    """The model's chat template could not be rendered; the message says why."""


@dataclass(frozen=True, slots=True)
class Segment:
    """A piece of the rendered prompt.

    Attributes:
        text: The text of the piece.
        message: The index of the message whose content this is, or None for the
            template's own text (markers, role names, separators).
    """

    text: str
    message: int | None


def _raise_exception(message: str) -> NoReturn:
    raise ChatTemplateError(f"the chat template refused the conversation: {message}")


class ChatTemplate:
    """A compiled chat template.

    Args:
        source: The Jinja source (from the GGUF's `tokenizer.chat_template`), or None
            for ChatML.
        bos_token: The text of the model's beginning-of-sequence token.
        eos_token: The text of its end-of-sequence token.
        switches: What the template is given besides the messages.
    """

    def __init__(
        self,
        source: str | None,
        *,
        bos_token: str = "",
        eos_token: str = "",
        switches: TemplateSwitches = NO_SWITCHES,
    ) -> None:
        self.source = source if source else CHATML_TEMPLATE
        self.switches = switches
        self._opens: dict[tuple[str, tuple[str, ...]], bool] = {}
        """The switches the next render passes (`--chat-template-kwargs`,
        `--reasoning-effort`, `--reasoning-preserve`); the app's toggle replaces them."""
        self.is_default = not source
        self.bos_token = bos_token
        self.eos_token = eos_token
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        env.globals["raise_exception"] = _raise_exception
        try:
            self._template = env.from_string(self.source)
        except TemplateError as error:
            raise ChatTemplateError(
                f"the model's chat template does not compile: {error}"
            ) from error

    def render(self, messages: Sequence[ChatMessage], *, add_generation_prompt: bool = True) -> str:
        """The whole prompt as one string (for display and tests)."""
        return "".join(
            s.text for s in self.segments(messages, add_generation_prompt=add_generation_prompt)
        )

    def segments(
        self, messages: Sequence[ChatMessage], *, add_generation_prompt: bool = True
    ) -> list[Segment]:
        """Render `messages` and cut the result into template text and message contents.

        Earlier replies reach the template without their thinking unless the
        switches keep it (`TemplateSwitches.prompt_messages`).

        Raises:
            ChatTemplateError: The template raised, failed, or lost or duplicated a
                message's content (then its text cannot be told apart safely).
        """
        switches = self.switches
        if not switches.thinking_tags:  # the settings name none: the template's own
            switches = replace(switches, thinking_tags=self.format_tags or DEFAULT_TAGS)
        if any(m.role == "assistant" for m in messages) and not switches.reasoning_preserve:
            messages = switches.prompt_messages(messages, opened=self._opens_thinking(switches))
        tag = secrets.token_hex(8)
        sentinels = [f"\x00{tag}:{i}\x00" for i in range(len(messages))]
        rendered = self._render(
            [{"role": m.role, "content": s} for m, s in zip(messages, sentinels, strict=True)],
            add_generation_prompt,
            switches,
        )
        pattern = re.compile("\x00" + tag + r":(\d+)\x00")
        segments: list[Segment] = []
        seen: set[int] = set()
        position = 0
        for match in pattern.finditer(rendered):
            if match.start() > position:
                segments.append(Segment(rendered[position : match.start()], None))
            index = int(match.group(1))
            if index in seen:
                raise ChatTemplateError(
                    f"the chat template repeats message {index}'s text; cannot tokenize it safely"
                )
            seen.add(index)
            if messages[index].content:
                segments.append(Segment(messages[index].content, index))
            position = match.end()
        if position < len(rendered):
            segments.append(Segment(rendered[position:], None))
        lost = [i for i, message in enumerate(messages) if message.content and i not in seen]
        if lost:
            raise ChatTemplateError(
                f"the chat template left out (or rewrote) the text of message {lost[0]}"
                f" ({messages[lost[0]].role}); cannot build the prompt safely"
            )
        return segments

    @property
    def format_tags(self) -> tuple[str, ...]:
        """The thinking's tags as the template's format spells them
        (`backend.chat.thinking_format`); none for a template that shows no thinking."""
        known = thinking_format_of(self.source)
        return () if known is None else known.tags

    def _opens_thinking(self, switches: TemplateSwitches) -> bool:
        """Whether the generation prompt ends inside an open thinking block (its text
        ends with the start tag, as Qwen3's and DeepSeek-R1's do), with `switches`."""
        key = (switches.described(), switches.thinking_tags)
        known = self._opens.get(key)
        if known is None:
            probe = [{"role": "user", "content": "?"}]
            try:
                prompt = self._render(probe, True, switches)
            except ChatTemplateError:
                prompt = ""  # rendering the conversation will say what fails
            start = switches.thinking_tags[0] if switches.thinking_tags else ""
            known = bool(start) and prompt.rstrip().endswith(start)
            self._opens[key] = known
        return known

    def _render(
        self,
        messages: list[dict[str, str]],
        add_generation_prompt: bool,
        switches: TemplateSwitches = NO_SWITCHES,
    ) -> str:
        variables = switches.variables()
        try:
            return self._template.render(
                **variables,
                messages=messages,
                add_generation_prompt=add_generation_prompt,
                bos_token=self.bos_token,
                eos_token=self.eos_token,
            )
        except ChatTemplateError as error:
            raise ChatTemplateError(_with_switches(str(error), switches)) from error
        except Exception as error:  # untrusted template: any failure is the template's
            raise ChatTemplateError(
                _with_switches(f"the model's chat template failed: {error}", switches)
            ) from error


def _with_switches(message: str, switches: TemplateSwitches) -> str:
    """A template's failure, naming the switches it was given (when any)."""
    described = switches.described()
    return f"{message} (with {described})" if described else message


class SpecialSplitter:
    """Cuts template text at special-token markers (longest first, like llama.cpp).

    Args:
        specials: The markers' texts (e.g. ``<|im_start|>``).
    """

    def __init__(self, specials: Sequence[str]) -> None:
        ordered = sorted({s for s in specials if s}, key=len, reverse=True)
        self._pattern = re.compile("|".join(re.escape(s) for s in ordered)) if ordered else None

    def split(self, text: str) -> list[tuple[str, bool]]:
        """(piece, is_special) pairs covering `text` in order."""
        if not text:
            return []
        if self._pattern is None:
            return [(text, False)]
        out: list[tuple[str, bool]] = []
        position = 0
        for match in self._pattern.finditer(text):
            if match.start() > position:
                out.append((text[position : match.start()], False))
            out.append((match.group(0), True))
            position = match.end()
        if position < len(text):
            out.append((text[position:], False))
        return out


def split_specials(text: str, specials: Sequence[str]) -> list[tuple[str, bool]]:
    """Cut template text at special-token markers (longest first, like llama.cpp).

    Returns:
        (piece, is_special) pairs covering `text` in order.
    """
    return SpecialSplitter(specials).split(text)


def model_template(runtime: LlamaRuntime) -> tuple[ChatTemplate, str | None]:
    """A loaded model's chat template: its GGUF's own, else a fallback with a notice.

    Returns:
        (The compiled template, None or the one-line notice of `fallback_template`.)
    """
    source = runtime.chat_template()
    notice: str | None = None
    if not source:
        source, notice = fallback_template(runtime.special_texts())
    bos = runtime.token_bytes(runtime.bos, special=True) if runtime.bos >= 0 else b""
    eos = runtime.token_bytes(runtime.eos, special=True) if runtime.eos >= 0 else b""
    template = ChatTemplate(
        source,
        bos_token=bos.decode("utf-8", errors="replace"),
        eos_token=eos.decode("utf-8", errors="replace"),
    )
    return template, notice
