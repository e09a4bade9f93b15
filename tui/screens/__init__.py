"""The app's screens."""

"""Screens of the samplescope app."""
