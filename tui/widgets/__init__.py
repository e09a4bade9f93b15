"""The app's widgets, one per module."""

"""Widgets of the samplescope app."""
