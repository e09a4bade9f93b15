"""The chat template's switches: extra variables, and earlier replies' thinking.

llama.cpp hands a chat template more than the messages: `--chat-template-kwargs`
(a JSON object, each key a variable: `{"enable_thinking": false}` turns Qwen3's
thinking off), `--reasoning-effort LEVEL` (the variables `reasoning_effort` and
`reasoning_strength`, as gpt-oss's template reads them) and `--reasoning-preserve` /
`--no-reasoning-preserve` (the kwarg `preserve_reasoning`, and the variables
`preserve_thinking`, `clear_thinking`, `truncate_history_thinking`, `drop_thinking`
that templates such as GLM's read: `common/jinja/caps.cpp`). `TemplateSwitches` holds
them and gives the variables.

Earlier replies' thinking: a template that drops it itself (Qwen3's splits each
reply's content at `</think>`) never sees the text here, as `ChatTemplate` renders
each message's content as a stand-in it puts back afterwards. So samplescope takes
the thinking out of every assistant message before rendering, unless
`reasoning_preserve` is on: each reply reaches the template as its answer alone, as
llama-server's clients send back the `content` it parsed apart from the
`reasoning_content`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from backend.chat.protocol import ChatMessage
from sampling.errors import SamplescopeError
from sampling.sections import DEFAULT_TAGS
from sampling.settings.record import SamplerSettings

REASONING_EFFORTS = ("default", "minimal", "low", "medium", "high", "xhigh", "max")
"""llama.cpp's `--reasoning-effort` levels ("default": the template's own)."""


RESERVED = ("messages", "add_generation_prompt", "bos_token", "eos_token")
"""The variables samplescope gives every template itself."""


class TemplateSwitchError(SamplescopeError):
    """A switch for the chat template is malformed; the message names it."""


@dataclass(frozen=True, slots=True)
class TemplateSwitches:
    """What the chat template is given besides the messages.

    Attributes:
        kwargs: `--chat-template-kwargs`, each (variable, value) as its JSON gave it.
        reasoning_effort: The effort level (None: the template's own default).
        reasoning_preserve: True keeps earlier replies' thinking in the prompt
            (`--reasoning-preserve`), False leaves it out and tells the template so
            (`--no-reasoning-preserve`), None leaves it out and tells nothing.
        thinking_tags: The thinking's start tag, then its end tags (the settings'
            `thinking_tags`): what is cut out of earlier replies.
    """

    kwargs: tuple[tuple[str, Any], ...] = ()
    reasoning_effort: str | None = None
    reasoning_preserve: bool | None = None
    thinking_tags: tuple[str, ...] = DEFAULT_TAGS

    @property
    def enable_thinking(self) -> bool | None:
        """The `enable_thinking` kwarg (None: not given, the template's default)."""
        value = dict(self.kwargs).get("enable_thinking")
        return value if isinstance(value, bool) else None

    def with_thinking(self, enabled: bool | None) -> TemplateSwitches:
        """These switches with `enable_thinking` set (None: taken out)."""
        kept = tuple((key, value) for key, value in self.kwargs if key != "enable_thinking")
        added = () if enabled is None else (("enable_thinking", enabled),)
        return replace(self, kwargs=kept + added)

    def variables(self) -> dict[str, Any]:
        """The variables the template is rendered with, besides the messages."""
        given: dict[str, Any] = dict(self.kwargs)
        if self.reasoning_effort is not None:
            given["reasoning_effort"] = given["reasoning_strength"] = self.reasoning_effort
        if self.reasoning_preserve is not None:
            kept = self.reasoning_preserve
            given["preserve_reasoning"] = given["preserve_thinking"] = kept
            for name in ("clear_thinking", "truncate_history_thinking", "drop_thinking"):
                given[name] = not kept
        return given

    def described(self) -> str:
        """The switches on one line ("" when none is set)."""
        parts = [f"{key}={json.dumps(value)}" for key, value in self.kwargs]
        if self.reasoning_effort is not None:
            parts.append(f"reasoning_effort={self.reasoning_effort}")
        if self.reasoning_preserve is not None:
            parts.append(f"reasoning_preserve={'on' if self.reasoning_preserve else 'off'}")
        return ", ".join(parts)

    def to_json(self) -> str | None:
        """The switches as a reply stores them: a JSON object of those set (None when
        none is; the thinking tags are the settings', stored with them)."""
        if self == replace(NO_SWITCHES, thinking_tags=self.thinking_tags):
            return None
        return json.dumps(
            {
                "kwargs": dict(self.kwargs),
                "reasoning_effort": self.reasoning_effort,
                "reasoning_preserve": self.reasoning_preserve,
            },
            ensure_ascii=False,
        )

    @classmethod
    def from_json(cls, text: str | None, thinking_tags: Sequence[str]) -> TemplateSwitches:
        """The switches a reply stored (`to_json`; None: none), with the thinking tags
        of its settings.

        Raises:
            TemplateSwitchError: The stored text is not what `to_json` writes.
        """
        tags = tuple(thinking_tags) or DEFAULT_TAGS
        if text is None:
            return cls(thinking_tags=tags)
        try:
            value = json.loads(text)
            kwargs = checked_kwargs(value["kwargs"])
            effort, preserve = value["reasoning_effort"], value["reasoning_preserve"]
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError):
            raise TemplateSwitchError(
                f"the reply's stored template switches cannot be read: {text[:60]!r}"
            ) from None
        if effort is not None and effort not in REASONING_EFFORTS:
            raise TemplateSwitchError(f"the reply's stored reasoning effort {effort!r} is unknown")
        if preserve is not None and not isinstance(preserve, bool):
            raise TemplateSwitchError(
                f"the reply's stored reasoning_preserve {preserve!r} is not a bool"
            )
        return cls(kwargs, effort, preserve, tags)

    def prompt_messages(
        self, messages: Sequence[ChatMessage], *, opened: bool = False
    ) -> list[ChatMessage]:
        """`messages` as the template gets them: each reply without its thinking,
        unless `reasoning_preserve` is on (`opened`: the template's generation prompt
        opens the thinking, so a reply begins inside it)."""
        if self.reasoning_preserve:
            return list(messages)
        return [
            ChatMessage("assistant", answer_of(m.content, self.thinking_tags, opened=opened))
            if m.role == "assistant"
            else m
            for m in messages
        ]


