"""A new user's first hour with a vault of their own (issue 32): an empty vault indexes,
the stale hint speaks only of notes, the vault found upward wins over the default,
excludes add to the defaults, hooks name an absolute vault, and a name that finds no
note says which ones it could mean."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import Cli
from typer.testing import CliRunner

from vaultmem.cli import app


def _run(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None):  # noqa: ANN202
    """The CLI in process, from ``cwd`` (the test's folder is put back after)."""
    here = Path.cwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        return CliRunner().invoke(app, list(args), env=env)
    finally:
        os.chdir(here)


def _user_config(text: str) -> Path:
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "vaultmem" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, "utf-8")
    return path


# --- 1. a new, empty vault ---------------------------------------------------------------


@pytest.mark.usefixtures("vectors_on")
def test_a_new_empty_vault_indexes_embeds_and_searches(tmp_path: Path) -> None:
    """`init NEW && --vault NEW index && --vault NEW hooks install --claude --dry-run`:
    the README's quick start for a vault of one's own, on an empty folder."""
    new = tmp_path / "NEW"
    assert _run("init", str(new)).exit_code == 0
    done = _run("--vault", str(new), "index")
    assert done.exit_code == 0, done.output
    assert "0 added" in done.stdout and "0 fragments embedded" in done.stdout
    assert _run("--vault", str(new), "embed").exit_code == 0
    for command in ("search", "vsearch", "query"):
        found = _run("--vault", str(new), command, "anything")
        assert found.exit_code == 0, (command, found.output)
        assert "no results" in found.stderr
        assert "run `vaultmem" not in found.stderr  # nothing to run: the vault is empty
    hooks = _run("--vault", str(new), "hooks", "install", "--claude", "--dry-run")
    assert hooks.exit_code == 0, hooks.output
    assert f"--vault {new.resolve()} hook prompt" in hooks.stdout
    # The first note then is found by every mode.
    (new / "first.md").write_text("# First note\n\nThe quokka lives on Rottnest.\n", "utf-8")
    assert _run("--vault", str(new), "index").exit_code == 0
    assert "first.md" in _run("--vault", str(new), "vsearch", "quokka").stdout


@pytest.mark.usefixtures("vectors_on")
def test_a_vault_never_indexed_still_says_so(tmp_path: Path) -> None:
    new = tmp_path / "NEW"
    _run("init", str(new))
    (new / "a.md").write_text("# A\n\nalpha\n", "utf-8")
    for command in (["embed"], ["search", "alpha"]):
        done = _run("--vault", str(new), *command)
        assert done.exit_code == 1 and "not indexed yet" in done.stderr, done.output


# --- 2. the stale hint speaks of notes only ------------------------------------------------


def _stale_line(cli: Cli) -> str:
    return next((x for x in cli("search", "redis").stderr.splitlines() if "changed since" in x), "")


