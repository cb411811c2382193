"""Typed links: `link`, `unlink`, `links`."""

from __future__ import annotations
