#!/usr/bin/env python3
"""Split queries.jsonl into queries_tune.jsonl and queries_heldback.jsonl.

Usage: python split_queries.py [QUERIES.jsonl] [OUT_DIR]

The questions (in file order) are shuffled with random.Random(20261204); the
first len//2 go to queries_tune.jsonl, the rest to queries_heldback.jsonl.
Each output keeps the shuffled order. Standard library only.
"""
import json
import os
import random
import sys

src = sys.argv[1] if len(sys.argv) > 1 else "queries.jsonl"
out = sys.argv[2] if len(sys.argv) > 2 else os.path.dirname(os.path.abspath(src))
with open(src, encoding="utf-8") as f:
    qs = [json.loads(line) for line in f if line.strip()]
random.Random(20261204).shuffle(qs)
half = len(qs) // 2
for name, part in (("queries_tune.jsonl", qs[:half]), ("queries_heldback.jsonl", qs[half:])):
    with open(os.path.join(out, name), "w", encoding="utf-8", newline="\n") as f:
        for q in part:
            f.write(json.dumps(q, ensure_ascii=False) + "\n")
    print("%s: %d questions" % (name, len(part)))