NO_SWITCHES = TemplateSwitches()


def template_toml(switches: TemplateSwitches) -> list[str]:
    """The config file's [template] table that gives `switches` (what is unset is a
    comment)."""
    # TOML writes a JSON scalar alike; a list or an object of kwargs is not written.
    kwargs = ", ".join(
        f"{json.dumps(key)} = {json.dumps(value)}"
        for key, value in switches.kwargs
        if isinstance(value, bool | int | float | str)
    )
    effort, preserve = switches.reasoning_effort, switches.reasoning_preserve
    return [
        "[template]",
        f"kwargs = {{ {kwargs} }}" if kwargs else "# kwargs: none",
        f"reasoning_effort = {json.dumps(effort)}"
        if effort
        else "# reasoning_effort: the template's own",
        f"reasoning_preserve = {'true' if preserve else 'false'}"
        if preserve is not None
        else "# reasoning_preserve: not set (earlier thinking left out)",
    ]


def answer_of(text: str, tags: Sequence[str], *, opened: bool = False) -> str:
    """A reply's text without its thinking.

    Everything up to the first end tag (and the tag) is thinking; the answer after it
    starts at its first non-blank character (as Qwen3's template and llama.cpp's parser
    take it). A reply that opens the thinking and never closes it is all thinking, and
    so is one without an end tag when the generation prompt opened the thinking
    (`opened`: the reply was cut short inside it); otherwise a reply with neither tag
    is all answer.
    """
    if len(tags) < 2:
        return text
    start, ends = tags[0], [end for end in tags[1:] if end]
    found = [(text.find(end), end) for end in ends if end in text]
    if found:
        at, end = min(found)
        return text[at + len(end) :].lstrip()
    if opened or (start and text.lstrip().startswith(start)):
        return ""
    return text


