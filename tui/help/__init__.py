"""The help (f1): every key of every screen, read from their bindings."""
