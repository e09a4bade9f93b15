"""The sweep feature: the quality-against-diversity frontier of a sweep and its samples."""
