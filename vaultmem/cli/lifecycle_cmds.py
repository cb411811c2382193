"""Vault-wide sweeps: `promote`, `gc`, `review`."""

from __future__ import annotations
