"""The command line: the front door (`main`) and one module per command."""
