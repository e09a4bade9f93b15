"""The benchmarks behind `samplescope bench`."""
