"""jinja2 templates: shipped inside the package, overridable per trusted vault (SPEC §1).

Packaged templates live in the repository's top-level ``templates/`` folder, which
``vaultmem/templates`` links to: package data, so they ship in the wheel as
``vaultmem/templates/`` and load from an installed vaultmem with
:mod:`importlib.resources`, whatever the working directory. A vault overrides one by
putting a file of the same relative name in ``<vault>/.vaultmem.d/templates/`` (e.g.
``.vaultmem.d/templates/prompts/expand.j2``); the override wins once the user trusts the
vault (``Config.trusted``, :mod:`vaultmem.vault_trust`): a vault may come from someone
else, so until then the packaged templates are used (the configuration's one warning
says so). ``.vaultmem.d/`` sits beside ``.vaultmem.toml`` and is the vault's own: tracked
in git with the notes, never read as notes. The cache ``.vaultmem/`` is git-ignored and
disposable, so the overrides that used to live in ``.vaultmem/templates/`` are still read
this release, with a warning to move them (`doctor` prints the command); one in
``.vaultmem.d/`` wins.

Every template, packaged or a trusted override, renders in jinja2's
``ImmutableSandboxedEnvironment``: a template is data, so it reaches no Python internals
(``cycler.__init__.__globals__`` is refused), changes none of the values it is given,
and cannot build huge strings or numbers (:class:`_Sandbox`). Templates render plain text
(prompts, markdown), so autoescaping is off, and undefined variables are errors rather
than silently empty: a typo in an override should be reported, not produce a prompt with
a hole in it.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from vaultmem.config import Config
from vaultmem.config_trust import has_overrides
from vaultmem.errors import TemplateError, VaultmemWarning

PACKAGE = "vaultmem"
PACKAGE_DIR = "templates"
OVERRIDE_DIR = Path(".vaultmem.d") / "templates"
# Read until the release after next: the cache is git-ignored, so a person's overrides
# there were never versioned with the vault and a cache wipe lost them.
LEGACY_OVERRIDE_DIR = Path(".vaultmem") / "templates"
_warned: set[Path] = set()  # legacy overrides already warned about in this process


class LegacyTemplate(VaultmemWarning):
    """A template override was read from the cache folder, where it does not belong."""


def override_dir(config: Config) -> Path:
    """Where the vault's own templates live: ``<vault>/.vaultmem.d/templates``."""
    return config.vault / OVERRIDE_DIR


def legacy_override_dir(config: Config) -> Path:
    """Where overrides lived before: ``<vault>/.vaultmem/templates`` (the cache)."""
    return config.vault / LEGACY_OVERRIDE_DIR


def legacy_overrides(config: Config) -> list[str]:
    """The template names (``/``-separated) still in the legacy folder, sorted."""
    root = legacy_override_dir(config)
    try:
        return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    except OSError:
        return []


def move_command(config: Config) -> str:
    """The shell command that moves the legacy overrides to ``.vaultmem.d/templates``
    (their folder when there is nothing there yet, else each file that has no
    counterpart there; "" when none is left to move)."""
    import shlex

    old, new = legacy_override_dir(config), override_dir(config)
    if not new.exists():
        return f"mkdir -p {shlex.quote(str(new.parent))} && mv {shlex.quote(str(old))} " + (
            shlex.quote(str(new))
        )
    moves = []
    for name in legacy_overrides(config):
        target = new / name
        if target.exists():
            continue  # the one in .vaultmem.d wins; nothing to move over it
        moves.append(
            f"mkdir -p {shlex.quote(str(target.parent))} && "
            f"mv -n {shlex.quote(str(old / name))} {shlex.quote(str(target))}"
        )
    return " && ".join(moves)


def _packaged(name: str) -> str | None:
    """The text of the packaged template ``name`` (a ``/``-separated path), or None."""
    from importlib.resources import files

    node = files(PACKAGE).joinpath(PACKAGE_DIR)
    for part in name.split("/"):
        if part in ("", ".", ".."):
            return None
        node = node.joinpath(part)
    try:
        return node.read_text(encoding="utf-8") if node.is_file() else None
    except OSError:
        return None


def template_source(config: Config, name: str) -> tuple[str, str]:
    """``(text, where)`` of template ``name``: the vault's override, else the packaged one.

    ``where`` is the override's path or ``package:vaultmem/templates/<name>``. Overrides
    count only in a trusted vault (``config.trusted``). Raises :class:`TemplateError`
    when neither exists.
    """
    folders = (override_dir(config), legacy_override_dir(config)) if _still_trusted(config) else ()
    for legacy, folder in enumerate(folders):
        override = folder / name
        try:
            found = override.read_text(encoding="utf-8-sig") if override.is_file() else None
        except OSError as exc:
            raise TemplateError(f"template {override}: cannot read: {exc.strerror}") from None
        if found is not None:
            if legacy:
                _warn_legacy(config, override)
            return found, str(override)
    text = _packaged(name)
    if text is None:
        raise TemplateError(
            f"no template {name!r} (looked in {override_dir(config)} and the package)"
        )
    return text, f"package:{PACKAGE}/{PACKAGE_DIR}/{name}"


def _still_trusted(config: Config) -> bool:
    """Whether the vault was trusted when ``config`` was loaded and its trusted files
    are unchanged since: a server loads its config once, and a pull while it runs must
    not bring templates nobody looked at."""
    if not config.trusted or not has_overrides(config.vault):
        return False
    from vaultmem.vault_trust import vault_digest

    return vault_digest(config.vault) == config.trust_digest


