"""Every shell example in README.md and docs/*.md runs, as written, and exits as it says.

Each ```bash / ```sh / ```console block is split into commands (a `\\` at the end of a
line, or a quote left open, continues the command; whole-line `#` comments are dropped;
in a console block only `$ ` lines are commands) and each command runs through
`bash -o pipefail -c` with the installed `vaultmem` first on PATH. One file's blocks run
in order in one temp workspace, so a block may use what an earlier one did (`index`
before `search`). The docs name the vault three ways, and all three are the same temp
copy of example-vault/ (indexed and embedded, a git repository): `example-vault` from a
clone's root, `~/notes` (HOME is a temp folder too) and a project's `./notes`; `tests/`
is the repository's, for the sample transcripts and queries. VAULTMEM_NO_SERVER=1 keeps
every command in process unless its block talks to a server.

An HTML comment right before a fence changes how its block runs (`;` separates several):

    <!-- example: skip (why it cannot run here) -->   not run; the reason is required
    <!-- example: exit 2 -->                          every command must exit 2
    <!-- example: env NAME=value OTHER="a b" -->      extra environment for the block
    <!-- example: server -->                          a running `serve` may answer it

Install commands (`pip install …`) and `python -m pytest` are never run.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import REPO, copy_indexed

pytestmark = pytest.mark.slow  # runs every shell example of the README and docs/

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(bash|sh|console)\s*$")
MARK = re.compile(r"^<!--\s*example:\s*(.*?)\s*-->\s*$")
NOT_RUN = re.compile(r"^(\S+=\S*\s+)*(pip install|python -m pytest)\b")
# A skip is an exception: keep them few, each with its reason.
MAX_SKIPS = 8
TIMEOUT_S = 120


@dataclass(frozen=True)
class Block:
    """One fenced shell block: where it is, its commands and what its mark says."""

    doc: Path
    line: int
    commands: tuple[str, ...]
    skip: str | None = None
    exit_code: int = 0
    env: dict[str, str] = field(default_factory=dict)
    server: bool = False


def parse_mark(text: str, where: str) -> dict:
    """The directives of one ``<!-- example: … -->`` comment; an unknown one is an error."""
    found: dict = {}
    for part in filter(None, (p.strip() for p in text.split(";"))):
        word, _, rest = part.partition(" ")
        if word == "skip":
            reason = re.fullmatch(r"\((.+)\)", rest.strip())
            assert reason, f"{where}: a skip needs its reason: skip (why)"
            found["skip"] = reason.group(1)
        elif word == "exit":
            found["exit_code"] = int(rest)
        elif word == "env":
            found["env"] = dict(item.split("=", 1) for item in shlex.split(rest))
        elif word == "server" and not rest:
            found["server"] = True
        else:
            raise AssertionError(f"{where}: unknown example mark {part!r}")
    return found


def split_commands(body: list[str], console: bool) -> list[str]:
    """The commands of a block's lines, continuations joined, comments and output dropped."""
    commands: list[str] = []
    pending = ""
    for raw in body:
        line = raw.rstrip()
        if not pending:
            if console:
                if not line.startswith("$ "):
                    continue  # output shown after a command
                line = line[2:]
            if not line.strip() or line.lstrip().startswith("#"):
                continue
        pending = f"{pending}\n{line}" if pending else line
        if pending.endswith("\\"):
            continue
        try:
            shlex.split(pending, comments=True)
        except ValueError:  # a quote still open: the command goes on
            continue
        commands.append(pending)
        pending = ""
    assert not pending, f"unfinished command: {pending!r}"
    return [c for c in commands if not NOT_RUN.match(c)]


def blocks(doc: Path) -> list[Block]:
    """Every shell block of ``doc``, in order, with the mark that precedes it."""
    lines = doc.read_text("utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        start = i
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        before = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        mark = MARK.match(before)
        where = f"{doc.name}:{start + 1}"
        options = parse_mark(mark.group(1), where) if mark else {}
        commands = split_commands(lines[start + 1 : end], fence.group(1) == "console")
        found.append(Block(doc, start + 1, tuple(commands), **options))
        i = end + 1
    return found


def workspace(root: Path, source: Path) -> tuple[Path, Path]:
    """A temp clone-like folder holding a copy of ``source`` (the vault): (cwd, home)."""
    cwd, home = root / "work", root / "home"
    home.mkdir(parents=True, exist_ok=True)
    cwd.mkdir(parents=True)
    vault = cwd / "example-vault"
    copy_indexed(source, vault, symlinks=True)
    (cwd / "notes").symlink_to("example-vault")
    (home / "notes").symlink_to(vault)
    (cwd / "tests").symlink_to(REPO / "tests")
    git = {**os.environ, **GIT_ID}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "example vault"]):
        subprocess.run(["git", "-C", str(vault), *args], check=True, env=git)
    return cwd, home


GIT_ID = {
    "GIT_AUTHOR_NAME": "Doc Example",
    "GIT_AUTHOR_EMAIL": "doc@example.invalid",
    "GIT_COMMITTER_NAME": "Doc Example",
    "GIT_COMMITTER_EMAIL": "doc@example.invalid",
}


