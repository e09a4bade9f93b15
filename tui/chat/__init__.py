"""The chat view: transcript, reply state, the generation worker and its inbox."""
