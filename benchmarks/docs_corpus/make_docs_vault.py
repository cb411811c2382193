#!/usr/bin/env python3
"""Turn the Nushell documentation (nushell/nushell.github.io) into a markdown vault.

Usage:
    python make_docs_vault.py GITDIR OUT_DIR [--rev HEAD] [--corpus PATH] [--force]

GITDIR is a (bare or normal) git directory of https://github.com/nushell/nushell.github.io.
The English prose documentation is read straight from the git objects of REV
(default HEAD; the benchmark was built from 72e298f7d579c20cebede45c861d63cbb689838f):

    book/  cookbook/  lang-guide/  contributor-book/

(the generated per-command reference in commands/, the blog and the translated
books are left out). Every kept page becomes OUT_DIR/<same path>.md containing
"# {title}\n\n{body}\n", and one line per page goes to the corpus file
(default: corpus.jsonl next to OUT_DIR):

    {"id": "book/hooks", "title": "Hooks", "body": "..."}

The id is the note's path inside the vault without ".md", so a hit on
OUT_DIR/book/hooks.md maps back to "book/hooks". `body` is the note without its
"# title" line, as in the man-page corpus.

Conversion (VuePress -> Obsidian-flavoured markdown):
  * YAML front matter (prev/next navigation, head meta) is dropped; its `title:`
    is used when present, otherwise the page's first "# " heading, which is then
    removed from the body (it becomes the note's own "# title" line).
  * VuePress containers (`::: tip Title` ... `:::`, also note/warning/important/
    danger/info/details, possibly indented or nested) become Obsidian callouts
    (`> [!tip] Title`); `details` becomes a folded callout `> [!note]- Title`.
  * `@[code](@snippets/x.sh)` includes are replaced by the snippet file's text as
    a fenced code block.
  * Pure site noise is removed: `[[toc]]`, HTML comments and empty
    `<a name="..."></a>` anchors.
  * Everything else (code blocks, tables, lists, links, <kbd>) is kept as is.
Skipped: pages whose body is under 300 characters, and the navigation-only
chapter landing pages listed in NAVIGATION_ONLY.

Standard library only (Python 3.11+).
"""
import argparse
import json
import os
import re
import subprocess
import sys

DOC_ROOTS = ("book/", "cookbook/", "lang-guide/", "contributor-book/")
MIN_BODY = 300

# Chapter landing pages and tables of contents: a paragraph or two that only
# point at the chapter's other pages.
NAVIGATION_ONLY = {
    "book/table_of_contents",
    "book/advanced",
    "book/nu_fundamentals",
    "book/nu_as_a_shell",
    "book/programming_in_nu",
    "book/coming_to_nu",
    "book/design_notes",
    "book/getting_started",
    "book/modules",
    "cookbook/README",
    "lang-guide/README",
    "lang-guide/chapters/types/basic_types/00_basic_types",
}

CALLOUT = {
    "tip": "tip",
    "note": "note",
    "info": "info",
    "warning": "warning",
    "important": "important",
    "danger": "danger",
    "caution": "caution",
    "details": "note",
}

FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})")
CONTAINER_OPEN = re.compile(r"^(\s*)(:{3,})\s*([A-Za-z-]+)\s*(.*?)\s*$")
CONTAINER_CLOSE = re.compile(r"^(\s*)(:{3,})\s*$")
CODE_INCLUDE = re.compile(r"^(\s*)@\[code[^\]]*\]\(@snippets/([^)\s]+)\)\s*$")
ANCHOR = re.compile(r'<a\s+name="[^"]*"\s*>\s*</a>\s*')
COMMENT = re.compile(r"<!--.*?-->", re.S)
TOC = re.compile(r"^\s*\[\[toc\]\]\s*$", re.I)
H1 = re.compile(r"^#\s+(.+?)\s*#*\s*$")
SNIPPET_LANG = {"sh": "sh", "nu": "nu", "toml": "toml", "json": "json", "ps1": "powershell"}


def git(gitdir, *args):
    return subprocess.run(
        ["git", "--git-dir", gitdir, *args], check=True, capture_output=True
    ).stdout


def list_pages(gitdir, rev):
    names = git(gitdir, "ls-tree", "-r", "--name-only", rev, "--").decode("utf-8").splitlines()
    return sorted(n for n in names if n.endswith(".md") and n.startswith(DOC_ROOTS))


def read_blob(gitdir, rev, path):
    return git(gitdir, "show", "%s:%s" % (rev, path)).decode("utf-8")


def split_front_matter(text):
    """Return (title or None, text without front matter)."""
    if not text.startswith("---\n"):
        return None, text
    end = text.find("\n---\n", 4)
    if end < 0:
        return None, text
    fm, rest = text[4:end], text[end + 5 :]
    title = None
    for line in fm.splitlines():
        m = re.match(r"^title:\s*(.+?)\s*$", line)
        if m:
            title = m.group(1).strip("'\"")
    return title, rest


