"""Conversation to events: the backend protocol, LlamaBackend, prompt, template, compare."""
