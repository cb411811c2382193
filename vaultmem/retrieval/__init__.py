"""Retrieval: the read side of the vault, from a query to ranked, explained hits.

Modules:

- ``search``: `search`, BM25F hits turned into results with their best line.
- ``vsearch``: `vsearch` and `similar`, nearest fragments by vector, grouped to notes.
- ``snippets``: the best matching line of a note for a query.
- ``query``: the hybrid `query` pipeline (SPEC §6), running its stages in order:

  - ``query_types``: its request and result values (options, backends, stages,
    traces, the ``--explain`` JSON);
  - ``expansion``: query expansion by the llm role, and its cache;
  - ``query_lists``: the keyword probe and the BM25 and vector lists fusion reads;
  - ``fragment_choice``: each candidate's fragment (what is reranked and shown);
  - ``reorder``: rerank, MMR demotion, the memory prior and the intent route.

- ``fusion``: the pipeline's arithmetic, pure (z-score fusion, blend, MMR).
- ``memory_rank``: the bounded memory prior and review slots (SPEC §5).
- ``routing``: intent routes (why, when, entity, what) and their orders.

May import: :mod:`vaultmem.index` and :mod:`vaultmem.inference` (stores and models),
:mod:`vaultmem.lookup` and :mod:`vaultmem.memory_state`, and the core modules below them
(model, scores, config, vault, note, errors, …). Never :mod:`vaultmem.memory`,
``agent``, ``api``, ``cli``, ``servers`` or any other feature or front end
(``[tool.importlinter]`` in pyproject.toml; tests/test_layers.py).
"""
