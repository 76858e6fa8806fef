"""Elementwise ops: arithmetic, the ufuncs, math and special functions, activations, casts."""
