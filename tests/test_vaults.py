"""Several vaults: `vaultmem vaults` lists the named ones, `search --vault a --vault b` and
`search --all-vaults` merge their hits, each naming its vault."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLE_VAULT, Cli
from typer.testing import CliRunner

from vaultmem.cli import app

SMALL_NOTES = {
    "Tide model.md": "# Tide model tests under xdist\n\nThe tide model's tests run under xdist.\n",
    "Ferry.md": "# Ferry timetable\n\nThe ferry leaves at nine.\n",
    "Lighthouse.md": "# Lighthouse\n\nThe keeper logs the weather at dawn.\n",
}


def _user_config(text: str) -> None:
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "vaultmem" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, "utf-8")


def _run(*args: str) -> object:
    return CliRunner().invoke(app, list(args))


def _small(folder: Path, *, index: bool = True) -> Path:
    folder.mkdir(parents=True)
    (folder / ".vaultmem.toml").write_text("", "utf-8")
    for name, text in SMALL_NOTES.items():
        (folder / name).write_text(text, "utf-8")
    if index:
        Cli(folder)("index")
    return folder


@pytest.fixture
def big(tmp_path: Path) -> Path:
    """The example vault (53 notes), indexed."""
    target = tmp_path / "big"
    shutil.copytree(EXAMPLE_VAULT, target, ignore=shutil.ignore_patterns(".vaultmem"))
    Cli(target)("index")
    return target


def test_vaults_lists_each_named_vault_with_its_notes_and_index_state(
    big: Path, tmp_path: Path
) -> None:
    small = _small(tmp_path / "small")
    (small / "Ferry.md").write_text("# Ferry timetable\n\nThe ferry leaves at ten.\n", "utf-8")
    new = _small(tmp_path / "new", index=False)
    _user_config(
        'default_vault = "small"\n[vaults]\n'
        f'big = "{big}"\nsmall = "{small}"\nnew = "{new}"\ngone = "{tmp_path / "gone"}"\n'
    )
    listed = [json.loads(line) for line in _run("vaults", "--json").stdout.splitlines()]
    assert [(v["name"], v["default"], v["notes"], v["index"], v["stale"]) for v in listed] == [
        ("big", False, 53, "fresh", 0),
        ("small", True, 3, "stale", 1),
        ("new", False, 3, "none", 3),
        ("gone", False, None, "missing", None),
    ]
    assert listed[0]["path"] == str(big)

    text = _run("vaults").stdout.splitlines()
    assert text[0].startswith("  big ") and text[0].endswith("53 notes  index fresh")
    assert text[1].startswith("* small ") and text[1].endswith("index stale (1)")
    assert text[3].startswith("  gone ") and text[3].endswith("index missing")
    # The columns line up: every path starts where the first one does.
    assert len({line.index(str(tmp_path)) for line in text}) == 1


def test_a_default_vault_given_as_a_path_is_listed_unnamed(tmp_path: Path) -> None:
    small = _small(tmp_path / "small")
    _user_config(f'default_vault = "{small}"\n')
    (listed,) = [json.loads(line) for line in _run("vaults", "--json").stdout.splitlines()]
    assert (listed["name"], listed["path"], listed["default"]) == (None, str(small), True)
    assert _run("vaults").stdout.startswith("* (default) ")


def test_vaults_without_named_vaults_says_how_to_name_one() -> None:
    done = _run("vaults")
    assert done.exit_code == 0 and done.stdout == ""
    assert "[vaults]" in done.stderr and "config.toml" in done.stderr
    assert len(done.stderr.splitlines()) == 1


def _hits(*args: str) -> list[dict]:
    done = _run(*args, "--json")
    assert done.exit_code == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_search_over_two_vaults_merges_the_hits_by_a_score_both_vaults_share(
    big: Path, tmp_path: Path
) -> None:
    small = _small(tmp_path / "small")
    hits = _hits("search", "xdist tide", "--vault", str(big), "--vault", str(small), "-n", "4")
    # The only note that matches both words is in the small vault: it comes first, named.
    assert (hits[0]["vault"], hits[0]["path"]) == (str(small), "Tide model.md")
    assert {h["vault"] for h in hits[1:]} == {str(big)}
    assert "inbox/pytest-xdist port collisions.md" in {h["path"] for h in hits}
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True)
    # In raw BM25F the big vault's one-word match scores higher (its IDF grows with the
    # vault's size): the merged order is not the raw one.
    assert hits[0]["vault_score"] < hits[1]["vault_score"]
    # Each vault's own order is kept, and the scores it had there come along.
    alone = _hits("--vault", str(big), "search", "xdist tide", "-n", "3")
    assert [h["path"] for h in hits[1:]] == [h["path"] for h in alone]
    assert [h["vault_score"] for h in hits[1:]] == [h["score"] for h in alone]


def test_search_all_vaults_names_each_hit_s_vault(big: Path, tmp_path: Path) -> None:
    small = _small(tmp_path / "small")
    _user_config(f'[vaults]\nwork = "{big}"\nhome = "{small}"\ngone = "{tmp_path / "gone"}"\n')
    done = _run("search", "ferry timetable", "--all-vaults")
    assert done.exit_code == 0, done.stderr
    assert done.stdout.startswith(" 1. (home) Ferry timetable  [Ferry.md]  ")
    assert "vault gone" in done.stderr and "not searched" in done.stderr
    hits = _hits("search", "xdist", "--all-vaults")
    assert {h["vault"] for h in hits} == {"work", "home"}
    # The global --vault joins the per-command ones; a vault named twice is searched once.
    both = _hits("--vault", "work", "search", "xdist", "--vault", "home", "--vault", str(big))
    assert [(h["vault"], h["path"]) for h in both] == [(h["vault"], h["path"]) for h in hits]


def test_a_vault_that_cannot_be_searched_is_named_and_the_others_answer(
    big: Path, tmp_path: Path
) -> None:
    new = _small(tmp_path / "new", index=False)
    done = _run("search", "release", "--vault", str(big), "--vault", str(new))
    assert done.exit_code == 0 and "Release process" in done.stdout
    assert done.stderr == (
        f"vaultmem: warning: vault {new}: the vault is not indexed yet: run `vaultmem index`: "
        "not searched\n"
    )
    # When no vault can answer, the first one's error, naming it.
    alone = _run("search", "ferry", "--vault", str(new), "--vault", str(tmp_path / "none"))
    assert alone.exit_code == 1
    assert alone.stderr.splitlines()[-1].startswith(f"vaultmem: error: vault {new}: ")


def test_explain_and_cache_dir_take_one_vault(big: Path, tmp_path: Path) -> None:
    small = _small(tmp_path / "small")
    explain = _run("search", "ferry", "--vault", str(big), "--vault", str(small), "--explain")
    assert explain.exit_code == 2 and "--explain" in explain.stderr
    cache = _run(
        "--cache-dir",
        str(tmp_path / "c"),
        "search",
        "x",
        "--vault",
        str(small),
        "--vault",
        str(big),
    )
    assert cache.exit_code == 2 and "--cache-dir" in cache.stderr
