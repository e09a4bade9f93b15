"""The chat template's switches on the command line: `--chat-template-kwargs JSON`,
`--reasoning-effort LEVEL`, `--reasoning-preserve` / `--no-reasoning-preserve`
(llama.cpp's flags), on top of the config file's [template] table."""

from __future__ import annotations

import argparse
from dataclasses import replace

from backend.chat.template_switches import (
    REASONING_EFFORTS,
    TemplateSwitches,
    parse_template_kwargs,
    reasoning_effort_of,
)
from tui.cli.options.sampler_registry import registry_of_args


def add_template_flags(parser: argparse.ArgumentParser) -> None:
    """Add the template's switches to a command that renders a chat."""
    group = parser.add_argument_group("chat template")
    group.add_argument(
        "--chat-template-kwargs",
        default=None,
        metavar="JSON",
        help="variables for the chat template, a JSON object, e.g."
        " '{\"enable_thinking\": false}' (Qwen3 then answers without thinking)",
    )
    group.add_argument(
        "--reasoning-effort",
        default=None,
        choices=REASONING_EFFORTS,
        help="the reasoning effort the chat template is given (gpt-oss reads it;"
        " default: the template's own)",
    )
    group.add_argument(
        "--reasoning-preserve",
        default=None,
        action=argparse.BooleanOptionalAction,
        help="keep earlier replies' thinking in the prompt (default: left out; "
        "--no-reasoning-preserve also tells the template so)",
    )


def switches_from_args(
    args: argparse.Namespace,
    base: TemplateSwitches,
    thinking_tags: tuple[str, ...] | None = None,
) -> TemplateSwitches:
    """The switches the flags ask for, on top of `base` (the config's).

    `--chat-template-kwargs` adds its variables to the config's (a key given in both
    takes the flag's value).

    Raises:
        TemplateSwitchError: The JSON is malformed, or not an object.
    """
    switches = base
    text = getattr(args, "chat_template_kwargs", None)
    if text is not None:
        given = dict(parse_template_kwargs(text))
        kept = tuple((key, value) for key, value in base.kwargs if key not in given)
        switches = replace(switches, kwargs=kept + tuple(given.items()))
    effort = getattr(args, "reasoning_effort", None)
    if effort is not None:
        switches = replace(switches, reasoning_effort=reasoning_effort_of(effort))
    preserve = getattr(args, "reasoning_preserve", None)
    if preserve is not None:
        switches = replace(switches, reasoning_preserve=preserve)
    if thinking_tags is not None:
        switches = replace(switches, thinking_tags=thinking_tags)
    return switches


def template_switches(
    args: argparse.Namespace, thinking_tags: tuple[str, ...] | None = None
) -> TemplateSwitches:
    """The switches of the user's config file's [template] table, the flags on top
    (a broken config file gives none: the commands that load a model report it).

    Raises:
        TemplateSwitchError: A flag is malformed.
    """
    from backend.config.config import load_config_or_default

    config, _problem = load_config_or_default(registry=registry_of_args(args))
    return switches_from_args(args, config.template, thinking_tags)


def add_show_prompt_flag(parser: argparse.ArgumentParser) -> None:
    """`--show-prompt`: print the prompt as the chat template renders it."""
    parser.add_argument(
        "--show-prompt",
        action="store_true",
        help="print the prompt the chat template renders (with its switches) on stderr"
        " before the reply (`prompt` with --json)",
    )
