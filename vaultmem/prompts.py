"""jinja2 templates: shipped inside the package, overridable per vault (SPEC §1).

Packaged templates live in the repository's top-level ``templates/`` folder, which
``vaultmem/templates`` links to: package data, so they ship in the wheel as
``vaultmem/templates/`` and load from an installed vaultmem with
:mod:`importlib.resources`, whatever the working directory. A vault overrides one by
putting a file of the same relative name in ``<vault>/.vaultmem/templates/`` (e.g.
``.vaultmem/templates/prompts/expand.j2``); the override wins.

Templates render plain text (prompts, markdown), so autoescaping is off, and undefined
variables are errors rather than silently empty: a typo in an override should be
reported, not produce a prompt with a hole in it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from vaultmem.config import Config
from vaultmem.errors import TemplateError

PACKAGE = "vaultmem"
PACKAGE_DIR = "templates"
OVERRIDE_DIR = Path(".vaultmem") / "templates"


def override_dir(config: Config) -> Path:
    """Where the vault's own templates live: ``<vault>/.vaultmem/templates``."""
    return config.vault / OVERRIDE_DIR


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

    ``where`` is the override's path or ``package:vaultmem/templates/<name>``.
    Raises :class:`TemplateError` when neither exists.
    """
    override = override_dir(config) / name
    try:
        if override.is_file():
            return override.read_text(encoding="utf-8-sig"), str(override)
    except OSError as exc:
        raise TemplateError(f"template {override}: cannot read: {exc.strerror}") from None
    text = _packaged(name)
    if text is None:
        raise TemplateError(
            f"no template {name!r} (looked in {override_dir(config)} and the package)"
        )
    return text, f"package:{PACKAGE}/{PACKAGE_DIR}/{name}"


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
    env = jinja2.Environment(
        autoescape=False,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    try:
        template = env.from_string(text)
    except jinja2.TemplateError as exc:
        raise _failed(where, exc) from None

    def render_it(**context: Any) -> str:
        try:
            return template.render(**context)
        except jinja2.TemplateError as exc:
            raise _failed(where, exc) from None

    return render_it


def _failed(where: str, exc: Exception) -> TemplateError:
    line = getattr(exc, "lineno", None)
    at = f":{line}" if line else ""
    return TemplateError(f"template {where}{at}: {exc}")


def frontmatter_yaml(meta: Mapping[str, Any]) -> str:
    """The YAML lines of a new note's frontmatter (without the ``---`` fences), serialised
    by python-frontmatter in the order given; each line ends in a newline."""
    import frontmatter as pyfrontmatter  # the library, not vaultmem.frontmatter

    text = pyfrontmatter.dumps(
        pyfrontmatter.Post("", **meta), Dumper=_dumper(), sort_keys=False, allow_unicode=True
    )
    inner = text.split("\n", 1)[1].rsplit("---", 1)[0] if meta else ""
    return inner


def _dumper() -> Any:
    """A YAML safe dumper writing datetimes as vaultmem does everywhere
    (``2026-12-01T09:30:00Z``, still a YAML timestamp)."""
    from datetime import datetime

    import yaml

    from vaultmem.scores import to_utc

    class Dumper(yaml.SafeDumper):
        pass

    def timestamp(dumper: yaml.SafeDumper, value: datetime) -> yaml.Node:
        text = to_utc(value).isoformat().replace("+00:00", "Z")
        return dumper.represent_scalar("tag:yaml.org,2002:timestamp", text)

    Dumper.add_representer(datetime, timestamp)
    return Dumper


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

    data = render(config, name, frontmatter=frontmatter_yaml(meta), meta=meta, **context)
    raw = data.encode("utf-8")
    try:
        note = parse_note(path, raw)
    except NoteError as exc:
        raise TemplateError(f"template {name} rendered an unreadable note: {exc}") from None
    if any(note.meta.get(key) != value for key, value in meta.items() if key != "created"):
        raise TemplateError(f"template {name} must keep the frontmatter it is given")
    return raw
