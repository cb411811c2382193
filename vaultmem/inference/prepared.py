"""The shipped graph, optimised once and filed in the vault's cache, for processes that
embed a prompt and exit (issue 30).

An onnxruntime session of the shipped model at the basic optimisation level costs about
200 ms of CPU to build, most of it folding the dequantisation of the int8 weights into
fp32 constants (then a short text runs in 6 ms); a session built without optimisation
costs 45 ms but dequantises at every run (60 ms a prompt). A hook's prompt paid either.
So the first optimised session a vault's process builds also saves its graph into the
vault's private cache (``<cache>/models/``): the graph (about 55 KB) and, in a file of its
own, its fp32 weights (about 90 MB), which onnxruntime maps into memory instead of
reading. A later session loads that graph without optimising anything: 11 ms to build
and 10 ms to run a prompt without prepacking the weights (a one-shot process), 55 ms and
6 ms with it (BENCHMARKS.md, issue 30). The vectors are the same.

The copy is keyed by the shipped model's sha256 and the onnxruntime version that wrote
it, and a record beside it holds the sha256 of the graph and the identity of the weights
file written (size, inode, modification time; hashing 90 MB would cost what the copy
saves). It is read only when the folder and files are this user's and writable by nobody
else (:mod:`vaultmem.inference.model_cache`) and all of that matches; anything else is
as if it were absent. ``[embed] prepared = false`` keeps it off the disk.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
import time
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from vaultmem.client import trust_problem
from vaultmem.inference.model_cache import MODELS_DIR, private_folder, read_private, write_private

_PREFIX = "minilm-basic-"
_GRAPH = ".onnx"
_WEIGHTS = ".weights"
_RECORD = ".json"
_MAX_GRAPH = 8 << 20  # the graph alone; the weights are in their own file
_MAX_RECORD = 4096
#: A folder a session was saving into is left behind only by a process that died
#: meanwhile; one this old is removed by the next save.
_STALE_SAVE_S = 3600


@dataclass(frozen=True)
class Filed:
    """A filed copy: its graph's bytes (as checked) and the folder its weights lie in."""

    graph: bytes
    folder: Path
    name: str


def stem(source_sha256: str, runtime_version: str) -> str:
    """The file name (less its suffix) of the copy of the model with ``source_sha256``
    optimised by onnxruntime ``runtime_version``."""
    version = re.sub(r"[^0-9A-Za-z.]+", "_", runtime_version)[:40]
    return f"{_PREFIX}{source_sha256[:16]}-ort{version}"


def filed(cache_dir: Path, source_sha256: str, runtime_version: str) -> Filed | None:
    """The copy filed under ``cache_dir`` for this model and onnxruntime, when it is sound
    and this user's own; None otherwise."""
    folder = cache_dir / MODELS_DIR
    name = stem(source_sha256, runtime_version)
    try:
        info = os.lstat(folder)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or trust_problem(str(folder), info):
        return None
    record = _record(read_private(folder / (name + _RECORD), _MAX_RECORD))
    if record is None or record.get("source_sha256") != source_sha256:
        return None
    if record.get("onnxruntime") != runtime_version:
        return None
    graph = read_private(folder / (name + _GRAPH), _MAX_GRAPH)
    if graph is None or hashlib.sha256(graph).hexdigest() != record.get("graph_sha256"):
        return None
    if _identity(folder / (name + _WEIGHTS)) != record.get("weights"):
        return None
    return Filed(graph, folder, name)


def any_filed(cache_dir: Path) -> bool:
    """Whether a copy's record of any model or onnxruntime version is there (a look at
    the folder: nothing imported, nothing checked)."""
    return any((cache_dir / MODELS_DIR).glob(_PREFIX + "*" + _RECORD))


def forget(cache_dir: Path, source_sha256: str, runtime_version: str) -> None:
    """Drop the record of a copy that failed to load, so that it is filed anew."""
    name = stem(source_sha256, runtime_version)
    with suppress(OSError):
        os.unlink(cache_dir / MODELS_DIR / (name + _RECORD))


def _record(raw: bytes | None) -> dict[str, object] | None:
    if raw is None:
        return None
    try:
        record = json.loads(raw)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _identity(path: Path) -> list[int] | None:
    """What tells the weights file written from any other: size, inode, mtime (None when
    it is not a regular file of this user's that nobody else may write)."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode) or trust_problem(str(path), info):
        return None
    return [info.st_size, info.st_ino, info.st_mtime_ns]


class Saving:
    """A private folder inside ``<cache>/models/`` that a session being built saves its
    optimised graph into (:meth:`config`), then moved into place by :meth:`file`."""

    def __init__(self, folder: Path, work: Path, name: str) -> None:
        self.folder = folder
        self.work = work
        self.name = name

    @classmethod
    def start(cls, cache_dir: Path, source_sha256: str, runtime_version: str) -> Saving | None:
        """A folder to save into; None when the models folder is not this user's own or
        cannot be written."""
        folder = private_folder(cache_dir / MODELS_DIR)
        if folder is None:
            return None
        _drop_stale(folder)
        try:
            work = Path(tempfile.mkdtemp(prefix=".saving-", dir=folder))
        except OSError:
            return None
        return cls(folder, work, stem(source_sha256, runtime_version))

    @property
    def graph_path(self) -> Path:
        """Where onnxruntime writes the optimised graph (``optimized_model_filepath``)."""
        return self.work / (self.name + _GRAPH)

    def config(self) -> dict[str, str]:
        """The session config entries that put the weights in a file of their own (named
        relative to the graph, so that both can move together)."""
        return {
            "session.optimized_model_external_initializers_file_name": self.name + _WEIGHTS,
            "session.optimized_model_external_initializers_min_size_in_bytes": "1024",
        }

    def file(self, source_sha256: str, runtime_version: str) -> bool:
        """Move what the session saved into place, then write its record; False (and
        nothing filed) when it cannot. Other models' copies in the folder are removed."""
        try:
            graph = self.graph_path.read_bytes()
            for suffix in (_WEIGHTS, _GRAPH):
                os.chmod(self.work / (self.name + suffix), 0o600)
                os.replace(self.work / (self.name + suffix), self.folder / (self.name + suffix))
            record = {
                "source_sha256": source_sha256,
                "onnxruntime": runtime_version,
                "graph_sha256": hashlib.sha256(graph).hexdigest(),
                "weights": _identity(self.folder / (self.name + _WEIGHTS)),
            }
            write_private(self.folder / (self.name + _RECORD), json.dumps(record).encode())
        except OSError:
            return False
        finally:
            self.discard()
        self._drop_others()
        return True

    def discard(self) -> None:
        """Remove the folder saved into (what it still holds was not filed)."""
        shutil.rmtree(self.work, ignore_errors=True)

    def _drop_others(self) -> None:
        """The copies of other models or onnxruntime versions: 90 MB each, never read."""
        mine = {self.name + suffix for suffix in (_GRAPH, _WEIGHTS, _RECORD)}
        for path in self.folder.glob(_PREFIX + "*"):
            if path.name not in mine:
                with suppress(OSError):
                    path.unlink()


def _drop_stale(folder: Path) -> None:
    now = time.time()
    for path in folder.glob(".saving-*"):
        with suppress(OSError):
            if now - os.lstat(path).st_mtime > _STALE_SAVE_S:
                shutil.rmtree(path, ignore_errors=True)
