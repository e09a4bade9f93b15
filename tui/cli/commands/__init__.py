"""One module per `samplescope` command (a package when it has helpers of its own):
`register(subparsers)` adds its parser, `run` carries it out, and `GROUP` names the
group `samplescope -h` lists it in. `app` is `samplescope` without a command.

The front door finds the commands in this folder (`tui.cli.main.command_modules`): a new
command is its module, and a line on docs/commands.md.
"""

from __future__ import annotations

APP = "app"
"""The module that is `samplescope` without a command; every other one is a command."""

GROUPS = {
    "sample": "sample from the model",
    "model": "look into a model, score a text",
    "chats": "saved chats",
    "setup": "set-up and tools",
}
"""Each group's title, in the order `samplescope -h` lists them; each command's module
names its own (`GROUP`), and the commands of a group follow in alphabetical order."""
