"""One module per `samplescope` command: `register(subparsers)` adds its parser, `run`
carries it out; `app` is `samplescope` without a command."""
