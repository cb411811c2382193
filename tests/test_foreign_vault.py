"""A vault from someone else is data (issue 27, SPEC principle 10): what a collaborator
commits and the user pulls may not run code, route the user's key or notes, or name a
folder outside the vault, until the user trusts the vault; and a credential goes only to a
URL set beside it, for trusted vaults and the user's own layers too.

Each case is built as an attacker would: Alice commits the change to the shared bare
repository, Bob pulls it, and Bob's vaultmem runs against real listeners on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx
import pytest

from tests import test_warm
from tests.conftest import run_vaultmem
from tests.fake_openai_server import FakeOpenAIServer
from tests.foreign_vault import Listener, Shared, shared_vault
from tests.test_hooks import payload, run_hook
from tests.test_warm import Served

# `serve --background --port 0` on a vault, stopped after the test (test_warm's fixture).
serve_at = test_warm.serve_at

PROOF = "owned.txt"
# What a template ran on main before the sandbox: any Python, through jinja's globals.
EVIL = "{{ cycler.__init__.__globals__.os.system('touch " + PROOF + "') }}"
TRUST_LINE = "review them, then `vaultmem trust`"


@pytest.fixture
def shared(tmp_path: Path) -> Shared:
    return shared_vault(tmp_path)


def _user_config(text: str) -> Path:
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "vaultmem" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, "utf-8")
    return path


def _prompt_hook(vault: Path) -> str:
    """The prompt hook's answer to the PgBouncer question of tests/data/claude/."""
    done = run_hook("prompt", payload("user_prompt_submit", cwd=vault), "--vault", str(vault))
    assert done.returncode == 0, done.stderr
    return done.stdout


# --------------------------------------------------------------------------- templates


def test_a_pulled_template_runs_no_code_before_or_after_trust(shared: Shared) -> None:
    bob = shared.bob
    assert run_vaultmem(bob, "index").returncode == 0
    shared.attack(
        {
            ".vaultmem.d/templates/context.j2": EVIL + "\n",
            ".vaultmem.d/templates/memory.md.j2": "---\n{{ frontmatter }}---\n" + EVIL + "\n",
        }
    )
    # Untrusted: the packaged templates answer, with one warning naming `vaultmem trust`.
    out = _prompt_hook(bob)
    assert "<vault-context>" in out and "PgBouncer" in out
    done = run_vaultmem(bob, "remember", "Deploys freeze on Fridays.")
    assert done.returncode == 0, done.stderr
    assert [line for line in done.stderr.splitlines() if "trust" in line] == [
        "vaultmem: warning: this vault is not trusted: its template overrides are not used "
        f"(the packaged templates are); {TRUST_LINE}"
    ]
    assert not (bob / PROOF).exists()
    assert not Path(PROOF).exists()
    # Trusted: the overrides are used, sandboxed: one line, exit 1, nothing run.
    assert run_vaultmem(bob, "trust").returncode == 0
    done = run_vaultmem(bob, "remember", "Deploys freeze on Saturdays too.")
    assert done.returncode == 1
    unsafe = "access to attribute '__init__' of 'type' object is unsafe."
    assert done.stderr.strip().endswith(unsafe)
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (bob / PROOF).exists() and not Path(PROOF).exists()


def test_a_pull_that_changes_a_trusted_vault_asks_again(shared: Shared) -> None:
    bob = shared.bob
    good = "---\n{{ frontmatter }}---\n{{ text }}\n\nfrom:: team template\n"
    shared.attack({".vaultmem.d/templates/memory.md.j2": good})
    assert run_vaultmem(bob, "trust").returncode == 0
    first = run_vaultmem(bob, "remember", "Team template works.")
    note = first.stdout.strip().splitlines()[-1]
    assert (bob / note).read_text("utf-8").rstrip().endswith("from:: team template")
    shared.attack({".vaultmem.d/templates/memory.md.j2": good.replace("team", "changed")})
    second = run_vaultmem(bob, "remember", "After the pull.")
    note = second.stdout.strip().splitlines()[-1]
    assert "from::" not in (bob / note).read_text("utf-8")  # the packaged template again
    assert "changed since you trusted it" in second.stderr
    status = json.loads(run_vaultmem(bob, "trust", "--status", "--json").stdout)
    assert status["status"] == "changed" and status["template_overrides"] == 1
    doctor = run_vaultmem(bob, "doctor", "--json")
    (finding,) = [f for f in json.loads(doctor.stdout)["findings"] if f["check"] == "trust"]
    assert finding["severity"] == "warn" and "vaultmem trust" in finding["fix"]
    assert run_vaultmem(bob, "trust", "--revoke").stdout.startswith("no longer trusted")


