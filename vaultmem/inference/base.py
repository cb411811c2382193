"""The small interfaces every inference backend implements."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields
from typing import Protocol, TypeVar

from vaultmem.config import RoleConfig


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

    def embed(self, texts: Sequence[str], *, query: bool = False) -> list[list[float]]:
        """Embed texts, one vector per text, in input order: documents, or with ``query``
        search queries (a model trained for retrieval embeds the two differently)."""
        ...


C = TypeVar("C")


def client_config(cls: type[C], role: RoleConfig) -> C:
    """``cls`` (an endpoint client's config dataclass) filled from a configured role.

    Every setting the class declares is taken from the role by name (url, model, key,
    timeout, retries, and batch size, characters, pacing where the class has them), so
    a new role setting reaches every client that understands it.
    """
    wanted = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    values = {f.name: getattr(role, f.name) for f in fields(role) if f.name in wanted}
    values.update(url=role.url or "", model=role.model or "")
    return cls(**values)
