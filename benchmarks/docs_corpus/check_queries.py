#!/usr/bin/env python3
"""Check the docs benchmark questions against the corpus.

Usage:
    python check_queries.py QUERIES.jsonl CORPUS.jsonl

Checks, for every question:
  * exactly one relevant id, and that id is in the corpus;
  * 4 to 15 words long;
  * no content word of the target's title is reused, nor of the target's
    file name (last path part, split on _ - .). Words are lowercase
    [a-z0-9]+ runs, compared after a crude suffix strip (s/es/ies/ing/ed), so
    "hooks" also forbids "hook" and "Working" forbids "work". Stop words
    (below) do not count.
Prints every offender and a summary; exit status 1 when anything fails.

Standard library only (Python 3.11+).
"""
import json
import re
import sys
from collections import Counter

STOP = set(
    """a an the and or of to in on for with from by as at is are be it its this that
    how do does i my me we you your what why when which who can into vs v not no
    than then so if via about over under out up own""".split()
)


def words(text):
    return re.findall(r"[a-z0-9]+", text.lower())


def stem(w):
    for suf, rep in (("ies", "y"), ("ing", ""), ("es", ""), ("ed", ""), ("s", "")):
        if len(w) > len(suf) + 2 and w.endswith(suf):
            return w[: -len(suf)] + rep
    return w


def forms(w):
    return {w, stem(w)}


def content(text):
    out = set()
    for w in words(text):
        if w not in STOP:
            out |= forms(w)
    return out


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    corpus = {}
    with open(argv[2], encoding="utf-8") as f:
        for line in f:
            if line.strip():
                d = json.loads(line)
                corpus[d["id"]] = d
    bad = 0
    n = 0
    targets = Counter()
    lengths = []
    with open(argv[1], encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            q = json.loads(line)
            n += 1
            rel = q.get("relevant") or []
            problems = []
            if len(rel) != 1:
                problems.append("relevant must hold exactly one id")
            for r in rel:
                targets[r] += 1
                if r not in corpus:
                    problems.append("unknown id %s" % r)
                    continue
                title = corpus[r]["title"]
                fname = r.rsplit("/", 1)[-1].replace("_", " ").replace("-", " ")
                forbidden = content(title) | content(fname)
                qforms = {w: forms(w) for w in words(q["query"]) if w not in STOP}
                hits = sorted(w for w, fs in qforms.items() if fs & forbidden)
                if hits:
                    problems.append("reuses title/file-name word(s) %s (title %r)" % (hits, title))
            nw = len(q["query"].split())
            lengths.append(nw)
            if not 4 <= nw <= 15:
                problems.append("%d words" % nw)
            if problems:
                bad += 1
                print("%s  %r -> %s: %s" % (q["qid"], q["query"], rel, "; ".join(problems)))
    print(
        "%d questions, %d offenders, %d distinct target pages (max %d questions per page), "
        "words per question %d..%d"
        % (n, bad, len(targets), max(targets.values() or [0]), min(lengths or [0]), max(lengths or [0]))
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