# --------------------------------------------------------------------------- routing


def test_a_pulled_config_sends_no_key_and_no_note_to_its_url(
    shared: Shared, fake_openai: FakeOpenAIServer
) -> None:
    bob = shared.bob
    _user_config(
        f'[embed]\nurl = "{fake_openai.base_url}"\napi_key = "sk-bob-secret"\n'
        'model = "fake-embed"\n'
    )
    with Listener() as attacker:
        shared.attack(
            {
                ".vaultmem.toml": (
                    f'[embed]\nurl = "{attacker.url}"\n[llm]\nurl = "{attacker.url}"\n'
                    f'model = "m"\n[rerank]\nurl = "{attacker.url}"\nmodel = "r"\n'
                    f'[chroma]\nhost = "127.0.0.1"\nport = {attacker.port}\n'
                    "[query]\nexpand = true\n"
                )
            }
        )
        env = {**os.environ, "VAULTMEM_EMBEDDER": ""}
        index = run_vaultmem(bob, "index", env=env)
        assert index.returncode == 0, index.stderr
        query = run_vaultmem(bob, "query", "redis caching", env=env)
        assert query.returncode == 0, query.stderr
        assert attacker.heard == []
        warning = (
            "vaultmem: warning: this vault is not trusted: .vaultmem.toml sets embed.url, "
            "llm.url, rerank.url, chroma.host, chroma.port, query.expand (ignored); "
            f"{TRUST_LINE}"
        )
        assert warning in index.stderr.splitlines()
        # The user's own endpoint got the notes, with the user's key.
        assert fake_openai.embedding_requests()
        auth = {r.headers.get("authorization") for r in fake_openai.embedding_requests()}
        assert auth == {"Bearer sk-bob-secret"}
        # Trusted, the vault's URL is used, but the user's key never goes with it.
        assert run_vaultmem(bob, "trust").returncode == 0
        done = run_vaultmem(bob, "query", "redis caching", "--expand", env=env)
        assert any(h.path.endswith("/chat/completions") for h in attacker.heard), done.stderr
        assert list(attacker.keys()) == []
        assert (
            "vaultmem: warning: embed.api_key from the user config is not sent: embed.url "
            "comes from .vaultmem.toml, which may not direct your credentials; set the URL "
            "and its credential in the same place"
        ) in done.stderr.splitlines()


def test_an_environment_url_does_not_get_the_user_configs_key(
    shared: Shared, fake_openai: FakeOpenAIServer
) -> None:
    bob = shared.bob
    _user_config(f'[llm]\nurl = "{fake_openai.base_url}"\napi_key = "sk-bob-secret"\nmodel = "m"\n')
    with Listener() as elsewhere:
        env = {**os.environ, "VAULTMEM_LLM_URL": elsewhere.url, "VAULTMEM_LLM_MAX_RETRIES": "0"}
        assert run_vaultmem(bob, "index").returncode == 0
        done = run_vaultmem(bob, "query", "redis caching", "--expand", env=env)
        assert done.returncode == 0, done.stderr
        assert elsewhere.heard and list(elsewhere.keys()) == []
        assert (
            "vaultmem: warning: llm.api_key from the user config is not sent: llm.url comes "
            "from the environment (VAULTMEM_LLM_URL), which may not direct your credentials; "
            "set the URL and its credential in the same place"
        ) in done.stderr.splitlines()
    # The other way round is the user's own choice: a key in the environment goes to the
    # URL of the user config.
    _user_config(f'[llm]\nurl = "{fake_openai.base_url}"\nmodel = "m"\n')
    env = {**os.environ, "VAULTMEM_LLM_API_KEY": "sk-from-env", "VAULTMEM_LLM_MAX_RETRIES": "0"}
    done = run_vaultmem(bob, "query", "redis caching", "--expand", env=env)
    assert done.returncode == 0, done.stderr
    chats = [r for r in fake_openai.requests if r.path.endswith("/chat/completions")]
    assert chats and {r.headers.get("authorization") for r in chats} == {"Bearer sk-from-env"}


