"""The compare view: one question under several settings, side by side."""
