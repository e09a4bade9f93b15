"""The sampler units: one module per unit, each a small sampler behind one interface.

As in llama.cpp's `llama_sampler_i` (src/llama-sampling.cpp), a unit has a name
(llama.cpp's `--samplers` name), declares the settings it owns as its parameter
record (`sampling.settings.params`), and changes one step's `Candidates` in place (`unit.py`
holds the interface). `sampling.settings.registry` lists the units; the settings record, the
flags, the panel's groups, the compare keys, the preset fields and the probability
panel's labels derive from that list. Adding a built-in sampler is one module here
(the unit and its parameter record), its line in the registry, and its tests.
"""