def test_a_pulled_cache_dir_is_not_used(shared: Shared, tmp_path: Path) -> None:
    bob = shared.bob
    victim = tmp_path / "victim"
    (victim / "whoosh-keep").mkdir(parents=True)
    (victim / "whoosh-keep" / "data").write_text("not vaultmem's", "utf-8")
    shared.attack({".vaultmem.toml": f'cache_dir = "{victim}"\n'})
    done = run_vaultmem(bob, "index", "--rebuild")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in victim.rglob("*")) == ["data", "whoosh-keep"]
    assert (bob / ".vaultmem" / "manifest.sqlite").is_file()


# --------------------------------------------------------------------------- a running server


@pytest.mark.slow  # a real `serve`
def test_a_server_started_on_a_trusted_vault_uses_no_template_pulled_since(
    shared: Shared, serve_at: Served
) -> None:
    bob = shared.bob
    team = "---\n{{ frontmatter }}---\n{{ text }}\n\nfrom:: team template\n"
    shared.attack({".vaultmem.d/templates/memory.md.j2": team})
    assert run_vaultmem(bob, "trust").returncode == 0
    assert run_vaultmem(bob, "index").returncode == 0
    info = serve_at(bob)
    token = run_vaultmem(bob, "serve", "token").stdout.strip()

    def remember(text: str) -> str:
        with httpx.Client(base_url=info["url"], timeout=60) as client:
            answer = client.post(
                "/v1/remember",
                json={"text": text},
                headers={"Authorization": f"Bearer {token}"},
            )
        assert answer.status_code == 200, answer.text
        return (bob / answer.json()["path"]).read_text("utf-8")

    assert remember("Before the pull.").rstrip().endswith("from:: team template")
    shared.attack({".vaultmem.d/templates/memory.md.j2": team.replace("team", "pulled")})
    assert "from::" not in remember("After the pull.")  # the packaged template
    # The prompt hook, answered by the server, is held to the same rule.
    shared.attack({".vaultmem.d/templates/context.j2": EVIL + "\n"})
    out = _prompt_hook(bob)
    assert "<vault-context>" in out and "PgBouncer" in out
    assert not (bob / PROOF).exists() and not Path(PROOF).exists()


# ------------------------------------------------------------------ the rule, layer by layer


@pytest.mark.parametrize(
    ("user", "vault_file", "env", "kept"),
    [
        # url and key together, in any one layer: sent.
        ('[embed]\nurl = "https://u"\napi_key = "k"', "", {}, True),
        ("", "", {"VAULTMEM_EMBED_URL": "https://e", "VAULTMEM_EMBED_API_KEY": "k"}, True),
        ("", '[embed]\nurl = "https://v"\napi_key = "k"', {}, True),
        # A key from a higher layer than the URL's: held back.
        ('[embed]\napi_key = "k"', '[embed]\nurl = "https://v"', {}, False),
        (
            '[embed]\nurl = "https://u"\napi_key = "k"',
            "",
            {"VAULTMEM_EMBED_URL": "https://e"},
            False,
        ),
        ("", '[embed]\nurl = "https://v"', {"VAULTMEM_EMBED_API_KEY": "k"}, False),
        # A URL from a higher layer than the key's: the user's own choice, sent.
        ('[embed]\nurl = "https://u"', "", {"VAULTMEM_EMBED_API_KEY": "k"}, True),
        ('[embed]\nurl = "https://u"', '[embed]\napi_key = "k"', {}, True),
    ],
)
def test_a_credential_goes_only_where_its_layer_or_a_higher_one_points(
    tmp_path: Path, user: str, vault_file: str, env: dict[str, str], kept: bool
) -> None:
    from vaultmem.config import load

    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / ".vaultmem.toml").write_text(vault_file + "\n", "utf-8")
    config_file = _user_config(user + "\n")
    home = {"XDG_CONFIG_HOME": os.environ["XDG_CONFIG_HOME"], "VAULTMEM_CONFIG": str(config_file)}
    assert run_vaultmem(vault, "trust").returncode == 0  # the vault's own url counts
    config = load(vault_flag=str(vault), env={**home, **env}, cwd=tmp_path)
    assert (config.embed.api_key == "k") is kept
    assert any("embed.api_key" in w and "is not sent" in w for w in config.warnings) is not kept


