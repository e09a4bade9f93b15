"""The command line: the front door (`main`) and the helpers its commands share (flags,
parsing, output, store access, the serve gate); the commands are in `tui.cli.commands`."""
