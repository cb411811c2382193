"""Models: embedders (in-process ONNX MiniLM, OpenAI-compatible endpoints), chat LLMs for
query expansion and write-back, and rerankers, behind small protocols (:mod:`.base`).

Stores-and-models layer: it may import configuration and core values only (never the
indexes, retrieval or anything above). The heavy imports (onnxruntime, openai) stay inside
the functions that need them.
"""
