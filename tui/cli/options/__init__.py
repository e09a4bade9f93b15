"""The options several commands share, each declared once: the model's, the settings'
(one flag per setting, and `--set` pairs), the prompt's (`--system`, `--mode`), the
output's (`--json`), numbers' types and `--sampler-file`."""
