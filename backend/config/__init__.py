"""User files: paths, the config file, model resolution, presets."""