def _warn_legacy(config: Config, override: Path) -> None:
    """One line, once per file and process: where the override should go instead."""
    if override in _warned:
        return
    _warned.add(override)
    rel = override.relative_to(config.vault).as_posix()
    new = (OVERRIDE_DIR / override.relative_to(legacy_override_dir(config))).as_posix()
    warnings.warn(
        LegacyTemplate(
            f"template override {rel} is in the cache folder (git-ignored, disposable); "
            f"move it to {new} (`vaultmem doctor` prints the command)"
        ),
        stacklevel=3,
    )


def render(config: Config, name: str, **context: Any) -> str:
    """Render template ``name`` with ``context``; one-line :class:`TemplateError` on failure.

    Example:
        >>> render(config, "prompts/expand.j2", query="redis", intent=None,
        ...        lexical_count=2, semantic_count=2)  # doctest: +SKIP
    """
    return compiled(config, name)(**context)


def compiled(config: Config, name: str) -> Callable[..., str]:
    """Template ``name`` compiled once, as a function of its variables (for a caller that
    renders it many times, such as `surface` filling its budget).

    Example:
        >>> block = compiled(config, "context.j2")  # doctest: +SKIP
        >>> block(notes=[])  # doctest: +SKIP
    """
    import jinja2

    text, where = template_source(config, name)
    env = _sandbox()
    try:
        template = env.from_string(text)
    except jinja2.TemplateError as exc:
        raise _failed(where, exc) from None

    def render_it(**context: Any) -> str:
        try:
            return template.render(**context)
        except Exception as exc:  # noqa: BLE001 - a template's error of any kind is one line
            raise _failed(where, exc) from None

    return render_it


# The most a sandboxed ``*`` or ``**`` may make: a template that asks for more (``"x" *
# 10**9``, ``9 ** 9 ** 9``) fails with one line instead of eating the memory of a hook.
MAX_PRODUCT_LENGTH = 1_000_000
MAX_POWER_BITS = 4096


@functools.cache
def _sandbox() -> Any:
    """The jinja2 environment every template renders in (see the module doc); made once
    per process."""
    from jinja2 import StrictUndefined
    from jinja2.exceptions import SecurityError
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class _Sandbox(ImmutableSandboxedEnvironment):
        intercepted_binops = frozenset({"*", "**"})

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            if operator == "**" and _big_power(left, right):
                raise SecurityError("the power is too large for a template")
            if operator == "*" and _long_product(left, right):
                raise SecurityError("the repeated text is too long for a template")
            return super().call_binop(context, operator, left, right)

    return _Sandbox(
        autoescape=False,
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _long_product(left: Any, right: Any) -> bool:
    """Whether ``left * right`` repeats a sequence past MAX_PRODUCT_LENGTH items."""
    for seq, times in ((left, right), (right, left)):
        if isinstance(seq, str | list | tuple | bytes) and isinstance(times, int):
            return len(seq) * times > MAX_PRODUCT_LENGTH
    return False


def _big_power(base: Any, exponent: Any) -> bool:
    """Whether ``base ** exponent`` would be an integer of more than MAX_POWER_BITS bits."""
    if not isinstance(base, int) or not isinstance(exponent, int) or exponent <= 1:
        return False
    return abs(base) > 1 and abs(base).bit_length() * exponent > MAX_POWER_BITS


def _failed(where: str, exc: Exception) -> TemplateError:
    line = getattr(exc, "lineno", None)
    at = f":{line}" if line else ""
    return TemplateError(f"template {where}{at}: {exc}")


def frontmatter_yaml(meta: Mapping[str, Any]) -> str:
    """The YAML lines of a new note's frontmatter (without the ``---`` fences), in the
    order given; each line ends in a newline. Written by the serializer every edit uses
    (:func:`vaultmem.frontmatter.render.render_value`), so a new note and an edited one have one
    style: ``"[[x]]"`` double-quoted, list items indented two spaces, UTC datetimes."""
    from vaultmem.frontmatter.render import render_value

    return "".join(render_value(str(key), value) for key, value in meta.items())


def render_note(
    config: Config, name: str, path: str, meta: Mapping[str, Any], **context: Any
) -> bytes:
    """The bytes of a new note ``path`` rendered from template ``name``.

    The template gets ``frontmatter`` (the YAML of ``meta``, see :func:`frontmatter_yaml`)
    and ``meta`` besides ``context``. The result must parse as a note whose frontmatter
    still holds every key of ``meta`` (an override that drops the block is refused), or
    :class:`TemplateError` says which template broke it.
    """
    from vaultmem.errors import NoteError
    from vaultmem.note import parse_note
    from vaultmem.properties import coerce

    # vaultmem's keys under their names in this vault (``vm_status`` under a prefix), each
    # of its one property type; the template's ``meta`` keeps vaultmem's names.
    names = config.keys.names
    written = {names.get(k, k): coerce(k, v) if k in names else v for k, v in meta.items()}
    data = render(config, name, frontmatter=frontmatter_yaml(written), meta=meta, **context)
    raw = data.encode("utf-8")
    try:
        note = parse_note(path, raw, keys=config.keys)
    except NoteError as exc:
        raise TemplateError(f"template {name} rendered an unreadable note: {exc}") from None
    if any(note.meta.get(key) != value for key, value in written.items() if key != "created"):
        raise TemplateError(f"template {name} must keep the frontmatter it is given")
    return raw
