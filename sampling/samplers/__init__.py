"""The sampler units: one module per unit, each a small sampler behind one interface.

As in llama.cpp's `llama_sampler_i` (src/llama-sampling.cpp), a unit has a name
(llama.cpp's `--samplers` name), declares the settings it owns as its parameter
record (`sampling.settings.params`), each setting with the rank it is listed at, and
changes one step's `Candidates` in place (`unit.py` holds the interface).
`sampling.built_in` lists the built-in units; a registry built from them
(`sampling.settings.registry`) gives the settings record, the flags, the panel's
groups, the compare keys, the preset fields and the probability panel's labels.
Adding a built-in sampler is one module here (the unit and its parameter record),
its line in `sampling.built_in`, and its tests.
"""
