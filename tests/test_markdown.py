"""Headings, wikilinks and tags as Obsidian reads them."""

from vaultmem.markdown import expand_tag, outline


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
