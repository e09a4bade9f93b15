"""Explore: the tree of continuations the chain keeps at a past token (x)."""
