"""Tests of vaultmem.fragments: spans, headings, sizes, overlap, coverage, determinism."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vaultmem.fragments import Fragment, fragments, heading_text


def file_lines(body: str, offset: int = 1) -> list[str]:
    """The file's lines as fragments number them: ``offset - 1`` frontmatter lines first."""
    src = body.replace("\r\n", "\n").replace("\r", "\n")
    return ["---"] * (offset - 1) + src.split("\n")


def piece(frag: Fragment) -> str:
    """The note text of a fragment, without its prefix line."""
    return frag.text.split("\n", 1)[1]


def assert_spans_map_to_file(body: str, frags: list[Fragment], offset: int = 1) -> None:
    lines = file_lines(body, offset)
    for frag in frags:
        assert offset <= frag.start_line <= frag.end_line <= len(lines)
        text = piece(frag)
        window = "\n".join(lines[frag.start_line - 1 : frag.end_line])
        assert text in window
        first, last = text.split("\n")[0], text.split("\n")[-1]
        assert first.strip() and first in lines[frag.start_line - 1]
        assert last.strip() and last in lines[frag.end_line - 1]


def assert_covered(body: str, frags: list[Fragment], offset: int = 1) -> None:
    lines = file_lines(body, offset)
    for number, line in enumerate(lines[offset - 1 :], start=offset):
        if line.strip():
            assert any(f.start_line <= number <= f.end_line for f in frags), (number, line)


RELEASE = """# Release process

How we ship.

## Build

```bash
# not a heading: a shell comment
make dist
```

## Rollback

Revert the tag, then redeploy the previous build.

### Database

Run the down migration.
"""


def test_sections_spans_and_paths() -> None:
    frags = fragments(RELEASE, title="Release process", body_start_line=4, max_chars=60)
    paths = [f.heading_path for f in frags]
    assert ("Release process", "Build") in paths
    assert ("Release process", "Rollback") in paths
    assert ("Release process", "Rollback", "Database") in paths
    assert_spans_map_to_file(RELEASE, frags, offset=4)
    assert_covered(RELEASE, frags, offset=4)
    rollback = next(f for f in frags if f.heading_path == ("Release process", "Rollback"))
    lines = file_lines(RELEASE, 4)
    assert lines[rollback.start_line - 1] == "## Rollback"
    assert lines[rollback.end_line - 1].startswith("Revert the tag")
    # Prefix line: the title once (the "# Release process" heading is not repeated), then
    # the rest of the path.
    assert rollback.text.startswith("Release process > Rollback\n## Rollback\n")


def test_headings_in_code_are_ignored() -> None:
    body = (
        "Intro.\n\n```\n# fenced\n## also fenced\n```\n\n~~~\n# tilde fenced\n~~~\n\n"
        "    # indented code\n\n> # quoted heading stays in its quote\n\n# Real\n\ntext\n"
    )
    frags = fragments(body, title="T", max_chars=40)
    titles = {t for f in frags for t in f.heading_path}
    assert titles == {"Real"}
    assert_covered(body, frags)
    # An unclosed fence runs to the end of the note (CommonMark): no headings after it.
    frags = fragments("# A\n\n```\n# B\n\n# C\n" + "x\n" * 100, title="T", max_chars=50)
    assert {t for f in frags for t in f.heading_path} == {"A"}


def test_setext_headings_and_heading_markup() -> None:
    body = "Top\n===\n\nbody one\n\nSub **bold** `code` [[Some Note|alias]]\n---\n\nbody two\n"
    frags = fragments(body, title="Doc", max_chars=20)
    assert ("Top", "Sub bold code alias") in [f.heading_path for f in frags]
    assert heading_text("Use **uv** for [[Tools/uv|the uv tool]]") == "Use uv for the uv tool"
    assert heading_text("See [[Other note#Part]] and [link](http://x)") == "See Other note and link"
    assert heading_text("plain   words") == "plain words"


