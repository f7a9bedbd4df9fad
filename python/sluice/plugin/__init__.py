# SPDX-License-Identifier: Apache-2.0
"""Iterators for frameworks: sluice.plugin.jax, sluice.plugin.pytorch, sluice.plugin.numpy (each
imports only the framework it serves)."""
