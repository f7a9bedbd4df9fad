"""Iterators for frameworks: sluice.plugin.jax, sluice.plugin.pytorch, sluice.plugin.numpy (each
imports only the framework it serves)."""
