"""Headings, wikilinks and tags as Obsidian reads them."""

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vaultmem.markdown import _parsed_blocks, _scanned_blocks, expand_tag, outline


def test_headings_skip_code_fences() -> None:
    body = "# Title\n\n```bash\n# not a heading\n```\n\n## Real\n"
    shape = outline(body)
    assert [(h.level, h.text, h.line) for h in shape.headings] == [(1, "Title", 1), (2, "Real", 7)]
    assert shape.code_lines == frozenset({3, 4, 5})


def test_setext_heading() -> None:
    shape = outline("Intro\n=====\n\ntext\n")
    assert [(h.level, h.text) for h in shape.headings] == [(1, "Intro")]


def test_all_wikilink_forms() -> None:
    body = "See [[Plain]], [[Aliased|shown text]], [[Page#Some Heading]] and ![[Embedded]].\n"
    links = outline(body).links
    assert [(x.target, x.heading, x.alias, x.embed) for x in links] == [
        ("Plain", None, None, False),
        ("Aliased", None, "shown text", False),
        ("Page", "Some Heading", None, False),
        ("Embedded", None, None, True),
    ]


def test_links_and_tags_in_code_are_ignored() -> None:
    body = "```\n[[not-a-link]] #nottag\n```\nInline `[[nope]] #nope` but [[Yes]] #yes\n"
    shape = outline(body)
    assert [x.target for x in shape.links] == ["Yes"]
    assert shape.tags == ("yes",)


def test_inline_tags_nested_unicode_and_not_numbers() -> None:
    body = "#postgres first\nnested #infra/k8s, issue #42, url http://x.org/#frag #Größe\n"
    assert outline(body).tags == ("postgres", "infra/k8s", "größe")


def test_heading_marks_are_not_tags_but_tags_after_heading_text_are() -> None:
    assert outline("## Deploy notes #ops\n").tags == ("ops",)


def test_expand_tag() -> None:
    assert expand_tag("#Infra/K8s/pods") == ["infra", "infra/k8s", "infra/k8s/pods"]


# The line scanner (`_scanned_blocks`) must find what markdown-it's block parser finds.
_PIECES = [
    "#",
    "##",
    "###### six",
    "####### seven",
    "# closed #",
    "# h#",
    "#  ##",
    "#\tx",
    "```",
    "````",
    "``` py",
    "```a`b",
    "~~~",
    "~~~~ x",
    "`",
    "---",
    "===",
    "- -",
    "--- ",
    "=  ",
    "==\t",
    "    code",
    "     five",
    "  ",
    "   ",
    "text",
    "more words",
    "#tag",
    "[[x]]",
    "\u00a0",
    "a\u00a0",
    "\u3000",
    " # one",
    "   ## three",
    "    # four",
    "x ###",
    "",
]


@settings(max_examples=3000, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(_PIECES), st.sampled_from(["", " ", "  #", " x", "\t"])),
        max_size=12,
    ),
    st.sampled_from(["", "\n", "\n\n", "\n  "]),
)
def test_scanner_finds_what_markdown_it_finds(pieces: list[tuple[str, str]], end: str) -> None:
    body = "\n".join(a + b for a, b in pieces) + end
    scanned = _scanned_blocks(body)
    if scanned is None:  # left to markdown-it: only a tab in a line's indent does that here
        assert re.search(r"(?m)^ *\t", body)
        return
    assert scanned == _parsed_blocks(body)


def test_example_vault_bodies_scan_as_markdown_it_parses() -> None:
    notes = list((Path(__file__).resolve().parents[1] / "example-vault").rglob("*.md"))
    assert len(notes) > 40
    for path in notes:
        body = path.read_text("utf-8")
        assert _scanned_blocks(body) == _parsed_blocks(body), path


@pytest.mark.parametrize("body", ["a\r\n# b\r\n", "x\0y\n# z", "\t# tabbed\n", "a\n  \tb"])
def test_bodies_the_scanner_cannot_copy_go_to_markdown_it(body: str) -> None:
    assert _scanned_blocks(body) is None
    assert outline(body).headings == tuple(_parsed_blocks(body)[0])
