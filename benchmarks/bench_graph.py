"""Time the link graph on an indexed vault: a first build, a load when nothing changed,
a load after one note changed, the lookups, and `links` backlinks from the graph vs the
file scan; then the same on a copy of the manifest whose notes get synthetic links.

The vault and its manifest are only read; ``graph.sqlite`` in the cache folder is
rebuilt, and the synthetic run works in a temp folder.

    python benchmarks/bench_graph.py --vault bench-vaults/scale6 --cache /tmp/s6cache
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from vaultmem.config import Config, build
from vaultmem.index import manifest as mf
from vaultmem.index.graph import FILE_NAME, LinkGraph, index_current
from vaultmem.lookup import note_names
from vaultmem.memory.links import _backlinks, _graph_backlinks
from vaultmem.note import read_note
from vaultmem.vault import LinkResolver


def timed(what: Callable[[], object], runs: int = 3) -> float:
    """The best wall time of ``runs`` calls, in seconds."""
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        what()
        best = min(best, time.perf_counter() - start)
    return best


def drop_graph(cache: Path) -> None:
    """Delete the stored graph (database and its WAL files)."""
    for suffix in ("", "-wal", "-shm"):
        (cache / (FILE_NAME + suffix)).unlink(missing_ok=True)


def touch_one(cache: Path, path: str) -> None:
    """Change one row's hash in the manifest, as an edit of that note and `index` would."""
    with mf.open_writer(cache)[0] as store, store.transaction():
        entry = store.get(path)
        assert entry is not None
        store.upsert({path: mf.Entry(**{**entry.__dict__, "hash": str(time.time_ns())})})


def graph_times(config: Config, label: str) -> LinkGraph:
    """Print the build, load and lookup times of the vault's graph."""
    cache = config.cache_dir
    none: dict[str, tuple[int, int]] = {}
    paths = sorted(mf.read(cache, none, mf.Store.stats))

    def first() -> LinkGraph:
        drop_graph(cache)
        return LinkGraph.load(config)

    def after_edit() -> LinkGraph:
        touch_one(cache, random.choice(paths))
        return LinkGraph.load(config)

    build_s = timed(first, 1)
    graph = LinkGraph.load(config)
    print(f"[{label}] {len(paths)} notes, {len(graph)} edges")
    print(f"  first build (resolve all)   {build_s:8.3f} s")
    print(f"  load, nothing changed       {timed(lambda: LinkGraph.load(config)):8.4f} s")
    print(f"  load after one note changed {timed(after_edit):8.3f} s (includes the manifest write)")
    sample = random.Random(12).sample(paths, min(200, len(paths)))
    start = time.perf_counter()
    for p in sample:
        graph.out(p), graph.into(p)
    per = (time.perf_counter() - start) / len(sample) * 1e6
    print(f"  out + into of one note      {per:8.1f} µs")
    return graph


def synthetic(config: Config, per_note: int) -> None:
    """The same timings on a copy of the manifest where every note has ``per_note`` links
    (to random notes by file name, and one dangling): the man-page vaults have almost none."""
    rng = random.Random(12)
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp)
        shutil.copy(config.cache_dir / mf.FILE_NAME, cache / mf.FILE_NAME)
        with sqlite3.connect(cache / mf.FILE_NAME) as conn:
            paths = [p for (p,) in conn.execute("SELECT path FROM notes")]
            stems = [PurePosixPath(p).stem for p in paths]
            conn.executemany(
                "UPDATE notes SET links = ? WHERE path = ?",
                (
                    (
                        json.dumps(
                            [["wikilink", rng.choice(stems)] for _ in range(per_note - 1)]
                            + [["related", "No such note"]]
                        ),
                        p,
                    )
                    for p in paths
                ),
            )
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('rows_version', 'synthetic')")
        copy = Config(**{**config.__dict__, "cache_dir": cache})
        graph_times(copy, f"synthetic, {per_note} links a note")


def main() -> None:
    """Print one line per measurement."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vault", type=Path, required=True)
    parser.add_argument("--cache", type=Path, help="the vault's cache folder (indexed)")
    parser.add_argument("--notes", type=int, default=5, help="notes to time `links` on")
    parser.add_argument("--synthetic", type=int, default=8, help="links per note (0: skip)")
    args = parser.parse_args()
    config = build(args.vault, {"cache_dir": str(args.cache)} if args.cache else {})
    graph_times(config, "as indexed")
    print(f"  index_current (one walk)    {timed(lambda: index_current(config)):8.3f} s")
    names = note_names(config)
    resolver = LinkResolver(names)
    paths = [n.path for n in names]
    picks = random.Random(12).sample(paths, min(args.notes, len(paths)))

    def scan_all() -> None:
        for p in picks:
            _backlinks(config, read_note(config.vault, p), paths, resolver)

    scan = timed(scan_all, 1)
    via_graph = timed(lambda: [_graph_backlinks(config, p) for p in picks], 1)
    print(f"  backlinks, file scan        {scan / len(picks):8.3f} s a note")
    print(f"  backlinks, graph            {via_graph / len(picks):8.4f} s a note (load included)")
    if args.synthetic:
        synthetic(config, args.synthetic)


if __name__ == "__main__":
    main()
