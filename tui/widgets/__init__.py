"""Widgets and dialogs more than one feature shows, one per module."""
