"""Models: the first load, the picker (f7) and the switch while the app runs."""