def test_tiny_sections_are_merged_under_their_parent() -> None:
    body = "# Guide\n\n## A\n\nalpha\n\n## B\n\nbeta\n\n## C\n\ngamma\n"
    frags = fragments(body, title="Guide")
    assert len(frags) == 1
    assert frags[0].heading_path == ("Guide",)
    assert (frags[0].start_line, frags[0].end_line) == (1, 13)
    # Sections that are not tiny keep their own fragments and paths.
    big = "\n".join(f"## S{i}\n\n" + "word " * 80 for i in range(3))
    frags = fragments(big, title="Big", max_chars=1000)
    assert [f.heading_path for f in frags] == [("S0",), ("S1",), ("S2",)]


def test_bare_heading_leads_into_a_long_section() -> None:
    # "# Title" alone is not worth a vector: it leads into the next section's first window.
    body = "# Title\n\n## Long\n\n" + "\n".join(f"line {i} " + "x" * 60 for i in range(60))
    frags = fragments(body, title="Title", max_chars=500)
    assert frags[0].start_line == 1
    assert frags[0].heading_path == ("Title",)
    assert all(f.heading_path == ("Title", "Long") for f in frags[1:])
    assert not any(piece(f).strip() == "# Title" for f in frags)


def test_sizes_respect_max_chars() -> None:
    body = "\n\n".join(("paragraph " * 30).strip() for _ in range(40))
    for max_chars in (100, 250, 1000):
        frags = fragments(body, title="Sizes", max_chars=max_chars)
        assert len(frags) > 1
        for frag in frags:
            assert len(piece(frag)) <= max_chars
            assert len(frag.text) <= max_chars + len("Sizes") + 1


def test_long_section_windows_overlap() -> None:
    body = "## Steps\n\n" + "\n".join(
        f"Step {i}: check the logs and the metrics." for i in range(80)
    )
    frags = fragments(body, title="Runbook", max_chars=400, overlap=0.15)
    assert len(frags) > 3
    for prev, nxt in zip(frags, frags[1:], strict=False):
        # Consecutive windows share at least one whole line, at a line boundary.
        assert nxt.start_line <= prev.end_line
        first_line = piece(nxt).split("\n")[0]
        assert first_line.startswith("Step ") and first_line in piece(prev)
        shared = len("\n".join(file_lines(body)[nxt.start_line - 1 : prev.end_line]))
        assert 0.05 * 400 <= shared <= 0.3 * 400  # ~15% of max_chars
    # overlap=0 gives disjoint windows.
    frags = fragments(body, title="Runbook", max_chars=400, overlap=0.0)
    assert all(a.end_line < b.start_line for a, b in zip(frags, frags[1:], strict=False))


def test_long_line_of_words_is_cut_between_words() -> None:
    words = [f"w{i:04d}" for i in range(1500)]
    body = " ".join(words)  # one 8 KB line
    frags = fragments(body, title="Words", max_chars=300)
    assert len(frags) > 20
    vocabulary = set(words)
    for frag in frags:
        tokens = piece(frag).split(" ")
        assert tokens[0] in vocabulary and tokens[-1] in vocabulary  # no half words
        assert frag.start_line == frag.end_line == 1
    # Overlap: each window starts with words the previous one ended with.
    for prev, nxt in zip(frags, frags[1:], strict=False):
        assert piece(nxt).split(" ")[0] in piece(prev).split(" ")
    assert_covered(body, frags)


def test_giant_word_is_cut_hard_with_overlap() -> None:
    body = "".join(hashlib.sha256(str(i).encode()).hexdigest() for i in range(80))  # 5120 hex
    frags = fragments(body, title="Blob", max_chars=500)
    assert all(len(piece(f)) <= 500 for f in frags)
    # Together they rebuild the line, each window overlapping the previous one.
    rebuilt = piece(frags[0])
    for frag in frags[1:]:
        text = piece(frag)
        shared = _overlap(rebuilt, text)
        assert shared == 75  # 15% of 500, nothing better to snap to in one giant word
        rebuilt += text[shared:]
    assert rebuilt == body


