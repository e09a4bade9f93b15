"""The options several commands share, each declared once: the model's, the settings'
(one flag per setting, and `--set` pairs), numbers' types and `--sampler-file`."""