def test_the_stale_hint_ignores_files_that_are_not_notes(cli: Cli, vault: Path) -> None:
    cli("index")
    assert _stale_line(cli) == ""
    # What a new user does first: edit the config (an editor saves by renaming), git init.
    config = vault / ".vaultmem.toml"
    config.with_name(".vaultmem.toml.tmp").write_text('[collections.ops]\npath = "ops"\n')
    os.replace(config.with_name(".vaultmem.toml.tmp"), config)
    (vault / ".git").mkdir()
    (vault / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (vault / "decisions" / ".Redis for caching.md.swp").write_bytes(b"\0swap")
    (vault / "empty-folder").mkdir()
    assert _stale_line(cli) == ""
    (vault / ".git" / "HEAD").unlink()
    (vault / ".git").rmdir()
    assert _stale_line(cli) == ""
    # A note added, or one put in a new folder, still speaks.
    (vault / "empty-folder" / "new.md").write_text("# New\n\nredis\n", "utf-8")
    assert "./" in _stale_line(cli)
    cli("index")
    (vault / "decisions" / "Another.md").write_text("# Another\n", "utf-8")
    assert "decisions/" in _stale_line(cli)
    cli("index")
    (vault / "decisions" / "Another.md").unlink()
    assert "decisions/" in _stale_line(cli)


def test_a_note_index_skipped_is_not_stale_until_it_changes(cli: Cli, vault: Path) -> None:
    broken = vault / "inbox" / "broken.md"
    broken.write_text("---\ntitle: [unclosed\n---\nbody\n", "utf-8")
    done = cli("index")
    assert "1 skipped" in done.stdout and "inbox/broken.md" in done.stderr
    status = cli.json_lines("status")[0]
    assert (status["stale"], status["new"], status["skipped"]) == (0, 0, 1)
    assert "skipped:      1" in cli("status").stdout
    assert _stale_line(cli) == ""
    _user_config(f'[vaults]\nv = "{vault}"\n')
    (listed,) = [json.loads(x) for x in cli("vaults", "--json").stdout.splitlines()]
    assert (listed["index"], listed["stale"]) == ("fresh", 0)
    broken.write_text("---\ntitle: [still unclosed\n---\nbody, edited\n", "utf-8")
    status = cli.json_lines("status")[0]
    assert (status["stale"], status["new"], status["skipped"]) == (1, 1, 0)
    broken.write_text("---\ntitle: Mended\n---\nbody\n", "utf-8")
    cli("index")
    status = cli.json_lines("status")[0]
    assert (status["stale"], status["skipped"], status["indexed"]) == (0, 0, 54)


# --- 3. the vault you stand in wins over default_vault ----------------------------------


def _side_and_work(tmp_path: Path) -> tuple[Path, Path]:
    """A `work` vault named as the default, and a `side` vault of one note."""
    work, side = tmp_path / "work", tmp_path / "side"
    for folder in (work, side):
        assert _run("init", str(folder)).exit_code == 0
    (work / "Harbour.md").write_text("# Harbour\n\nThe ferry leaves at noon.\n", "utf-8")
    (side / "Quokka.md").write_text("# Quokka\n\nA quokka lives on Rottnest.\n", "utf-8")
    (side / "deeper").mkdir()
    for folder in (work, side):
        assert _run("--vault", str(folder), "index").exit_code == 0
    _user_config(f'default_vault = "work"\n[vaults]\nwork = "{work}"\nside = "{side}"\n')
    return work, side


def test_the_vault_found_upward_wins_over_default_vault(tmp_path: Path) -> None:
    work, side = _side_and_work(tmp_path)
    found = _run("search", "quokka", cwd=side / "deeper")
    assert found.exit_code == 0 and "Quokka.md" in found.stdout, found.output
    # Outside any vault, the default; --vault and $VAULTMEM_VAULT outrank the folder.
    assert "Harbour.md" in _run("search", "ferry", cwd=tmp_path).stdout
    assert "Harbour.md" in _run("--vault", "work", "search", "ferry", cwd=side).stdout
    via_env = _run("search", "ferry", cwd=side, env={"VAULTMEM_VAULT": str(work)})
    assert "Harbour.md" in via_env.stdout


@pytest.mark.slow
def test_the_vault_found_upward_wins_through_its_own_server(tmp_path: Path) -> None:
    import subprocess
    import sys

    _work, side = _side_and_work(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "VAULTMEM_NO_SERVER"}

    def vm(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "vaultmem", *args],
            cwd=side,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    started = vm("serve", "--background", "--port", "0", "--json")
    assert started.returncode == 0, started.stderr
    try:
        found = vm("search", "quokka")
        log = (side / ".vaultmem" / "server.log").read_text()
        assert "forwarded search" in log  # the side vault's own server answered
        assert found.returncode == 0 and "Quokka.md" in found.stdout, found.stderr
    finally:
        vm("serve", "stop")


# --- 4. excludes add to the defaults ---------------------------------------------------


def _listed(vault: Path, *args: str, env: dict[str, str] | None = None) -> set[str]:
    """The note paths `index --json` then `status` see: the notes of the walk."""
    done = _run("--vault", str(vault), *args, "index", "--rebuild", "--json", env=env)
    assert done.exit_code == 0, done.output
    from vaultmem.config import load
    from vaultmem.vault import walk_notes

    merged = {**os.environ, **(env or {})}
    flags = {"exclude": [a for a in args if a != "--exclude"] or None}
    config = load(vault_flag=str(vault), env=merged, cwd=vault, overrides=flags)
    return {f.path for f in walk_notes(config)}


def test_excludes_add_to_the_defaults_and_bang_takes_one_back(tmp_path: Path) -> None:
    vault = tmp_path / "v"
    _run("init", str(vault))
    for rel in ("note.md", "node_modules/pkg/README.md", "build/out.md", "vendor/lib.md"):
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault / rel).write_text("# x\n", "utf-8")
    env = {"VAULTMEM_EXCLUDE": "build/**,vendor/**"}
    assert _listed(vault, env=env) == {"note.md"}  # node_modules stays out
    # The vault's config adds its own; the environment adds more; a flag takes one back.
    (vault / ".vaultmem.toml").write_text('exclude = ["vendor/**"]\n', "utf-8")
    assert _listed(vault) == {"note.md", "build/out.md"}
    assert _listed(vault, env={"VAULTMEM_EXCLUDE": "build/**"}) == {"note.md"}
    back = _listed(vault, "--exclude", "!node_modules/**", "--exclude", "!vendor/**")
    assert back == {"note.md", "build/out.md", "node_modules/pkg/README.md", "vendor/lib.md"}
    (vault / ".vaultmem.toml").write_text('exclude = ["!node_modules/**"]\n', "utf-8")
    assert "node_modules/pkg/README.md" in _listed(vault)
    status = _run("--vault", str(vault), "--exclude", "build/**", "status", "--json")
    assert json.loads(status.stdout)["notes"] == 3  # note, node_modules' and vendor's


