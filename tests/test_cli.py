"""End-to-end CLI behaviour on a temp copy of example-vault/ (issue 2 acceptance)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, Cli


def test_index_then_search_finds_a_real_hit(cli: Cli) -> None:
    out = cli("index").stdout
    assert "added" in out and "0 skipped" in out
    hits = cli.json_lines("search", "redis caching decision", "-n", "3")
    assert hits[0]["path"] == "decisions/Redis for caching.md"
    assert set(hits[0]) >= {"path", "title", "score", "snippet", "line"}
    assert hits[0]["line"] > 0 and hits[0]["snippet"]


def test_snippet_is_the_best_matching_line_with_its_number(cli: Cli, vault: Path) -> None:
    cli("index")
    hit = cli.json_lines("search", "kubeconform", "-n", "1")[0]
    lines = (vault / hit["path"]).read_text(encoding="utf-8").splitlines()
    assert "kubeconform" in lines[hit["line"] - 1].lower()
    assert "kubeconform" in hit["snippet"].lower()


def test_second_index_is_a_no_op_and_edits_are_incremental(cli: Cli, vault: Path) -> None:
    cli("index")
    assert cli("index").stdout.startswith("0 added, 0 updated, 53 unchanged")
    note = vault / "decisions" / "Redis for caching.md"
    note.write_text(note.read_text("utf-8") + "\nZebrafishcache appendix.\n", "utf-8")
    os.utime(note, ns=(note.stat().st_atime_ns, note.stat().st_mtime_ns + 10**9))
    (vault / "daily" / "2026-10-05.md").unlink()
    assert cli("index").stdout.startswith("0 added, 1 updated, 51 unchanged, 1 removed")
    assert (
        cli.json_lines("search", "zebrafishcache")[0]["path"] == note.relative_to(vault).as_posix()
    )
    assert not [
        h for h in cli.json_lines("search", "2026-10-05") if h["path"] == "daily/2026-10-05.md"
    ]


def test_touched_but_unchanged_file_is_not_reindexed(cli: Cli, vault: Path) -> None:
    cli("index")
    note = vault / "Harbor.md"
    os.utime(note, ns=(note.stat().st_atime_ns, note.stat().st_mtime_ns + 10**9))
    assert cli("index").stdout.startswith("0 added, 0 updated, 53 unchanged")


def test_rebuilding_the_cache_gives_identical_results(
    cli: Cli, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VAULTMEM_NOW", "2026-12-01T09:00:00Z")  # scores hold the prior
    cli("index")
    queries = ["postgres migrations", "flaky tests", "redis", "release", "webhook outage"]
    before = [cli("search", q, "--json").stdout for q in queries]
    shutil.rmtree(vault / ".vaultmem")
    cli("index")
    assert [cli("search", q, "--json").stdout for q in queries] == before
    assert cli("index", "--rebuild").stdout.startswith("53 added")
    assert [cli("search", q, "--json").stdout for q in queries] == before


@pytest.mark.parametrize(
    "query",
    [
        "foo:bar (",
        "AND",
        "OR NOT",
        '"',
        "'",
        "*",
        "-",
        "?",
        "🎉🔥",
        "(((",
        "[[",
        "title:",
        "a" * 2000,
        "x " * 1000,
        "\\",
        "~1",
        "^2",
        "{}",
        "",
    ],
)
def test_any_query_string_is_safe(cli: Cli, query: str) -> None:
    cli("index")
    result = cli("search", query, "--json", ok=False)
    assert result.exit_code == 0, result.stderr
    for line in result.stdout.splitlines():
        json.loads(line)


def test_filters(cli: Cli) -> None:
    cli("index")
    assert {
        h["path"].split("/")[0] for h in cli.json_lines("search", "redis", "--folder", "decisions")
    } == {"decisions"}
    typed = cli.json_lines("search", "redis", "--type", "decision")
    assert typed and all(h["type"] == "decision" for h in typed)
    nested = cli.json_lines("search", "kubernetes", "--tag", "infra")
    assert nested and all(h["path"] for h in nested)
    assert (
        cli.json_lines("search", "memcached", "--status", "superseded")[0]["status"] == "superseded"
    )
    assert cli.json_lines("search", "redis", "--folder", "no-such-folder") == []


def test_forgotten_and_archived_are_hidden_unless_asked(cli: Cli, vault: Path) -> None:
    note = vault / "research" / "Rate limiting options.md"
    text = note.read_text("utf-8")
    note.write_text(text.replace("---\n", "---\nstatus: forgotten\n", 1), "utf-8")
    cli("index")
    paths = [h["path"] for h in cli.json_lines("search", "GCRA rate limiting")]
    assert "research/Rate limiting options.md" not in paths
    paths = [
        h["path"] for h in cli.json_lines("search", "GCRA rate limiting", "--status", "forgotten")
    ]
    assert paths == ["research/Rate limiting options.md"]


def test_a_malformed_note_is_reported_and_skipped(cli: Cli, vault: Path) -> None:
    (vault / "broken.md").write_text("---\ntitle: [unclosed\n---\nbody zanzibar\n", "utf-8")
    result = cli("index")
    assert "53 added" in result.stdout and "1 skipped" in result.stdout
    assert "broken.md:" in result.stderr and "line 2" in result.stderr
    assert cli.json_lines("search", "zanzibar") == []
    assert cli.json_lines("search", "pgbouncer")


def test_get_by_path_title_alias_and_json(cli: Cli) -> None:
    cli("index")
    text = cli("get", "decisions/Redis for caching.md").stdout
    assert text.startswith("---")
    assert cli("get", "Harbor glossary").stdout == cli("get", "reference/terms.md").stdout
    data = json.loads(cli("get", "Redis for caching", "--json").stdout)
    assert data["path"] == "decisions/Redis for caching.md"
    assert data["frontmatter"]["type"] == "decision" and data["body"]
    assert any(link["target"] for link in data["links"])
    alias = json.loads(cli("get", "渡辺健二", "--json").stdout)
    assert alias["path"] == "people/Kenji Watanabe.md"


def test_get_ambiguous_and_missing(cli: Cli) -> None:
    cli("index")
    result = cli("get", "README", ok=False)
    assert result.exit_code == 1
    assert "projects/harbor-api/README.md" in result.stderr
    assert "projects/payments/README.md" in result.stderr
    missing = cli("get", "no such note at all", ok=False)
    assert missing.exit_code == 1 and "no note called" in missing.stderr
    assert "Traceback" not in missing.stderr + missing.stdout


def test_status_reports_counts_and_staleness(cli: Cli, vault: Path) -> None:
    before = json.loads(cli("status", "--json").stdout)
    assert before["notes"] == 53 and before["indexed"] == 0 and before["last_index"] is None
    cli("index")
    (vault / "new note.md").write_text("# New\n", "utf-8")
    after = json.loads(cli("status", "--json").stdout)
    assert after["indexed"] == 53 and after["stale"] == 1 and after["new"] == 1
    assert after["cache_bytes"] > 0 and after["last_index"]
    assert "last index:" in cli("status").stdout


def test_search_before_index_is_a_clear_error(cli: Cli) -> None:
    result = cli("search", "redis", ok=False)
    assert result.exit_code == 1
    assert "vaultmem index" in result.stderr


def test_usage_errors_exit_2(cli: Cli) -> None:
    assert cli("search", ok=False).exit_code == 2
    assert cli("nonsense-command", ok=False).exit_code == 2
    assert cli("search", "x", "-n", "0", ok=False).exit_code == 2


def test_unknown_vault_exits_1(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from vaultmem.cli import app

    result = CliRunner().invoke(app, ["--vault", str(tmp_path / "nope"), "status"])
    assert result.exit_code == 1 and "not a folder" in result.stderr


def test_init_creates_config_and_cache_gitignore(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from vaultmem.cli import app

    target = tmp_path / "fresh"
    result = CliRunner().invoke(app, ["init", str(target)])
    assert result.exit_code == 0, result.stderr
    assert (target / ".vaultmem.toml").is_file()
    assert (target / ".vaultmem" / ".gitignore").read_text() == "*\n"
    again = CliRunner().invoke(app, ["init", str(target)])
    assert "created" not in again.stdout


def test_obsidian_folder_is_never_indexed(cli: Cli) -> None:
    cli("index")
    assert all(
        not h["path"].startswith(".obsidian")
        for h in cli.json_lines("search", "deploy redis harbor", "-n", "100")
    )


def test_index_lock_busy_exits_75(cli: Cli, vault: Path) -> None:
    from vaultmem.vault import vault_lock

    os.environ["VAULTMEM_LOCK_TIMEOUT"] = "0.2"
    try:
        with vault_lock(vault / ".vaultmem", timeout=0):
            result = cli("index", ok=False)
    finally:
        del os.environ["VAULTMEM_LOCK_TIMEOUT"]
    assert result.exit_code == 75 and "lock" in result.stderr


def test_help_does_not_import_heavy_packages() -> None:
    code = (
        "import sys\n"
        "from vaultmem.cli import app\n"
        "from typer.testing import CliRunner\n"
        "r = CliRunner().invoke(app, ['--help'])\n"
        "assert r.exit_code == 0\n"
        "heavy = [m for m in ('chromadb', 'openai', 'onnxruntime', 'whoosh') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _commands() -> list[str]:
    from typer.main import get_command

    from vaultmem.cli import app

    return sorted(get_command(app).commands)  # type: ignore[attr-defined]


def test_every_command_has_help_and_a_docs_entry() -> None:
    from typer.main import get_command

    from vaultmem.cli import app

    group = get_command(app)
    reference = (REPO / "docs" / "commands.md").read_text("utf-8")
    for name in _commands():
        command = group.commands[name]  # type: ignore[attr-defined]
        assert command.help and len(command.help) > 40, f"{name} has no help text"
        assert "Example:" in command.help, f"{name} help has no example"
        assert f"### `{name}`" in reference, f"docs/commands.md has no entry for `{name}`"


def test_one_short_word_matches_titles_by_prefix(cli: Cli) -> None:
    cli("index")
    hits = cli.json_lines("search", "pgb", "-n", "3")
    assert {h["path"] for h in hits[:2]} == {
        "research/PgBouncer connection pooling.md",
        "handoffs/2026-10-30 pgbouncer rollout.md",
    }


def test_a_word_the_vault_lacks_matches_body_words_by_prefix(cli: Cli) -> None:
    # "pagin" is in no note; "paginated" is, in the body of the API's README only.
    cli("index")
    hits = cli.json_lines("search", "pagin", "-n", "3")
    assert [h["path"] for h in hits] == ["projects/harbor-api/README.md"]
    assert "paginated" in hits[0]["snippet"]  # the snippet shows the word that matched
    both = cli.json_lines("search", "orders pagin", "-n", "3")
    assert both[0]["path"] == "projects/harbor-api/README.md"
    # Bounded: a word the vault holds is never widened ("redis" is not "redistribute").
    from vaultmem.config import build
    from vaultmem.index.lexical import LexicalIndex

    index = LexicalIndex.open(build(cli.vault, {}).cache_dir)
    assert index.matched_terms("redis pagin") == ["redi", "pagin", "paginat"]


@pytest.mark.parametrize("query", ["redis cache", "stripe webhook", "postgres migrations"])
def test_search_scores_are_the_rank_order_and_explain_shows_the_parts(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, query: str
) -> None:
    monkeypatch.setenv("VAULTMEM_NOW", "2026-12-01T09:00:00Z")
    cli("index")
    hits = cli.json_lines("search", query, "-n", "10")
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True)
    explained = cli.json_lines("search", query, "-n", "10", "--explain")
    assert [h["path"] for h in explained] == [h["path"] for h in hits]
    for hit in explained:
        parts = hit["explain"]
        # The shown score is the BM25F score moved by the prior, in BM25F units.
        assert hit["score"] == pytest.approx(parts["scaled"], abs=1e-5)
        relevance = parts["retrieval"] / max(h["explain"]["retrieval"] for h in explained)
        assert parts["relevance"] == pytest.approx(relevance, abs=1e-5)
        assert set(parts["factors"]) == {"recency", "confidence", "quality"}
    plain = cli.json_lines("search", query, "-n", "10", "--no-prior", "--no-review")
    assert [h["score"] for h in plain] == sorted(h["score"] for h in plain)[::-1]
    out = cli("search", query, "-n", "3", "--explain").stdout
    assert "bm25 " in out and "prior " in out and "(rank 1)" in out
