"""The llama.cpp C layer: runtime, log routing, GGUF reader, token pieces, UTF-8."""
