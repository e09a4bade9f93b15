"""The command line: the front door (`main`), the options several commands share
(`tui.cli.options`), the helpers they share (text input, output, store access, saved
replies, the last-word error line) and the commands (`tui.cli.commands`)."""
