#!/usr/bin/env python3
"""Plain BM25 baseline over a JSONL corpus (no vaultmem code).

Usage: python bm25_baseline.py CORPUS.jsonl QUERIES.jsonl RUN.jsonl [--k 10]

Same settings as the man-page reference: each document is its title + body,
lowercase \\w+ tokens, no stemming, no stop words, k1 = 1.2, b = 0.75,
idf = ln(1 + (N - df + 0.5) / (df + 0.5)). Writes {"qid", "ranked"} lines
(top K ids) for ../shared/bench/score.py. Standard library only.
"""
import argparse
import json
import math
import re
from collections import Counter

TOK = re.compile(r"\w+")


def toks(text):
    return TOK.findall(text.lower())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus")
    ap.add_argument("queries")
    ap.add_argument("run")
    ap.add_argument("--k", type=int, default=10)
    a = ap.parse_args()
    ids, tfs, lens = [], [], []
    df = Counter()
    with open(a.corpus, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                d = json.loads(line)
                tf = Counter(toks(d["title"] + "\n" + d["body"]))
                ids.append(d["id"])
                tfs.append(tf)
                lens.append(sum(tf.values()))
                df.update(tf.keys())
    n = len(ids)
    avg = sum(lens) / n
    k1, b = 1.2, 0.75
    idf = {t: math.log(1 + (n - c + 0.5) / (c + 0.5)) for t, c in df.items()}
    with open(a.queries, encoding="utf-8") as f, open(a.run, "w", encoding="utf-8") as out:
        for line in f:
            if not line.strip():
                continue
            q = json.loads(line)
            terms = Counter(toks(q["query"]))
            scores = []
            for i, tf in enumerate(tfs):
                s = 0.0
                for t, qn in terms.items():
                    x = tf.get(t)
                    if x:
                        s += qn * idf[t] * x * (k1 + 1) / (x + k1 * (1 - b + b * lens[i] / avg))
                if s > 0:
                    scores.append((-s, ids[i]))
            scores.sort()
            out.write(json.dumps({"qid": q["qid"], "ranked": [d for _, d in scores[: a.k]]}) + "\n")


if __name__ == "__main__":
    main()
