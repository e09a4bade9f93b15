"""Saved chats (ctrl+o): search them, open one and continue it, delete one."""
