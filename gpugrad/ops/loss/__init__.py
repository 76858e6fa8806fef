"""Losses and log-densities."""
