"""Index: the disposable sidecar stores in ``.vaultmem/``, rebuilt from the notes.

Modules:

- ``lexical``: the Whoosh BM25F keyword index: open, write, search, generation folders.
- ``lexical_schema``: what that index holds: schema, codec, field weights, and how a
  note becomes a document.
- ``analysis``: the text analysis documents and queries share (stems, stop words).
- ``live_stats``: BM25 statistics over the live documents only.
- ``whoosh_light``: importing Whoosh without the modules it never uses.
- ``manifest``: per-note rows (SQLite) of what the indexes hold, so `index` touches
  changes only.
- ``records``: which fragments each note has and which have vectors.
- ``vectors``: the Chroma vector store (ids and vectors only);
  ``chroma_import``: importing chromadb cheaply.
- ``vector_snapshot``: a flat, exact-cosine copy of one collection that one-shot reads
  use instead of Chroma while no write came since; ``vector_reads``: which of the two
  a read uses.
- ``graph``: the link graph, typed links and wikilinks resolved to note paths.

May import the core modules only (model, scores, config, vault, note, fragments,
markdown, errors, …). Never :mod:`vaultmem.inference` (a sibling layer),
:mod:`vaultmem.retrieval`, or anything above it (``[tool.importlinter]`` in
pyproject.toml; tests/test_layers.py).
"""
