"""Why fragments rank notes as they do: fragmenting, prefix, pooling and model variants,
scored offline by exact cosine (issue 30, item 1).

    python benchmarks/tune_fragments.py --vault V --queries Q.jsonl [--queries Q2.jsonl]
        [--variant NAME ...] [--model int8|fp32] [--cache FILE] [--list]

Every note of the vault (parsed as the indexer parses it) is cut by each variant, each
piece embedded (vectors cached by model and text in ``--cache``, so variants that share
pieces embed them once), and each query ranks the notes by the variant's pooling of its
pieces' cosines. No memory prior, no keyword list: this isolates the vector side. Prints
MRR@10 and recall@10 per variant and query file, and one JSON line each.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sqlite3
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from baseline_windows import metrics, windows  # noqa: E402

from vaultmem import fragments as fr  # noqa: E402
from vaultmem.note import Note, parse_note  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Piece:
    """One embedded text of a note, and whether it opens the note."""

    text: str
    lead: bool


Cut = Callable[[Note, str], list[Piece]]
Pool = Callable[[np.ndarray, np.ndarray], float]


def _title(note: Note, stem: str, *, file_title: bool) -> str:
    if note.title_source == "file":
        return stem if file_title else ""
    return note.title


def shipped(file_title: bool = False, **kw: object) -> Cut:
    """vaultmem's fragments (``kw``: max_chars, overlap, min_chars, prefix)."""

    def cut(note: Note, stem: str) -> list[Piece]:
        title = _title(note, stem, file_title=file_title)
        frags = fr.fragments(note.body, title=title, body_start_line=note.body_start_line, **kw)
        return [Piece(f.text, i == 0) for i, f in enumerate(frags)]

    return cut


def title_only(file_title: bool = False, **kw: object) -> Cut:
    """vaultmem's fragments with the title alone in front (no heading path)."""

    def cut(note: Note, stem: str) -> list[Piece]:
        title = _title(note, stem, file_title=file_title)
        frags = fr.fragments(note.body, title="", body_start_line=note.body_start_line, **kw)
        out = []
        for i, f in enumerate(frags):
            head = fr.PATH_SEPARATOR.join(f.heading_path)
            body = f.text[len(head) + 1 :] if head and f.text.startswith(head + "\n") else f.text
            out.append(Piece(f"{title}\n{body}" if title else body, i == 0))
        return out

    return cut


def plain(size: int = 1000) -> Cut:
    """The baseline's windows (baseline_windows.py), from the parsed body."""

    def cut(note: Note, stem: str) -> list[Piece]:
        title = note.title if note.title_source != "file" else stem
        return [Piece(t, i == 0) for i, t in enumerate(windows(title, note.body, size))]

    return cut


def pool_max(sims: np.ndarray, lead: np.ndarray) -> float:
    return float(sims.max())


def pool_top2(weight: float) -> Pool:
    def pool(sims: np.ndarray, lead: np.ndarray) -> float:
        if len(sims) < 2:
            return float(sims.max())
        a, b = np.sort(sims)[-2:][::-1]
        return float(a + weight * (b - a)) if b > 0 else float(a)

    return pool


def pool_lead(weight: float) -> Pool:
    def pool(sims: np.ndarray, lead: np.ndarray) -> float:
        best = float(sims.max())
        first = float(sims[lead].max()) if lead.any() else best
        return (1 - weight) * best + weight * first

    return pool


