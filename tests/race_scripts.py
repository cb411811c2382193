"""The processes that race vaultmem's write-backs, shared by tests/test_rewrite_race.py
and benchmarks/bench_write_race.py. Each is a ``python -c`` script taking
``PATH COUNT SECONDS_BETWEEN``; marker ``i`` is written by its ``i``-th step."""

HELM = "decisions/Helm charts over Kustomize.md"

# An editor that saves the way Obsidian does: read, change, temp file, rename over.
SAVER = r"""
import os, sys, time
path, count, every = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
tmp = os.path.join(os.path.dirname(path), ".editor-save.tmp")
for i in range(count):
    with open(path, "rb") as fh:
        raw = fh.read()
    with open(tmp, "wb") as fh:
        fh.write(raw + b"marker %d\n" % i)
    os.replace(tmp, path)
    time.sleep(every)
"""

# A process appending lines to the note: open, write, close.
APPENDER = r"""
import sys, time
path, count, every = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
for i in range(count):
    with open(path, "a") as fh:
        fh.write("appended %d\n" % i)
    time.sleep(every)
"""
