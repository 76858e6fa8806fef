"""Array ops: creation, shape and order, indexing, selection, scatter and segment ops, grids."""
