"""How often the password-shape rule fires on ordinary text full of syntax.

    python benchmarks/bench_redaction_shape.py [--manpages CORPUS.jsonl ...] [--vault DIR ...]
                                               [--site-packages] [--top 20]

:mod:`vaultmem.agent.password_shape` redacts a word that mixes a lower-case letter, a
capital, a digit and a symbol wherever it stands. That is only safe if ordinary text
seldom has such words: this script runs the rule (alone, not the whole redactor) over
corpora that hold a lot of syntax and prints, per corpus, the documents it fired in and
the words it took, most frequent first:

- ``--manpages``: a JSONL corpus of man pages (``{"body": …}`` or ``{"text": …}`` per
  line), e.g. ``../shared/bench/manpages/scale/corpus.jsonl`` (15,926 pages);
- ``--vault``: every ``.md`` file under a folder (example-vault by default);
- ``--site-packages``: every ``.py``, ``.md`` and ``.rst`` file of the installed Python
  packages (library code, tests and docs: tests hold random strings on purpose).
"""

from __future__ import annotations

import argparse
import json
import site
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from vaultmem.agent.password_shape import shape_spans  # noqa: E402


def scan(name: str, texts: Iterable[str], top: int) -> None:
    """Print how many of ``texts`` the rule fired in, and its most frequent words."""
    words: Counter[str] = Counter()
    docs = fired = 0
    started = time.perf_counter()
    for text in texts:
        docs += 1
        found = [text[s:e] for s, e in shape_spans(text)]
        fired += bool(found)
        words.update(found)
    took = time.perf_counter() - started
    print(f"{name}: {docs} documents, fired in {fired}, {sum(words.values())} words, {took:.1f} s")
    for word, count in words.most_common(top):
        print(f"  {count:4d}  {word}")


def _jsonl(path: Path) -> Iterator[str]:
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            yield row.get("body") or row.get("text") or ""


def _files(paths: Iterable[Path]) -> Iterator[str]:
    for path in paths:
        try:
            yield path.read_text("utf-8")
        except (UnicodeDecodeError, OSError):
            continue


def main() -> int:
    """Scan the corpora named on the command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--manpages", type=Path, action="append", default=[])
    parser.add_argument("--vault", type=Path, action="append", default=[])
    parser.add_argument("--site-packages", action="store_true")
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args()
    for corpus in args.manpages:
        scan(str(corpus), _jsonl(corpus), args.top)
    for vault in args.vault or [REPO / "example-vault"]:
        scan(str(vault), _files(sorted(vault.rglob("*.md"))), args.top)
    if args.site_packages:
        roots = [Path(p) for p in site.getsitepackages()]
        paths = sorted(p for r in roots for ext in ("py", "md", "rst") for p in r.rglob(f"*.{ext}"))
        scan("site-packages", _files(paths), args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