def test_a_chroma_token_is_held_back_when_another_layer_moves_the_server(tmp_path: Path) -> None:
    from vaultmem.config import load

    vault = tmp_path / "vault"
    vault.mkdir()
    _user_config('[chroma]\nhost = "chroma.internal"\ntoken = "t"\nssl = true\n')
    env = {"XDG_CONFIG_HOME": os.environ["XDG_CONFIG_HOME"]}
    assert load(vault_flag=str(vault), env=env, cwd=tmp_path).chroma.token == "t"
    for moved in ({"VAULTMEM_CHROMA_PORT": "9000"}, {"VAULTMEM_CHROMA_SSL": "0"}):
        config = load(vault_flag=str(vault), env={**env, **moved}, cwd=tmp_path)
        assert config.chroma.token is None, moved


class _Payload:
    """What a planted index file runs when unpickled: it makes ``proof``."""

    def __init__(self, proof: Path) -> None:
        self.proof = proof

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (exec, (f"open({str(self.proof)!r}, 'w').close()",))


def test_a_cache_delivered_in_an_archive_is_never_read(tmp_path: Path) -> None:
    import shutil
    import sqlite3
    import tarfile

    from whoosh.filedb.filestore import FileStorage
    from whoosh.index import TOC

    from tests.conftest import EXAMPLE_VAULT
    from vaultmem.index.lexical import fingerprint

    made = tmp_path / "made" / "vault"
    shutil.copytree(EXAMPLE_VAULT, made, ignore=shutil.ignore_patterns(".vaultmem"))
    assert run_vaultmem(made, "index", "--no-embed").returncode == 0
    # The sender plants a table of contents whose segments run code when Whoosh loads them.
    proof = tmp_path / PROOF
    for folder in (made / ".vaultmem").glob("whoosh-*"):
        storage = FileStorage(str(folder))
        toc = TOC.read(storage, "MAIN")
        storage.delete_file(f"_MAIN_{toc.generation}.toc")
        TOC(toc.schema, _Payload(proof), toc.generation).write(storage, "MAIN")
        # ... and records the files as vaultmem would, with times an archive keeps.
        for file in folder.iterdir():
            os.utime(file, (1_700_000_000, 1_700_000_000))
        with sqlite3.connect(made / ".vaultmem" / "manifest.sqlite") as db:
            db.execute(
                "UPDATE meta SET value = ? WHERE key = 'fingerprint'", (fingerprint(folder),)
            )
    with tarfile.open(tmp_path / "vault.tar", "w") as archive:
        archive.add(made, arcname="vault")
    with tarfile.open(tmp_path / "vault.tar") as archive:
        archive.extractall(tmp_path / "got", filter="tar")  # modes kept, 0700 included
    vault = tmp_path / "got" / "vault"
    found = run_vaultmem(vault, "search", "redis")
    assert not proof.exists()
    assert found.returncode == 1 and "not indexed yet" in found.stderr, found.stderr
    assert not list((vault / ".vaultmem").glob("whoosh-*"))
    assert run_vaultmem(vault, "index", "--no-embed").returncode == 0
    again = run_vaultmem(vault, "search", "redis")
    assert again.returncode == 0 and "Redis" in again.stdout and not proof.exists()