# --- 5. hooks name the vault by its absolute path ----------------------------------------


def test_hooks_install_writes_and_says_the_absolute_vault(tmp_path: Path) -> None:
    vault = tmp_path / "notes"
    _run("init", str(vault))
    settings = Path(os.environ["HOME"]) / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    # A hand-written (or old) hook naming the vault relative to wherever the event runs.
    relative = {"type": "command", "command": "vaultmem --vault notes hook prompt"}
    prompt = {"UserPromptSubmit": [{"matcher": "", "hooks": [relative]}]}
    settings.write_text(json.dumps({"hooks": prompt}), "utf-8")
    status = _run("hooks", "status", cwd=tmp_path)
    assert "BROKEN" in status.stdout and "'notes' is relative" in status.stdout, status.stdout
    done = _run("hooks", "install", "--claude", "--vault", "notes", cwd=tmp_path)
    assert done.exit_code == 0, done.output
    assert f"the hooks name the vault by its absolute path: {vault.resolve()}" in done.stdout
    written = json.loads(settings.read_text("utf-8"))["hooks"]["UserPromptSubmit"]
    (command,) = [h["command"] for g in written for h in g["hooks"]]
    assert f"--vault {vault.resolve()} hook prompt" in command
    assert "BROKEN" not in _run("hooks", "status", cwd=tmp_path / "notes").stdout


# --- 6. a name that finds no note says what it could mean --------------------------------


@pytest.mark.parametrize("command", ["get", "touch", "forget", "pin", "links", "timeline"])
def test_a_name_that_finds_nothing_suggests_notes(cli: Cli, command: str) -> None:
    cli("index")
    done = cli(command, "Redis", ok=False)
    assert done.exit_code == 1
    line = done.stderr.strip()
    assert line.startswith("vaultmem: error: no note called 'Redis'; did you mean ")
    assert "'Redis for caching'" in line and "'Redis memory at 80 percent'" in line
    typo = cli(command, "Redis for cachng", ok=False).stderr
    assert "did you mean 'Redis for caching'?" in typo
    assert "(try a path, a title or an alias)" in cli(command, "zzqx", ok=False).stderr


def test_forget_match_lists_and_acts_only_with_yes(cli: Cli, vault: Path) -> None:
    cli("index")
    listed = cli("forget", "--match", "redis")
    paths = [line.split("  (")[0] for line in listed.stdout.splitlines()]
    assert "decisions/Redis for caching.md" in paths and len(paths) >= 3
    assert "nothing forgotten: add --yes" in listed.stderr
    assert "status: forgotten" not in (vault / "decisions" / "Redis for caching.md").read_text()
    done = cli.json_lines("forget", "--match", "redis", "--yes")
    assert sorted(d["path"] for d in done) == sorted(paths)
    assert "status: forgotten" in (vault / "decisions" / "Redis for caching.md").read_text()
    assert cli("forget", "--match", "zzqx", ok=False).exit_code == 1
    assert cli("forget", ok=False).exit_code == 2
    assert cli("forget", "Harbor", "--match", "x", ok=False).exit_code == 2


# --- 8. a timeline cut to -n stays centred on its note -----------------------------------