def convert_body(text, snippet):
    """VuePress markdown -> Obsidian markdown (line based, fences respected)."""
    text = COMMENT.sub("", text)
    out = []
    stack = []  # open containers: (indent string, colon count)
    fence = None  # (marker char, length) while inside a fenced code block

    def prefix():
        return "".join(ind + "> " for ind, _ in stack)

    def strip_indent(line):
        # remove the indentation of the innermost container so the content
        # sits right after its "> " marker
        if stack:
            ind = stack[-1][0]
            if line.startswith(ind):
                return line[len(ind) :]
        return line

    for raw in text.split("\n"):
        line = raw.rstrip()
        if fence is None:
            m = FENCE.match(line)
            if m:
                fence = (m.group(2)[0], len(m.group(2)))
            else:
                if TOC.match(line):
                    continue
                m = CONTAINER_CLOSE.match(line)
                if m and stack:
                    stack.pop()
                    out.append(prefix().rstrip())
                    continue
                m = CONTAINER_OPEN.match(line)
                if m and m.group(3).lower() in CALLOUT:
                    kind = m.group(3).lower()
                    label = m.group(4)
                    head = "[!%s]%s" % (CALLOUT[kind], "-" if kind == "details" else "")
                    if kind == "details" and not label:
                        label = "Details"
                    pre = prefix()
                    out.append(pre + m.group(1) + "> " + head + (" " + label if label else ""))
                    stack.append((m.group(1), len(m.group(2))))
                    continue
                m = CODE_INCLUDE.match(line)
                if m:
                    body = snippet(m.group(2)).rstrip("\n")
                    lang = SNIPPET_LANG.get(m.group(2).rsplit(".", 1)[-1], "")
                    for cl in ["```" + lang, *body.split("\n"), "```"]:
                        out.append((prefix() + m.group(1) + cl).rstrip())
                    continue
                line = ANCHOR.sub("", line)
        else:
            m = FENCE.match(line)
            if m and m.group(2)[0] == fence[0] and len(m.group(2)) >= fence[1] and not line[m.end() :].strip():
                fence = None
        out.append((prefix() + strip_indent(line)).rstrip() if stack else line)
    body = "\n".join(out)
    body = re.sub(r"\n{3,}", "\n\n", body)
    return body.strip("\n")


def take_title(body, fm_title, path):
    """Pick the title and drop the first H1 from the body (it becomes '# title')."""
    lines = body.split("\n")
    fence = False
    for i, line in enumerate(lines):
        if FENCE.match(line):
            fence = not fence
        if fence:
            continue
        m = H1.match(line)
        if m:
            title = fm_title or m.group(1)
            rest = "\n".join(lines[:i] + lines[i + 1 :]).strip("\n")
            return title, rest
        if line.startswith("## "):
            break
    if fm_title:
        return fm_title, body
    return os.path.splitext(os.path.basename(path))[0].replace("_", " "), body


def main(argv=None):
    ap = argparse.ArgumentParser(description="Write the Nushell docs out as a markdown vault.")
    ap.add_argument("gitdir", help="git directory of nushell/nushell.github.io")
    ap.add_argument("out_dir", help="folder to write the notes into")
    ap.add_argument("--rev", default="HEAD", help="commit to read (default HEAD)")
    ap.add_argument("--corpus", default=None, help="corpus.jsonl path (default: next to OUT_DIR)")
    ap.add_argument("--force", action="store_true", help="allow a non-empty OUT_DIR")
    args = ap.parse_args(argv)

    if os.path.isdir(args.out_dir) and os.listdir(args.out_dir) and not args.force:
        print("refusing to write into non-empty directory %s (use --force)" % args.out_dir, file=sys.stderr)
        return 2
    corpus_path = args.corpus or os.path.join(
        os.path.dirname(os.path.abspath(args.out_dir.rstrip("/"))), "corpus.jsonl"
    )
    rev = git(args.gitdir, "rev-parse", args.rev).decode().strip()

    def snippet(rel):
        try:
            return read_blob(args.gitdir, rev, "snippets/" + rel)
        except subprocess.CalledProcessError:
            print("missing snippet %s" % rel, file=sys.stderr)
            return ""

    docs, skipped_nav, skipped_small = [], [], []
    for path in list_pages(args.gitdir, rev):
        doc_id = path[: -len(".md")]
        if doc_id in NAVIGATION_ONLY:
            skipped_nav.append(doc_id)
            continue
        fm_title, text = split_front_matter(read_blob(args.gitdir, rev, path))
        title, body = take_title(convert_body(text, snippet), fm_title, path)
        if len(body) < MIN_BODY:
            skipped_small.append(doc_id)
            continue
        docs.append({"id": doc_id, "title": title, "body": body})

    for doc in docs:
        dest = os.path.join(args.out_dir, doc["id"] + ".md")
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with open(dest, "w", encoding="utf-8", newline="\n") as f:
            f.write("# %s\n\n%s\n" % (doc["title"], doc["body"]))
    with open(corpus_path, "w", encoding="utf-8", newline="\n") as f:
        for doc in docs:
            f.write(json.dumps(doc, ensure_ascii=False) + "\n")
    print("rev %s: wrote %d notes to %s and %s" % (rev, len(docs), args.out_dir, corpus_path))
    print("skipped %d navigation pages, %d small pages (< %d chars): %s"
          % (len(skipped_nav), len(skipped_small), MIN_BODY, " ".join(skipped_small)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
