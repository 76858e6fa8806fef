"""Reductions and scans over axes: sums, statistics, cumulative ops, counting."""
