"""Repetition loops: why a reply looped (f9), copy under copy, and the ways out of it."""
