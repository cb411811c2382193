"""python-frontmatter against vaultmem's own frontmatter reader, note by note.

    python benchmarks/bench_frontmatter_reader.py VAULT [VAULT ...] [--repeats 5] [--json]

Issue 33 asked whether ``frontmatter.parse`` (python-frontmatter) could be the reader
where vaultmem reads a note whole. This script reads every note of each vault both ways
and reports:

- **values**: notes whose metadata differ (python-frontmatter's best-suited handler: its
  ``YAMLHandler`` with libyaml's safe loader and vaultmem's lenient timestamps, so the
  loader itself is not the difference), and notes whose body differs;
- **time**: the median over ``--repeats`` passes of reading every note's bytes into
  metadata, each reader on the same bytes held in memory, interleaved pass by pass;
- **shapes**: a few note shapes where the two readers must answer differently by design
  (Obsidian's fence rules, a ``...`` closing fence, alias expansion), each with both
  answers, so the reasons in docs/how-it-works.md are measured, not asserted.

vaultmem's reader is :func:`vaultmem.frontmatter.scan.parse_meta`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from vaultmem.errors import NoteError  # noqa: E402
from vaultmem.frontmatter.scan import loaders, parse_meta  # noqa: E402

# Shapes where the readers differ by design; each is a real note a vault can hold.
SHAPES = {
    "fence with trailing blanks (Obsidian: not frontmatter)": b"---  \ntype: x\n---\nbody\n",
    "closing '...' fence (YAML's document end)": b"---\ntitle: A\n...\nbody\n",
    "leading blank line before body kept": b"---\ntitle: A\n---\n\n\n  indented body\n",
    "four dashes (a rule, not a fence)": b"----\ntitle: A\n----\nbody\n",
    "alias bomb (2^20 values)": (
        b"---\na: &a [x, x]\nb: &b [*a, *a]\nc: &c [*b, *b]\nd: &d [*c, *c]\ne: &e [*d, *d]\n"
        b"f: &f [*e, *e]\ng: &g [*f, *f]\nh: &h [*g, *g]\ni: &i [*h, *h]\nj: &j [*i, *i]\n"
        b"k: &k [*j, *j]\nl: &l [*k, *k]\nm: &m [*l, *l]\nn: &n [*m, *m]\no: &o [*n, *n]\n"
        b"p: &p [*o, *o]\nq: &q [*p, *p]\nr: &r [*q, *q]\ns: &s [*r, *r]\nt: [*s, *s]\n---\n"
    ),
}


def _handler() -> Any:
    """python-frontmatter's YAML handler loading with vaultmem's fast loader."""
    from frontmatter.default_handlers import YAMLHandler

    class FastYAML(YAMLHandler):  # type: ignore[misc]
        def load(self, fm: str, **kwargs: object) -> Any:
            kwargs.setdefault("Loader", loaders().fast)
            return super().load(fm, **kwargs)

    return FastYAML()


def theirs(raw: bytes, handler: Any) -> tuple[Any, str]:
    """python-frontmatter's answer: (metadata, body) or (error name, '')."""
    import frontmatter

    try:
        meta, body = frontmatter.parse(raw.decode("utf-8-sig"), handler=handler)
    except Exception as err:  # noqa: BLE001 - any failure is an answer to compare
        return type(err).__name__, ""
    return meta, body


def ours(raw: bytes) -> tuple[Any, str]:
    """vaultmem's answer: (metadata, body) or (error name, '')."""
    try:
        meta, parts = parse_meta(raw, "<note>")
    except NoteError:
        return "NoteError", ""
    return meta, parts.body.decode("utf-8")


def _notes(vault: Path) -> list[bytes]:
    skip = {".vaultmem", ".git", ".obsidian", ".trash"}
    return [
        p.read_bytes()
        for p in sorted(vault.rglob("*.md"))
        if not skip.intersection(p.relative_to(vault).parts)
    ]


def _timed(fn: Any, notes: list[bytes]) -> float:
    start = time.perf_counter()
    for raw in notes:
        fn(raw)
    return time.perf_counter() - start


def compare(vault: Path, repeats: int) -> dict[str, Any]:
    """Differences and timings for one vault."""
    handler = _handler()
    notes = _notes(vault)
    meta_diff = body_diff = 0
    for raw in notes:
        their_meta, their_body = theirs(raw, handler)
        our_meta, our_body = ours(raw)
        meta_diff += their_meta != our_meta
        body_diff += their_body != our_body
    times: dict[str, list[float]] = {"vaultmem": [], "python-frontmatter": []}
    for _ in range(repeats):
        times["vaultmem"].append(_timed(ours, notes))
        times["python-frontmatter"].append(_timed(lambda r: theirs(r, handler), notes))
    med = {k: statistics.median(v) for k, v in times.items()}
    return {
        "vault": str(vault),
        "notes": len(notes),
        "metadata_differs": meta_diff,
        "body_differs": body_diff,
        "median_s": med,
        "ratio": med["python-frontmatter"] / med["vaultmem"],
    }


def shapes() -> list[dict[str, Any]]:
    """Both readers' answers on the designed shapes."""
    handler = _handler()
    rows = []
    for name, raw in SHAPES.items():
        start = time.perf_counter()
        their = theirs(raw, handler)
        their_s = time.perf_counter() - start
        rows.append(
            {
                "shape": name,
                "vaultmem": _summary(ours(raw)),
                "python-frontmatter": _summary(their),
                "python-frontmatter_s": round(their_s, 3),
            }
        )
    return rows


def _summary(answer: tuple[Any, str]) -> str:
    meta, body = answer
    text = repr(meta)
    if len(text) > 60:
        text = f"{type(meta).__name__} of {len(text):,} characters"
    return f"{text}, body {body[:24]!r}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("vaults", nargs="+", type=Path)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = [compare(v, args.repeats) for v in args.vaults]
    rows = shapes()
    if args.json:
        print(json.dumps({"vaults": results, "shapes": rows}))
        return 0
    print(
        f"{'vault':<28} {'notes':>6} {'meta≠':>6} {'body≠':>6} {'vaultmem s':>11} "
        f"{'p-fm s':>8} {'ratio':>6}"
    )
    for r in results:
        m = r["median_s"]
        print(
            f"{Path(r['vault']).name:<28} {r['notes']:>6} {r['metadata_differs']:>6} "
            f"{r['body_differs']:>6} {m['vaultmem']:>11.3f} {m['python-frontmatter']:>8.3f} "
            f"{r['ratio']:>6.2f}"
        )
    print()
    for row in rows:
        print(
            f"- {row['shape']}:\n    vaultmem: {row['vaultmem']}\n"
            f"    python-frontmatter: {row['python-frontmatter']} "
            f"({row['python-frontmatter_s']} s)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