VARIANTS: dict[str, tuple[Cut, Pool]] = {
    "shipped": (shipped(), pool_max),
    "shipped+file title": (shipped(file_title=True), pool_max),
    "title only": (title_only(), pool_max),
    "title only+file title": (title_only(file_title=True), pool_max),
    "plain windows": (plain(), pool_max),
    "min 500": (shipped(min_chars=500), pool_max),
    "min 1000 (cross sections)": (shipped(min_chars=1000), pool_max),
    "min 1000+file title": (shipped(min_chars=1000, file_title=True), pool_max),
    "title only, min 1000, file title": (title_only(file_title=True, min_chars=1000), pool_max),
    "min 100": (shipped(min_chars=100), pool_max),
    "overlap 0": (shipped(overlap=0.0), pool_max),
    "shipped, top2 0.2": (shipped(), pool_top2(0.2)),
    "shipped, lead 0.2": (shipped(), pool_lead(0.2)),
    "shipped+file title, top2 0.2": (shipped(file_title=True), pool_top2(0.2)),
    "shipped, lead 0.1": (shipped(), pool_lead(0.1)),
    "shipped, lead 0.3": (shipped(), pool_lead(0.3)),
    "shipped, lead 0.4": (shipped(), pool_lead(0.4)),
    "shipped, lead 0.5": (shipped(), pool_lead(0.5)),
    "shipped, top2 0.1": (shipped(), pool_top2(0.1)),
    "shipped, top2 0.3": (shipped(), pool_top2(0.3)),
}


class Vectors:
    """Vectors by model and text sha1, in one SQLite file."""

    def __init__(self, path: Path, model: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path)
        self.db.execute("CREATE TABLE IF NOT EXISTS v (k TEXT PRIMARY KEY, vec BLOB)")
        self.model = model
        self._embedder: object | None = None

    def _embed(self, texts: list[str]) -> np.ndarray:
        if self._embedder is None:
            from vaultmem.inference.local import LocalEmbedder

            self._embedder = LocalEmbedder(int8=self.model == "int8")
        return np.asarray(self._embedder.embed(texts), dtype=np.float32)  # type: ignore[attr-defined]

    def seed(self, cache_dir: Path) -> None:
        """Take the vectors a vault's own flat snapshot holds for this model (its ids are
        the sha1 of the embedded text), so the shipped fragments need no embedding."""
        import glob

        from vaultmem.inference.local import LocalEmbedder

        model_id = LocalEmbedder(int8=self.model == "int8").model_id
        from vaultmem.index.vectors import collection_name

        name = collection_name(model_id, 384)
        for ids_file in glob.glob(str(cache_dir / "vectors" / "snapshots" / f"{name}.*.ids")):
            ids = json.loads(Path(ids_file).read_text())["ids"]
            matrix = np.load(ids_file[: -len(".ids")] + ".npy")
            self._seeded = dict(zip(ids, matrix, strict=True))
            print(f"  seeded {len(ids)} vectors from {ids_file}", file=sys.stderr)

    def get(self, texts: Sequence[str]) -> np.ndarray:
        """Every text's vector, embedding (and storing) those not cached yet."""
        seeded = getattr(self, "_seeded", {})
        if seeded:
            digests = [hashlib.sha1(t.encode("utf-8", "surrogatepass")).hexdigest() for t in texts]
            if all(d in seeded for d in digests):
                rows = np.stack([seeded[d] for d in digests]).astype(np.float32)
                return rows / np.linalg.norm(rows, axis=1, keepdims=True)
        keys = [
            hashlib.sha1(f"{self.model}\0{t}".encode("utf-8", "surrogatepass")).hexdigest()
            for t in texts
        ]
        found: dict[str, np.ndarray] = {}
        unique = sorted(set(keys))
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for k, blob in self.db.execute(f"SELECT k, vec FROM v WHERE k IN ({marks})", chunk):
                found[k] = np.frombuffer(blob, dtype=np.float32)
        missing = list({k: t for k, t in zip(keys, texts, strict=True) if k not in found}.items())
        if missing:
            started = time.perf_counter()
            print(f"  embedding {len(missing)} texts ({self.model})", file=sys.stderr)
        for start in range(0, len(missing), 400):
            part = missing[start : start + 400]
            vecs = self._embed([t for _, t in part])
            self.db.executemany(
                "INSERT OR REPLACE INTO v VALUES (?, ?)",
                [(k, v.tobytes()) for (k, _), v in zip(part, vecs, strict=True)],
            )
            self.db.commit()
            found.update((k, v) for (k, _), v in zip(part, vecs, strict=True))
        if missing:
            print(f"  … {time.perf_counter() - started:.0f} s", file=sys.stderr)
        return np.stack([found[k] for k in keys])


