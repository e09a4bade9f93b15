"""A sampler setting, whole: its spec and text forms, a unit's parameter record, where
a unit runs, and the settings record that holds them."""
