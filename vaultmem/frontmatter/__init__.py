"""Byte-exact frontmatter write-back.

vaultmem keeps its state in the YAML frontmatter of the user's notes, so every write must
change only vaultmem's own keys (``OWNED_KEYS``) and leave every other byte alone: other
keys with their quoting, order and comments, the body, line endings, the BOM. Re-serialising
the YAML would reformat the user's keys, so edits are made on the *text*: the extent of a
top-level key (its line through the last line of its value) is located with PyYAML's event
marks, then replaced, deleted, or new keys are appended at the end of the block.

Every edit is checked by re-parsing the result before it is returned; a write-back that
would not round-trip raises instead of touching the note.

Hostile notes are refused in one line naming the note and the line, by every reader and
writer alike: a note that is not UTF-8 (:func:`scan.check_encoding`), YAML aliases that
expand past ``MAX_EXPANDED_VALUES`` values (an alias bomb) or a value that contains itself,
nesting deeper than ``MAX_DEPTH``, tags other than YAML's standard ones. A write is also
refused for a top-level key written twice and for an opening fence with trailing blanks.
Closing fences with trailing blanks and classic-Mac CR line breaks are read and kept;
comments inside an owned key survive its rewrite. Invalid dates load as text, and an
owned key with an invalid value reads as absent (:func:`owned.owned_problem`).

An undoable write keeps the exact lines it replaces in the note itself: the update value
:class:`edit.ReplacedLines` stores a key's lines (value, comments, spacing) as the text of
its ``UNDO_KEYS`` key (``status_before``…), and :class:`edit.KeyLines` writes such text
back, so the vault stays the only state of an undo.

The modules, the scanner below the editor (each imports only those above it):

- :mod:`.scan`: split a note into BOM, frontmatter and body, check it is UTF-8, load the
  YAML and refuse hostile shapes (``split``, ``parse_meta``, ``check_encoding``, ``Parts``).
- :mod:`.render`: values rendered as frontmatter text and compared as a person reads them
  (``render_value``, ``same_value``).
- :mod:`.layout`: where each top-level key and comment lives in the text (``owned_lines``,
  ``frontmatter_lines``, ``duplicate_keys``).
- :mod:`.owned`: what a valid owned value is (``owned_problem``, ``owned_warnings``,
  ``saved_lines_problem``, ``iso_time``).
- :mod:`.edit`: the text edit and its read-back check (``apply``, ``ReplacedLines``,
  ``KeyLines``).
- :mod:`.files`: a note file updated in place (``update_note``, ``WriteResult``).

Import each name from the module that holds it: this file re-exports nothing.
``OWNED_KEYS`` and ``UNDO_KEYS`` live in :mod:`vaultmem.properties`.

Layer: core values. This package may import only :mod:`vaultmem.atomic`,
:mod:`vaultmem.conflict_markers`, :mod:`vaultmem.errors`, :mod:`vaultmem.properties`,
:mod:`vaultmem.scores`, :mod:`vaultmem.model`, the standard library and PyYAML (imported
inside functions: a keyword search never loads it); never the index, retrieval, memory,
agent, api, cli or server layers.
"""