def _overlap(a: str, b: str) -> int:
    for n in range(min(len(a), len(b)), 0, -1):
        if a.endswith(b[:n]):
            return n
    return 0


def test_empty_bodies() -> None:
    for body in ("", "\n\n  \n", "\r\n"):
        (frag,) = fragments(body, title="Only a title", body_start_line=7)
        assert frag.text == "Only a title"
        assert frag.heading_path == ()
        assert frag.start_line == frag.end_line == 7
        assert frag.hash == hashlib.sha1(b"Only a title").hexdigest()
    assert fragments("", title="") == []
    # No title: fragments still carry the section text (prefix line is the path or none).
    (frag,) = fragments("just text", title="")
    assert frag.text == "just text"


def test_crlf_and_offsets() -> None:
    lf = "# A\n\none\n\n# B\n\ntwo\n"
    crlf = lf.replace("\n", "\r\n")
    a = fragments(lf, title="N", body_start_line=3, max_chars=16)
    b = fragments(crlf, title="N", body_start_line=3, max_chars=16)
    assert a == b
    assert [(f.start_line, f.end_line) for f in a] == [(3, 5), (7, 9)]


def test_hash_and_determinism() -> None:
    first = fragments(RELEASE, title="Release process", max_chars=80)
    second = fragments(RELEASE, title="Release process", max_chars=80)
    assert first == second
    for frag in first:
        assert frag.hash == hashlib.sha1(frag.text.encode()).hexdigest()
    # The title is part of the embedded text, so it is part of the hash.
    other = fragments(RELEASE, title="Shipping", max_chars=80)
    assert {f.hash for f in other}.isdisjoint({f.hash for f in first})


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="max_chars"):
        fragments("x", title="t", max_chars=0)
    with pytest.raises(ValueError, match="overlap"):
        fragments("x", title="t", overlap=0.9)


def test_fragment_is_frozen() -> None:
    (frag,) = fragments("x", title="t")
    with pytest.raises(AttributeError):
        frag.text = "y"  # type: ignore[misc]


# --- property: random markdown ---------------------------------------------------------

LINE = st.one_of(
    st.sampled_from(
        [
            "",
            "",
            "# Heading",
            "## Section two",
            "### Deep *one*",
            "####### not a heading",
            "#tag line",
            "```",
            "~~~",
            "```python",
            "    # indented code",
            "- item",
            "1. numbered",
            "> # quoted",
            "> quote",
            "===",
            "---",
            "***",
            "<div>",
            "</div>",
            "[ref]: http://example.com",
            "  \t ",
            "x" * 700,
            " ".join(["lorem"] * 150),
        ]
    ),
    st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\n\r"), max_size=120),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(LINE, max_size=60),
    st.sampled_from(["\n", "\r\n"]),
    st.integers(min_value=1, max_value=30),
    st.sampled_from([16, 50, 200, 1000]),
    st.sampled_from([0.0, 0.15, 0.3, 0.45]),
)
def test_random_markdown(
    lines: list[str], newline: str, offset: int, max_chars: int, overlap: float
) -> None:
    body = newline.join(lines)
    frags = fragments(
        body, title="Random", body_start_line=offset, max_chars=max_chars, overlap=overlap
    )
    assert frags  # at least the title fragment
    assert frags == fragments(
        body, title="Random", body_start_line=offset, max_chars=max_chars, overlap=overlap
    )
    if not body.strip():
        assert [f.text for f in frags] == ["Random"]
        return
    for frag in frags:
        assert piece(frag).strip()
        assert len(piece(frag)) <= max_chars
    assert_spans_map_to_file(body, frags, offset)
    assert_covered(body, frags, offset)
    # Document order.
    assert [f.start_line for f in frags] == sorted(f.start_line for f in frags)
