"""A digest of a vault's keyword index as Whoosh's readers see it (issue 21).

    python benchmarks/index_digest.py VAULT [--workers N]
    PYTHONPATH=/tmp/old python benchmarks/index_digest.py VAULT   # earlier code

Builds the keyword index of VAULT from nothing (its ``.vaultmem/`` is removed first) and
prints how many postings it holds and a sha256 over every posting (field, term, note
path, weight, encoded value), every note's stored fields and its length columns. Two
builds hold the same index exactly when their digests are equal, whatever their segment
files look like (document numbers are replaced by note paths).
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
from pathlib import Path

from vaultmem.config import build
from vaultmem.index.lexical import LexicalIndex
from vaultmem.indexer import index_vault


def digest(vault: Path, workers: int) -> tuple[int, str]:
    """(postings, sha256) of a cold build of ``vault``'s keyword index."""
    shutil.rmtree(vault / ".vaultmem", ignore_errors=True)
    config = build(vault, {})
    index_vault(config, workers=workers)
    reader = LexicalIndex.open(config.cache_dir).searcher().reader()
    paths = {docnum: fields["path"] for docnum, fields in reader.iter_docs()}
    sha, count = hashlib.sha256(), 0
    for field, term in sorted(reader.all_terms()):
        matcher, rows = reader.postings(field, term), []
        while matcher.is_active():
            rows.append((paths[matcher.id()], matcher.weight(), matcher.value()))
            matcher.next()
        sha.update(repr((field, term, sorted(rows))).encode())
        count += len(rows)
    for _, fields in sorted(reader.iter_docs(), key=lambda d: d[1]["path"]):
        sha.update(repr(sorted(fields.items())).encode())
    for column in ("len_text", "len_lead", "len_names"):
        values = reader.column_reader(column)
        sha.update(repr(sorted((paths[d], values[d]) for d in paths)).encode())
    return count, sha.hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("vault", type=Path)
    ap.add_argument("--workers", type=int, default=1, help="index processes (default 1)")
    args = ap.parse_args()
    count, sha = digest(args.vault, args.workers)
    print(f"{count} postings, sha256 {sha}")


if __name__ == "__main__":
    main()