def read_notes(vault: Path) -> dict[str, tuple[Note, str]]:
    """path → (parsed note, file stem), as the indexer reads them."""
    out = {}
    for path in sorted(vault.rglob("*.md")):
        rel = path.relative_to(vault).as_posix()
        if any(part.startswith(".") for part in rel.split("/")):
            continue
        out[rel] = (parse_note(rel, path.read_bytes()), path.stem)
    return out


def score(
    notes: dict[str, tuple[Note, str]],
    cut: Cut,
    pool: Pool,
    vectors: Vectors,
    gold: list[dict],
    qvecs: np.ndarray,
) -> tuple[dict[str, float], list[dict]]:
    """Mean metrics of one variant over ``gold`` and each query's ranking."""
    paths = sorted(notes)
    pieces = {p: cut(*notes[p]) for p in paths}
    texts = [pc.text for p in paths for pc in pieces[p]]
    owner = np.asarray([i for i, p in enumerate(paths) for _ in pieces[p]])
    lead = np.asarray([pc.lead for p in paths for pc in pieces[p]])
    matrix = vectors.get(texts)
    bounds = np.searchsorted(owner, np.arange(len(paths) + 1))
    totals: dict[str, float] = {}
    runs = []
    for g, qv in zip(gold, qvecs, strict=True):
        sims = matrix @ qv
        best = np.full(len(paths), -2.0)
        np.maximum.at(best, owner, sims)
        # Pool only the notes that could make the top 10 by their best piece (cheap).
        top = np.argsort(-best)[:40]
        pooled = {
            int(i): pool(sims[bounds[i] : bounds[i + 1]], lead[bounds[i] : bounds[i + 1]])
            for i in top
        }
        ranked = [paths[i] for i in sorted(pooled, key=lambda i: -pooled[i])[:10]]
        runs.append({"qid": g["qid"], "ranked": ranked})
        for name, value in metrics(ranked, g["relevant"]).items():
            totals[name] = totals.get(name, 0.0) + value
    summary = {k: round(v / len(gold), 4) for k, v in totals.items()}
    summary["pieces"] = len(texts)
    return summary, runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vault", type=Path, required=True)
    parser.add_argument("--queries", type=Path, action="append", required=True)
    parser.add_argument("--variant", action="append", help="default: every variant")
    parser.add_argument("--model", default="int8", choices=["int8", "fp32"])
    parser.add_argument("--cache", type=Path, default=REPO / "bench-vaults" / "fragments.sqlite")
    parser.add_argument("--runs-dir", type=Path, help="write each variant's rankings here")
    parser.add_argument("--list", action="store_true", help="list the variants and stop")
    parser.add_argument(
        "--seed", action="store_true", help="reuse the vault's own snapshot vectors where they fit"
    )
    args = parser.parse_args()
    if args.list:
        print("\n".join(VARIANTS))
        return
    notes = read_notes(args.vault)
    vectors = Vectors(args.cache, args.model)
    if args.seed:
        vectors.seed(args.vault / ".vaultmem")
    golds = {
        q: [json.loads(line) for line in q.read_text().splitlines() if line.strip()]
        for q in args.queries
    }
    qvecs = {q: vectors.get([g["query"] for g in gold]) for q, gold in golds.items()}
    for name in args.variant or list(VARIANTS):
        cut, pool = VARIANTS[name]
        for q, gold in golds.items():
            summary, runs = score(notes, cut, pool, vectors, gold, qvecs[q])
            print(
                f"{name:40s} {q.name:28s} MRR@10 {summary['mrr@10']:.4f} "
                f"R@10 {summary['recall@10']:.4f} R@1 {summary['recall@1']:.4f} "
                f"({summary['pieces']} pieces)",
                flush=True,
            )
            line = {"variant": name, "queries": q.name, "model": args.model, **summary}
            print(json.dumps(line), file=sys.stderr)
            if args.runs_dir:
                args.runs_dir.mkdir(parents=True, exist_ok=True)
                slug = "".join(c if c.isalnum() else "_" for c in f"{name}-{q.stem}-{args.model}")
                (args.runs_dir / f"{slug}.jsonl").write_text(
                    "".join(json.dumps(r) + "\n" for r in runs)
                )


if __name__ == "__main__":
    main()
