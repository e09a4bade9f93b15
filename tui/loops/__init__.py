"""Repetition loops in the chat: why a reply looped, and the ways out of it."""
