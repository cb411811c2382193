"""The calls of :mod:`vaultmem.api` that write: remember, reinforce, change, link.

Every name a call is given is resolved to a writable note before anything is written
(:func:`resolve_for_write`), and each call takes its vault's lock.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from vaultmem.api.open_vault import OpenVault, vault_locked
from vaultmem.errors import RequestError
from vaultmem.model import NOTE_ACTIONS, RememberRequest, check_texts

if TYPE_CHECKING:
    from vaultmem.memory.links import LinkChange
    from vaultmem.memory.notes import Change, Reinforced
    from vaultmem.memory.remember import Remembered

__all__ = ["change", "link", "reinforce", "remember", "resolve_for_write"]


# --- writing notes -----------------------------------------------------------------------


def resolve_for_write(vault: OpenVault, names: Sequence[str]) -> list[str]:
    """Every name to the path of a note that may be written, before anything is written:
    one unknown name, or one outside the vault, changes nothing."""
    from vaultmem.lookup import resolve

    if not names:
        raise RequestError("name at least one note")
    return list(dict.fromkeys(resolve(vault.config, name, write=True) for name in names))


@vault_locked
def remember(vault: OpenVault, request: RememberRequest, *, now: datetime) -> Remembered:
    """Write a new short-term memory, or reinforce the note that already holds the text.

    Example:
        >>> request = RememberRequest("No deploys on Fridays")
        >>> remember(vault, request, now=now).path  # doctest: +SKIP
    """
    from vaultmem.memory.remember import remember as write_memory

    old = resolve_for_write(vault, [request.supersedes])[0] if request.supersedes else None
    try:
        return write_memory(
            vault.config,
            request.text,
            now=now,
            title=request.title,
            note_type=request.type,
            tags=list(request.tags),
            folder=request.folder,
            supersedes=old,
            embedder=vault.duplicate_embedder(),
        )
    except ValueError as exc:
        # A text that is only a heading or punctuation; a NUL byte in a name or folder.
        raise RequestError(str(exc)) from None


@vault_locked
def reinforce(
    vault: OpenVault,
    names: Sequence[str],
    *,
    now: datetime,
    context_tags: Sequence[str] = (),
    confirm: bool = False,
    session: str | None = None,
) -> list[Reinforced]:
    """`touch` (no ``context_tags``) or `observe` (used in a context with these tags).

    ``confirm``: the notes proved right (confidence one step up, ``last_confirmed``);
    ``session``: confirm those of them `surface` showed in that session.

    Example:
        >>> reinforce(vault, ["Redis for caching"], now=now)[0].use_count  # doctest: +SKIP
    """
    from vaultmem.memory.notes import reinforce_notes

    check_texts(context_tags, "tags")  # never written, but judged: the request model's rule
    paths = resolve_for_write(vault, names)
    return reinforce_notes(
        vault.config, paths, now, list(context_tags), confirm=confirm, session=session
    )


@vault_locked
def change(
    vault: OpenVault,
    action: str,
    names: Sequence[str],
    *,
    now: datetime,
    until: str | None = None,
    for_: str | None = None,
) -> list[Change]:
    """Set or clear a memory flag: pin, unpin, forget, restore, snooze, unsnooze.

    ``snooze`` takes exactly one of ``until`` (an ISO date or datetime) and ``for_`` (30d,
    12h, 2w); the other actions take neither.

    Example:
        >>> change(vault, "snooze", ["Kubernetes migration"], now=now, for_="30d")  # doctest: +SKIP
    """
    from vaultmem.memory import notes

    if action not in NOTE_ACTIONS:
        raise RequestError(f"unknown action {action!r}; one of: {', '.join(NOTE_ACTIONS)}")
    end: Any = None
    if action == "snooze":
        try:
            end = notes.snooze_until(now, until=until, for_=for_)
        except ValueError as exc:
            raise RequestError(f"until/for: {exc}") from None
    elif until is not None or for_ is not None:
        raise RequestError(f"{action} takes no until or for")
    paths = resolve_for_write(vault, names)
    if action == "snooze":
        return notes.snooze_notes(vault.config, paths, end)
    act = {
        "pin": notes.pin_notes,
        "unpin": notes.unpin_notes,
        "forget": notes.forget_notes,
        "restore": notes.restore_notes,
        "unsnooze": notes.unsnooze_notes,
    }[action]
    return act(vault.config, paths)


@vault_locked
def link(
    vault: OpenVault, source: str, target: str, link_type: str | None, *, remove: bool = False
) -> LinkChange:
    """Add (or with ``remove``, remove) a typed link from ``source`` to ``target``.

    Example:
        >>> link(vault, "Redis for caching", "Rate limiting options", "related")  # doctest: +SKIP
    """
    from vaultmem.memory.links import LINK_TYPES
    from vaultmem.memory.links import link as add_link
    from vaultmem.memory.links import unlink as remove_link

    if link_type is not None and link_type not in LINK_TYPES:
        raise RequestError(
            f"{link_type!r} is not a link type; valid types: {', '.join(LINK_TYPES)}"
        )
    a_path, b_path = (resolve_for_write(vault, [name])[0] for name in (source, target))
    if remove:
        return remove_link(vault.config, a_path, b_path, link_type)
    return add_link(vault.config, a_path, b_path, link_type or "related")
