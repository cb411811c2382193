"""Template overrides live in the vault's ``.vaultmem.d/templates/``, tracked with the notes
(issue 19, item 5); the old cache location still works this release, with a warning. Both
count only once the user trusts the vault (issue 27: `vaultmem trust`)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import Cli

from vaultmem.note import read_note

OVERRIDE = "---\n{{ frontmatter }}---\n{{ text }}\n\nsource:: {{ where }}\n"


def _override(vault: Path, folder: str, where: str) -> Path:
    path = vault / folder / "templates" / "memory.md.j2"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(OVERRIDE.replace("{{ where }}", where), "utf-8")
    return path


def _templates(cli: Cli) -> dict:
    report = json.loads(cli("doctor", "--json", ok=False).stdout)
    (finding,) = [f for f in report["findings"] if f["check"] == "templates"]
    return finding


def test_an_override_in_vaultmem_d_is_used_and_is_no_note(vault: Path, cli: Cli) -> None:
    _override(vault, ".vaultmem.d", "tracked")
    (vault / ".vaultmem.d" / "README.md").write_text("# my overrides\n", "utf-8")
    cli("trust")
    result = cli("remember", "No deploys on Fridays.")
    path = result.stdout.strip().splitlines()[-1]
    assert read_note(vault, path).body.rstrip().endswith("source:: tracked")
    assert "warning" not in result.stderr
    assert _templates(cli) == {
        "check": "templates",
        "severity": "ok",
        "message": "1 template override(s) in .vaultmem.d/templates/",
        "repairable": False,
        "repaired": False,
        "fix": "",
    }
    # Never a note: not indexed, not searchable, refused by the path gate.
    cli("index")
    hits = cli("search", "my overrides", "--json", ok=False).stdout
    assert ".vaultmem.d" not in hits
    refused = cli("get", ".vaultmem.d/README.md", ok=False)
    assert refused.exit_code != 0 and ".vaultmem.d/ is never read" in refused.stderr


def test_init_leaves_vaultmem_d_to_git(vault: Path, cli: Cli) -> None:
    subprocess.run(["git", "init", "-q"], cwd=vault, check=True)
    cli("init")
    _override(vault, ".vaultmem.d", "tracked")
    cli("index")
    checked = subprocess.run(
        ["git", "check-ignore", "-q", ".vaultmem.d/templates/memory.md.j2"], cwd=vault
    )
    assert checked.returncode == 1  # not ignored: committed with the vault
    ignored = subprocess.run(["git", "check-ignore", "-q", ".vaultmem/manifest.db"], cwd=vault)
    assert ignored.returncode == 0  # the cache still is


def test_the_old_cache_location_still_works_with_a_warning(vault: Path, cli: Cli) -> None:
    _override(vault, ".vaultmem", "cache")
    cli("trust")
    result = cli("remember", "No deploys on Fridays.")
    path = result.stdout.strip().splitlines()[-1]
    assert read_note(vault, path).body.rstrip().endswith("source:: cache")  # nothing lost
    (line,) = [x for x in result.stderr.splitlines() if "warning" in x]
    assert line == (
        "vaultmem: warning: template override .vaultmem/templates/memory.md.j2 is in the "
        "cache folder (git-ignored, disposable); move it to .vaultmem.d/templates/memory.md.j2 "
        "(`vaultmem doctor` prints the command)"
    )
    found = _templates(cli)
    assert found["severity"] == "warn"
    assert "read from there until you move them: memory.md.j2" in found["message"]
    # The fix is a command that works: run it, and the override is read from its new home.
    subprocess.run(found["fix"], shell=True, check=True)
    assert (vault / ".vaultmem.d" / "templates" / "memory.md.j2").is_file()
    assert not (vault / ".vaultmem" / "templates").exists()
    assert _templates(cli)["severity"] == "ok"
    cli("trust")  # the overrides moved: trust is asked again
    again = cli("remember", "No deploys on Saturdays either.")
    assert "warning" not in again.stderr
    new = again.stdout.strip().splitlines()[-1]
    assert read_note(vault, new).body.rstrip().endswith("source:: cache")


def test_vaultmem_d_wins_over_the_old_location(vault: Path, cli: Cli) -> None:
    _override(vault, ".vaultmem", "cache")
    _override(vault, ".vaultmem.d", "tracked")
    (vault / ".vaultmem" / "templates" / "prompts").mkdir()
    (vault / ".vaultmem" / "templates" / "prompts" / "expand.j2").write_text("x", "utf-8")
    cli("trust")
    result = cli("remember", "No deploys on Fridays.")
    path = result.stdout.strip().splitlines()[-1]
    assert read_note(vault, path).body.rstrip().endswith("source:: tracked")
    found = _templates(cli)
    assert found["severity"] == "warn"
    assert "ignored, .vaultmem.d/templates/ has its own: memory.md.j2" in found["message"]
    # Only what has no counterpart moves; the shadowed copy stays for the person to compare.
    subprocess.run(found["fix"], shell=True, check=True)
    assert (vault / ".vaultmem.d" / "templates" / "prompts" / "expand.j2").read_text() == "x"
    assert (vault / ".vaultmem" / "templates" / "memory.md.j2").is_file()
    assert "compare them with" in _templates(cli)["fix"]