def parse_template_kwargs(text: str) -> tuple[tuple[str, Any], ...]:
    """`--chat-template-kwargs` text: a JSON object, each key a template variable.

    Raises:
        TemplateSwitchError: Not JSON, not an object, or `enable_thinking` not true
            or false (llama-server refuses it so too).
    """
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as error:
        raise TemplateSwitchError(
            f"--chat-template-kwargs: not valid JSON ({error}); give an object such as"
            " '{\"enable_thinking\": false}'"
        ) from None
    if not isinstance(value, dict):
        raise TemplateSwitchError(
            f"--chat-template-kwargs: expected a JSON object such as"
            f" '{{\"enable_thinking\": false}}', got {text.strip()[:40]!r}"
        )
    return checked_kwargs(value)


def checked_kwargs(value: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """Template kwargs as the switches hold them.

    Raises:
        TemplateSwitchError: `enable_thinking` is not true or false, or a key names
            what samplescope gives the template itself (the messages...).
    """
    taken = sorted(set(value) & set(RESERVED))
    if taken:
        raise TemplateSwitchError(
            f"--chat-template-kwargs: {taken[0]!r} is given to the template by samplescope"
            f" (so are {', '.join(k for k in RESERVED if k != taken[0])})"
        )
    thinking = value.get("enable_thinking", False)
    if not isinstance(thinking, bool):
        raise TemplateSwitchError(
            f"--chat-template-kwargs: enable_thinking must be true or false, got {thinking!r}"
        )
    return tuple(value.items())


def reasoning_effort_of(level: str | None) -> str | None:
    """`--reasoning-effort` as the switches hold it ("default": None).

    Raises:
        TemplateSwitchError: Not one of llama.cpp's levels.
    """
    if level is None or level == "default":
        return None
    if level not in REASONING_EFFORTS:
        raise TemplateSwitchError(
            f"reasoning effort {level!r}: expected one of {', '.join(REASONING_EFFORTS)}"
        )
    return level


Fail = Callable[[str | None, str, str], Exception]


def parse_template_table(table: object, fail: Fail) -> TemplateSwitches:
    """The config file's [template] table (`kwargs`, `reasoning_effort`,
    `reasoning_preserve`) as switches.

    Raises:
        The error `fail` makes, naming the key and the problem.
    """
    if not isinstance(table, dict):
        raise fail(None, "template", "expected a table: [template]")
    for key in table:
        if key not in ("kwargs", "reasoning_effort", "reasoning_preserve"):
            raise fail(
                "template",
                key,
                "unknown key; expected one of kwargs, reasoning_effort, reasoning_preserve",
            )
    kwargs = table.get("kwargs", {})
    if not isinstance(kwargs, dict):
        raise fail("template", "kwargs", "expected a table such as { enable_thinking = false }")
    preserve = table.get("reasoning_preserve")
    if preserve is not None and not isinstance(preserve, bool):
        raise fail("template", "reasoning_preserve", f"expected true or false, got {preserve!r}")
    effort = table.get("reasoning_effort")
    try:
        return TemplateSwitches(
            kwargs=checked_kwargs(kwargs),
            reasoning_effort=reasoning_effort_of(None if effort is None else str(effort)),
            reasoning_preserve=preserve,
        )
    except TemplateSwitchError as error:
        key = "reasoning_effort" if "effort" in str(error) else "kwargs"
        raise fail("template", key, str(error).removeprefix("--chat-template-kwargs: ")) from None


def thinking_tags_of(settings: SamplerSettings) -> tuple[str, ...]:
    """The settings' thinking tags (what earlier replies' thinking is cut at)."""
    tags = settings.value("thinking_tags")
    return tuple(str(tag) for tag in tags) if isinstance(tags, tuple) else DEFAULT_TAGS
