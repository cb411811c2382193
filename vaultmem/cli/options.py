"""Options several commands share, declared once.

:func:`search_options` gives a command the filter flags (``--folder --tag --type --status
--collection --since --until``) as one :class:`~vaultmem.model.Filters` argument, and the
memory-ranking flags (``--no-prior --no-review``) as ``prior``/``review`` booleans, so
`search`, `vsearch`, `query` and `similar` cannot drift apart.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

import typer

F = TypeVar("F", bound=Callable[..., Any])

LIMIT = typer.Option(10, "-n", "--limit", min=1, max=1000, metavar="N", help="How many results.")
JSON = typer.Option(False, "--json", help="One JSON object per line.")
NOTES = typer.Argument(..., metavar="NOTE...", help="Notes by path, title, alias or file name.")
NOTE = typer.Argument(
    ..., metavar="NOTE", help="Path, title, alias or file name of the note.", show_default=False
)
# `search`, `vsearch` and `query` over several vaults, merged (vaultmem.api.search_vaults).
VAULT_NAMES = typer.Option(
    [],
    "--vault",
    metavar="VAULT",
    help="Search this vault (a folder or named vault; repeatable) and merge the hits, "
    "each naming its vault.",
)
ALL_VAULTS = typer.Option(
    False, "--all-vaults", help="Search every named vault (`vaultmem vaults` lists them)."
)
# The servers' (`serve`, `mcp --http`): where to listen, and the token every request
# carries (vaultmem.servers.auth): the vault's own unless --token names one or --no-auth
# asks for none.
HOST = typer.Option(
    "127.0.0.1", "--host", metavar="HOST", help="Address to bind (127.0.0.1: this machine)."
)
TOKEN = typer.Option(
    None,
    "--token",
    envvar="VAULTMEM_SERVE_TOKEN",
    metavar="TOKEN",
    show_default=False,
    help="Bearer token every request must carry (default: the vault's own, in "
    "<cache>/server.token; `vaultmem serve token` prints it).",
)
NO_AUTH = typer.Option(
    False,
    "--no-auth",
    help="Require no token: any user of this machine may then read and write the vault "
    "through it. Loopback only.",
)


def _profile(value: str | None) -> str | None:
    """Reject a surfacing profile that does not exist as a usage error (exit 2)."""
    from vaultmem.vocabulary import SURFACE_PROFILES

    if value is None or value in SURFACE_PROFILES:
        return value
    raise typer.BadParameter(
        f"unknown profile {value!r} (choose from {', '.join(SURFACE_PROFILES)})"
    )


def profile_option(*, checked: bool = True) -> Any:
    """``--profile``, the named surfacing budget (vaultmem.vocabulary.SURFACE_PROFILES) of
    `surface` and `hook prompt`. ``checked``: an unknown name is a usage error (exit 2);
    the hook leaves it to the request, whose error it logs, because a hook must never
    exit non-zero (Claude Code blocks a prompt on exit 2)."""
    return typer.Option(
        None,
        "--profile",
        metavar="quiet|normal|deep",
        callback=_profile if checked else None,
        show_default=False,
        help="How much surfacing says: quiet (at most 2 notes in 400 tokens, and only when "
        "surer), normal (3 in 800), deep (5 in 2000, and more often). Default: the "
        "config's [hooks] profile, else normal.",
    )


_FILTERS: list[tuple[str, Any]] = [
    (
        "folder",
        typer.Option(None, "--folder", metavar="FOLDER", help="Only notes under this folder."),
    ),
    (
        "tag",
        typer.Option(
            None,
            "--tag",
            metavar="TAG",
            help="Only notes with this tag (nested tags match: a ⊃ a/b).",
        ),
    ),
    (
        "type_",
        typer.Option(
            None,
            "--type",
            metavar="TYPE",
            help="Only notes of this type (decision, preference, …).",
        ),
    ),
    (
        "status",
        typer.Option(
            None,
            "--status",
            metavar="STATUS",
            help="Only notes in this status (forgotten/archived are hidden otherwise).",
        ),
    ),
    (
        "collection",
        typer.Option(
            None,
            "--collection",
            metavar="NAME",
            help="Only notes of this configured collection; repeat it, or a,b: in any of them.",
        ),
    ),
    (
        "since",
        typer.Option(
            None,
            "--since",
            metavar="WHEN",
            help="Only notes created or last used since WHEN: an ISO date or datetime, or "
            "a time back from now (7d, 2w, 12h).",
        ),
    ),
    (
        "until",
        typer.Option(
            None,
            "--until",
            metavar="WHEN",
            help="Only notes created or last used until WHEN (a bare date includes its day).",
        ),
    ),
]
# Flags that take a list (repeated); every other filter flag takes one value.
_REPEATED = frozenset({"collection"})
RANKING_FLAGS: dict[str, Any] = {
    "no_prior": typer.Option(
        False,
        "--no-prior",
        help="Rank by relevance alone (no recency/confidence/quality/pin prior, and no "
        "newer version of a memory listed before an older one).",
    ),
    "no_review": typer.Option(
        False, "--no-review", help="Give no result slots to fading notes due for review."
    ),
}


def _parameter(name: str, option: Any, annotation: Any) -> inspect.Parameter:
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=annotation
    )


def search_options(*, ranking: bool = True) -> Callable[[F], F]:
    """Add the filter flags (as ``filters``) and, with ``ranking``, ``--no-prior`` and
    ``--no-review`` (as ``prior`` and ``review``) to a command function.

    Example:
        >>> @app.command()  # doctest: +SKIP
        ... @search_options()
        ... def search(ctx, query: str, filters: Filters, prior: bool, review: bool): ...
    """

    def decorate(func: F) -> F:
        from vaultmem.model import Filters

        own = inspect.signature(func, eval_str=True)
        kept = [p for p in own.parameters.values() if p.name not in ("filters", "prior", "review")]
        added = [
            _parameter(name, option, list[str] | None if name in _REPEATED else str | None)
            for name, option in _FILTERS
        ]
        if ranking:
            added += [_parameter(name, option, bool) for name, option in RANKING_FLAGS.items()]

        @functools.wraps(func)
        def command(*args: Any, **kwargs: Any) -> Any:
            kwargs["filters"] = Filters(
                folder=kwargs.pop("folder"),
                tag=kwargs.pop("tag"),
                type=kwargs.pop("type_"),
                status=kwargs.pop("status"),
                collections=tuple(kwargs.pop("collection") or ()),
                since=kwargs.pop("since"),
                until=kwargs.pop("until"),
            )
            if ranking:
                kwargs["prior"] = not kwargs.pop("no_prior")
                kwargs["review"] = not kwargs.pop("no_review")
            return func(*args, **kwargs)

        params = [*kept, *added]
        command.__signature__ = own.replace(parameters=params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        return command  # type: ignore[return-value]

    return decorate
