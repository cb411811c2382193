"""The names of vaultmem's environment variables: the ClawMem name of the TPM limit paces
as the vaultmem one does, and an unknown ``VAULTMEM_*`` variable is a warning, once,
naming the nearest known one."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import test_warm
from conftest import REPO, Cli, run_vaultmem
from fake_openai_server import FakeOpenAIServer

from vaultmem.environment import KNOWN_ENV
from vaultmem.inference.remote import estimate_tokens

serve_at = test_warm.serve_at  # the fixture

TYPO_WARNING = (
    "vaultmem: warning: unknown variable 'VAULTMEM_EMBED_TMP' in the environment; "
    "did you mean 'VAULTMEM_EMBED_TPM'?"
)


def use_endpoint(monkeypatch: pytest.MonkeyPatch, server: FakeOpenAIServer) -> None:
    """The in-test server as the vault's embedder, one input a request, one at a time, for
    the decisions/ folder alone (fewer fragments than `embed` stores at a time, so its
    requests follow one another with no store write between them)."""
    monkeypatch.setenv("VAULTMEM_INCLUDE", "decisions/**")
    monkeypatch.setenv("VAULTMEM_EMBEDDER", "endpoint")
    monkeypatch.setenv("VAULTMEM_EMBED_URL", server.url)
    monkeypatch.setenv("VAULTMEM_EMBED_MODEL", "fake-embed")
    monkeypatch.setenv("VAULTMEM_EMBED_BATCH_SIZE", "1")
    monkeypatch.setenv("VAULTMEM_EMBED_CONCURRENCY", "1")


def embed_requests(cli: Cli, server: FakeOpenAIServer, *args: str) -> list[tuple[float, int]]:
    """Run `embed ARGS`; (arrival time, estimated tokens) of each request it made."""
    server.requests.clear()
    cli("embed", *args)
    return [(r.time, sum(estimate_tokens(t) for t in r.inputs)) for r in server.requests]


def test_clawmem_tpm_name_paces_embedding(
    cli: Cli, fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_endpoint(monkeypatch, fake_openai)
    cli("index")
    unpaced = embed_requests(cli, fake_openai, "--force")
    assert 5 < len(unpaced) < 64
    tokens = sum(cost for _, cost in unpaced)
    # A budget the bucket (10 s of it, full at the start) covers but for about 2 s.
    tpm = int(tokens * 60 / 12)
    monkeypatch.setenv("VAULTMEM_EMBED_TPM_LIMIT", str(tpm))
    paced = embed_requests(cli, fake_openai, "--force")
    rate, capacity = tpm / 60, tpm / 6
    *before, last = (cost for _, cost in paced)
    # The last request cannot start before the budget has refilled for everything else.
    least = (sum(before) + min(last, capacity) - capacity) / rate
    assert least > 1.5
    assert unpaced[-1][0] - unpaced[0][0] < least - 0.7  # without pacing: no such wait
    assert paced[-1][0] - paced[0][0] >= least - 0.2


def test_both_tpm_names_must_agree(
    cli: Cli, fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_endpoint(monkeypatch, fake_openai)
    monkeypatch.setenv("VAULTMEM_EMBED_TPM", "40")
    monkeypatch.setenv("VAULTMEM_EMBED_TPM_LIMIT", "60")
    result = cli("status", ok=False)
    assert result.exit_code == 1
    assert (
        "VAULTMEM_EMBED_TPM='40' and VAULTMEM_EMBED_TPM_LIMIT='60' set the same "
        "embed.tpm_limit: unset one, or give both the same value"
    ) in result.stderr
    monkeypatch.setenv("VAULTMEM_EMBED_TPM_LIMIT", "40")
    from vaultmem import config

    loaded = config.load(vault_flag=str(cli.vault), env=dict(os.environ), cwd=cli.vault)
    assert loaded.embed.tpm_limit == 40


def test_unknown_variable_is_warned_of_once_with_the_nearest_name(vault: Path) -> None:
    env = {**os.environ, "VAULTMEM_EMBED_TMP": "40", "VAULTMEM_FROBNICATE": "1"}
    done = run_vaultmem(vault, "status", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("VAULTMEM_EMBED_TMP") == 1
    assert TYPO_WARNING in done.stderr.splitlines()
    frob = "vaultmem: warning: unknown variable 'VAULTMEM_FROBNICATE' in the environment (ignored)"
    assert frob in done.stderr.splitlines()
    # Known variables, and --help, say nothing.
    assert run_vaultmem(vault, "status").stderr == ""
    assert run_vaultmem(vault, "status", "--help", env=env).stderr == ""


def test_environment_warning_once_per_process(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    # A server runs every forwarded command in its own process and environment.
    monkeypatch.setenv("VAULTMEM_ONCE_PER_PROCES", "1")
    first = cli("status")
    assert "unknown variable 'VAULTMEM_ONCE_PER_PROCES'" in first.stderr
    assert "unknown variable" not in cli("status").stderr


@pytest.mark.slow  # a real `serve` process
def test_a_command_with_an_unknown_variable_runs_here_and_warns(
    vault: Path, serve_at: test_warm.Served
) -> None:
    test_warm.indexed(vault)
    serve_at(vault)
    args = ("surface", "why did we move sessions to Redis?", "--no-vectors")
    before = len(test_warm.forwarded(vault))
    assert test_warm.vm(vault, *args).returncode == 0
    assert len(test_warm.forwarded(vault)) == before + 1  # known names: the server answers
    env = {**os.environ, "VAULTMEM_EMBED_TMP": "40"}
    done = test_warm.vm(vault, *args, env=env)
    # Not forwarded (the server would never see the variable): run here, and warned of.
    assert len(test_warm.forwarded(vault)) == before + 1
    assert done.returncode == 0
    assert TYPO_WARNING in done.stderr.decode().splitlines()


def test_doctor_lists_an_unknown_variable(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VAULTMEM_LOCK_TIMOUT", "5")
    report = cli("doctor", ok=False).stdout
    assert (
        "unknown variable 'VAULTMEM_LOCK_TIMOUT' in the environment; "
        "did you mean 'VAULTMEM_LOCK_TIMEOUT'?"
    ) in report


# A variable's name as the code, tests and docs write it (not the bare prefix, nor an
# f-string's ``VAULTMEM_EMBED_{…}``).
_VARIABLE = re.compile(r"VAULTMEM_[A-Z0-9_]*[A-Z0-9]\b")
# Misspelt on purpose, in docs/config.md's example of the warning.
MISSPELT = {"VAULTMEM_EMBED_TMP"}


def test_every_variable_the_code_reads_is_known() -> None:
    here = Path(__file__).resolve()
    files = [
        p
        for folder in ("vaultmem", "tests", "benchmarks", "docs", ".ci")
        for p in (REPO / folder).rglob("*")
        if p.is_file()
        and p.suffix in ("", ".py", ".md", ".sh", ".toml", ".json", ".j2")
        and p.resolve() != here
    ]
    found = {
        (name, p.relative_to(REPO).as_posix())
        for p in files
        for name in _VARIABLE.findall(p.read_text("utf-8", errors="replace"))
    }
    unknown = sorted((n, path) for n, path in found if n not in KNOWN_ENV | MISSPELT)
    assert unknown == []
    assert len({name for name, _ in found}) > 20
