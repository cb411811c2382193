"""The small interfaces every inference backend implements."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class Embedder(Protocol):
    """Turns texts into L2-normalised vectors of one fixed model and dimension."""

    @property
    def model_id(self) -> str:
        """A stable name for the model; vectors of different model_ids never mix."""
        ...

    @property
    def dimension(self) -> int:
        """Length of every vector this embedder returns."""
        ...

    @property
    def max_chars(self) -> int:
        """About how many characters fit the model's window (fragment sizing)."""
        ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed texts (documents or queries), one vector per text, in input order."""
        ...