def test_timeline_n_centres_on_the_note_and_counts_what_it_left_out(cli: Cli) -> None:
    cli("index")
    every = cli.json_lines("timeline", "Redis for caching")
    assert len(every) > 30
    born = next(
        i
        for i, e in enumerate(every)
        if e["kind"] == "created" and e["title"] == "Redis for caching"
    )
    assert born >= 7 and len(every) - born > 8  # events on both sides of the note
    done = cli("timeline", "Redis for caching", "-n", "15", "--json")
    shown = [json.loads(line) for line in done.stdout.splitlines()]
    assert shown == every[born - 7 : born + 8]  # 7 before its creation, itself, 7 after
    earlier, later = born - 7, len(every) - born - 8
    assert done.stderr.strip() == f"{earlier} earlier and {later} later events not shown (-n 15)"
    newest = cli.json_lines("timeline", "Redis for caching", "-n", "15", "--reverse")
    assert newest == shown[::-1]
    # A window keeps its first N in the order shown, and says how many it left.
    window = cli("timeline", "--since", "2000-01-01", "-n", "3")
    assert len(window.stdout.splitlines()) == 3 and "0 earlier and " in window.stderr


@pytest.mark.parametrize("around", ["99999999d", "36501d"])
def test_timeline_around_beyond_a_century_is_a_usage_error(cli: Cli, around: str) -> None:
    cli("index")
    done = cli("timeline", "Redis for caching", "--around", around, ok=False)
    assert done.exit_code == 2, done.output
    line = f"vaultmem: error: around: '{around}' is too long: at most 36500d (a century)"
    assert done.stderr.strip() == line
    assert cli("timeline", "Redis for caching", "--around", "36500d").exit_code == 0


# --- 9. the rules-mode handoff files each line under its label ---------------------------

REPLY = """I moved the sessions to Redis db 2 with a 14-day TTL.

**Learned:** the in-process cache dropped every session on deploy.
Turns out Memcached evicted them under memory pressure too.

Next step: run the k6 login test on staging.

## Next steps
- deploy to production
- watch the login error rate
"""


def test_the_rules_handoff_files_next_steps_and_learned(cli: Cli, vault: Path) -> None:
    transcript = vault.parent / "session.md"
    transcript.write_text(
        f"**User:** Move the sessions off the in-process cache.\n\n**Assistant:** {REPLY}",
        "utf-8",
    )
    done = json.loads(cli("handoff", str(transcript), "--project", "harbor", "--json").stdout)
    assert done["mode"] == "rules"
    assert done["done"] == ["I moved the sessions to Redis db 2 with a 14-day TTL."]
    assert done["learned"] == [
        "the in-process cache dropped every session on deploy.",
        "Turns out Memcached evicted them under memory pressure too.",
    ]
    assert done["next_steps"] == [
        "run the k6 login test on staging.",
        "deploy to production",
        "watch the login error rate",
    ]
    body = (vault / done["path"]).read_text("utf-8")
    learned = body.split("## Learned\n", 1)[1].split("\n## ", 1)[0]
    assert "- the in-process cache dropped every session on deploy." in learned


# --- 10. output details: columns by display width, merges named like memories ----------------


def _cells(text: str) -> int:
    """Terminal cells, measured independently of the code under test."""
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def test_review_aligns_columns_by_display_width(tmp_path: Path) -> None:
    vault = tmp_path / "v"
    _run("init", str(vault))
    for name, title in (("渡辺さんのメモ", "Watanabe"), ("plain-ascii-name", "Plain")):
        note = f"---\ntitle: {title}\ntype: note\ncreated: 2026-08-01T00:00:00Z\n---\nbody\n"
        (vault / f"{name}.md").write_text(note, "utf-8")
    env = {"VAULTMEM_NOW": "2026-11-28T00:00:00Z"}
    done = _run("--vault", str(vault), "review", env=env)
    assert done.exit_code == 0, done.output
    rows = done.stdout.splitlines()
    assert len(rows) == 3  # the header and both notes, in the danger zone
    # The title column starts at the same terminal cell on every row.
    starts = {_cells(row[: row.rindex("  ") + 2]) for row in rows}
    assert len(starts) == 1, rows


def test_a_merge_without_a_title_is_named_like_a_memory(cli: Cli, vault: Path) -> None:
    text = (
        "We moved user sessions to Redis db 2. Memcached lost them on every deploy, and "
        "the login page then failed for everyone until the cache warmed up again, which "
        "took about twenty minutes on a busy morning and paged the on-call engineer."
    )
    (vault / "inbox" / "a.md").write_text(text + "\n", "utf-8")
    (vault / "inbox" / "b.md").write_text(text + " Kept.\n", "utf-8")
    cli("index")
    merged = [c for c in cli.json_lines("consolidate") if c["outcome"] == "merged"]
    assert [c["merged"] for c in merged] == ["inbox/we-moved-user-sessions-to-redis-db-2.md"]
    body = (vault / merged[0]["merged"]).read_text("utf-8")
    assert "title: We moved user sessions to Redis db 2\n" in body
