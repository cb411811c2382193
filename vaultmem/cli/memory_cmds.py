"""`remember`, `touch`, `observe`, `pin`/`unpin`, `snooze`/`unsnooze`, `forget`/`restore`."""

from __future__ import annotations
