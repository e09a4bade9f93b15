"""How likely a text is to a model: per-token scores and perplexity."""