def run_blocks(found: list[Block], cwd: Path, home: Path) -> list[str]:
    """Run every command of every block that is not skipped; one message per failure."""
    bin_dir = Path(sys.executable).parent
    assert (bin_dir / "vaultmem").exists(), f"no vaultmem script in {bin_dir}: pip install ."
    base = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
    base |= GIT_ID | {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        # A SessionStart hook would start a server that outlives the test.
        "VAULTMEM_HOOKS_START_SERVER": "0",
    }
    failures: list[str] = []
    for block in found:
        if block.skip:
            continue
        env = base | block.env | ({} if block.server else {"VAULTMEM_NO_SERVER": "1"})
        for command in block.commands:
            done = subprocess.run(
                ["bash", "-o", "pipefail", "-c", command],
                cwd=cwd,
                env=env,
                input="",
                capture_output=True,
                text=True,
                timeout=TIMEOUT_S,
                check=False,
            )
            if done.returncode != block.exit_code:
                failures.append(
                    f"{block.doc.name}:{block.line}: `{command}` exited {done.returncode}, "
                    f"the doc says {block.exit_code}\n{done.stderr[-1500:]}"
                )
    return failures


def stop_servers(cwd: Path) -> None:
    """A server a doc started must not outlive the test, even when a block failed."""
    vault = cwd / "example-vault"
    if (vault / ".vaultmem" / "server.json").exists():
        subprocess.run(
            [sys.executable, "-m", "vaultmem", "--vault", str(vault), "serve", "stop"],
            capture_output=True,
            timeout=30,
            check=False,
        )


@pytest.fixture
def example_workspace(embedded_example: Path, tmp_path: Path):  # noqa: ANN201
    """(cwd, home) around an indexed, embedded copy of example-vault/; servers stopped after."""
    cwd, home = workspace(tmp_path, embedded_example)
    yield cwd, home
    stop_servers(cwd)


@pytest.mark.parametrize("doc", DOCS, ids=[d.relative_to(REPO).as_posix() for d in DOCS])
def test_the_examples_of_a_doc_run(doc: Path, example_workspace: tuple[Path, Path]) -> None:
    failures = run_blocks(blocks(doc), *example_workspace)
    assert not failures, "\n\n".join(failures)


def test_skips_are_few_and_give_reasons() -> None:
    every = [b for doc in DOCS for b in blocks(doc)]
    skipped = [f"{b.doc.name}:{b.line} ({b.skip})" for b in every if b.skip]
    assert len(skipped) <= MAX_SKIPS, skipped
    assert all(b.skip.strip() for b in every if b.skip)
    assert sum(len(b.commands) for b in every if not b.skip) > 100


def test_the_readme_quick_start_commands_are_the_ones_ci_reads() -> None:
    """`.ci/run` greps the test command out of the README: it must still be there, once."""
    readme = (REPO / "README.md").read_text("utf-8")
    test_command = re.findall(r'^(?:CMAKE_ARGS="[^"]*" )?pip install .*\[test\].*$', readme, re.M)
    assert len(test_command) == 1
    assert test_command[0].endswith("python -m pytest -n auto --dist loadfile")
    assert re.search(r"^pip install \. && vaultmem --vault example-vault index && ", readme, re.M)


def test_a_broken_example_is_reported(embedded_example: Path, tmp_path: Path) -> None:
    """The runner can fail: a wrong example, a wrong exit code and a bad mark are caught."""
    doc = tmp_path / "broken.md"
    doc.write_text(
        "```bash\n"
        "vaultmem --vault example-vault get 'Harbor glossary'\n"
        "vaultmem --vault example-vault get 'A note nobody wrote'\n"
        "```\n\n"
        "<!-- example: exit 1 -->\n"
        "```bash\n"
        "vaultmem --vault example-vault get 'A note nobody wrote'   # exit 1, as stated\n"
        "```\n\n"
        "<!-- example: exit 2 -->\n"
        "```sh\n"
        "vaultmem --vault example-vault search \\\n"
        "  redis | head -n 1\n"
        "```\n\n"
        "<!-- example: skip (never runs) -->\n"
        "```bash\n"
        "false\n"
        "```\n\n"
        "```console\n"
        "$ vaultmem --vault example-vault status\n"
        "12 notes, this line is output and never runs\n"
        "```\n",
        "utf-8",
    )
    found = blocks(doc)
    assert [b.commands for b in found][2:] == [
        ("vaultmem --vault example-vault search \\\n  redis | head -n 1",),
        ("false",),
        ("vaultmem --vault example-vault status",),
    ]
    failures = run_blocks(found, *workspace(tmp_path / "ws", embedded_example))
    assert len(failures) == 2, failures
    assert failures[0].startswith("broken.md:1: ") and "nobody wrote" in failures[0]
    assert failures[1].startswith("broken.md:12: ") and "exited 0, the doc says 2" in failures[1]
    with pytest.raises(AssertionError, match="needs its reason"):
        parse_mark("skip", "x.md:1")
    with pytest.raises(AssertionError, match="unknown example mark"):
        parse_mark("exits 2", "x.md:1")
