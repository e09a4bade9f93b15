"""The one generation loop: sequences, prefill, decode, sample, record, rewind."""
