"""Configuration layers, vault discovery and validation."""

from pathlib import Path

import pytest

from vaultmem.config import DEFAULT_EXCLUDE, load
from vaultmem.errors import ConfigError


def _vault(tmp_path: Path, toml: str = "") -> Path:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / ".vaultmem.toml").write_text(toml, encoding="utf-8")
    return vault


def test_discovery_walks_upward(tmp_path: Path) -> None:
    vault = _vault(tmp_path)
    deep = vault / "a" / "b"
    deep.mkdir(parents=True)
    config = load(vault_flag=None, env={"HOME": str(tmp_path)}, cwd=deep)
    assert config.vault == vault.resolve()
    assert config.cache_dir == vault.resolve() / ".vaultmem"


def test_obsidian_folder_marks_a_vault(tmp_path: Path) -> None:
    (tmp_path / "v" / ".obsidian").mkdir(parents=True)
    config = load(vault_flag=None, env={"HOME": str(tmp_path)}, cwd=tmp_path / "v")
    assert config.vault == (tmp_path / "v").resolve()


def test_no_vault_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no vault found"):
        load(vault_flag=None, env={"HOME": str(tmp_path)}, cwd=tmp_path)


def test_precedence_defaults_user_vault_env_flags(tmp_path: Path) -> None:
    vault = _vault(tmp_path, 'exclude = ["drafts/**"]\n[embed]\nmodel = "from-vault"\n')
    user = tmp_path / "user.toml"
    user.write_text(
        f'[vaults]\nwork = "{vault}"\n[embed]\nmodel = "from-user"\nbatch_size = 8\n'
        '[folders]\ninbox = "new"\n',
        encoding="utf-8",
    )
    env = {"HOME": str(tmp_path), "VAULTMEM_CONFIG": str(user)}
    config = load(vault_flag="work", env=env, cwd=tmp_path)
    assert config.vault == vault.resolve()
    assert config.embed.model == "from-vault"  # vault beats user
    assert config.embed.batch_size == 8  # user beats default
    assert config.inbox_folder == "new"
    assert config.exclude == (*DEFAULT_EXCLUDE, "drafts/**")  # added to the defaults
    env["VAULTMEM_EMBED_MODEL"] = "from-env"
    env["VAULTMEM_EXCLUDE"] = "a/**, b/**, {c,d}/**"
    config = load(vault_flag="work", env=env, cwd=tmp_path)
    assert config.embed.model == "from-env"
    assert config.exclude == (*DEFAULT_EXCLUDE, "drafts/**", "a/**", "b/**", "{c,d}/**")
    config = load(vault_flag="work", env=env, cwd=tmp_path, overrides={"embed.model": "flag"})
    assert config.embed.model == "flag"


def test_env_vault_and_cache_dir(tmp_path: Path) -> None:
    vault = _vault(tmp_path)
    env = {
        "HOME": str(tmp_path),
        "VAULTMEM_VAULT": str(vault),
        "VAULTMEM_CACHE_DIR": str(tmp_path / "cache"),
    }
    config = load(vault_flag=None, env=env, cwd=tmp_path)
    assert config.cache_dir == tmp_path / "cache"


def test_bad_values_are_config_errors(tmp_path: Path) -> None:
    vault = _vault(tmp_path, '[embed]\nbatch_size = "lots"\n')
    with pytest.raises(ConfigError, match="embed.batch_size"):
        load(vault_flag=str(vault), env={"HOME": str(tmp_path)}, cwd=tmp_path)
    (vault / ".vaultmem.toml").write_text("include = [\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load(vault_flag=str(vault), env={"HOME": str(tmp_path)}, cwd=tmp_path)
    with pytest.raises(ConfigError, match="not a folder or a named vault"):
        load(vault_flag="nope", env={"HOME": str(tmp_path)}, cwd=tmp_path)


def test_api_key_not_in_repr(tmp_path: Path) -> None:
    vault = _vault(tmp_path)
    env = {"HOME": str(tmp_path), "VAULTMEM_EMBED_API_KEY": "sk-secret-123"}
    config = load(vault_flag=str(vault), env=env, cwd=tmp_path)
    assert config.embed.api_key == "sk-secret-123"
    assert "sk-secret-123" not in repr(config)


def test_collections(tmp_path: Path) -> None:
    vault = _vault(tmp_path, '[collections.work]\npath = "projects"\n')
    config = load(vault_flag=str(vault), env={"HOME": str(tmp_path)}, cwd=tmp_path)
    assert config.collection("work").path == "projects"
    with pytest.raises(ConfigError, match="unknown collection"):
        config.collection("play")


def _trust(vault: Path, home: Path) -> None:
    """`vaultmem trust` for ``vault``, by a user whose HOME is ``home``."""
    from datetime import UTC, datetime

    from vaultmem.vault_trust import trust, trust_folder

    trust(trust_folder({"HOME": str(home)}), vault, datetime.now(UTC))


def _load(vault: Path, tmp_path: Path, **env: str):  # noqa: ANN202
    return load(vault_flag=str(vault), env={"HOME": str(tmp_path), **env}, cwd=tmp_path)


def test_unknown_keys_warn_with_the_nearest_known_key(tmp_path: Path) -> None:
    vault = _vault(
        tmp_path,
        "lock_timout = 3\nbatch_size = 8\nzzz = 1\n[embed]\nbatchsize = 4\n"
        '[collections.work]\npath = "projects"\ninclde = ["*.md"]\n',
    )
    user = tmp_path / "user.toml"
    user.write_text('default_vault = "v"\n[folder]\ninbox = "x"\n', encoding="utf-8")
    config = _load(vault, tmp_path, VAULTMEM_CONFIG=str(user))
    assert config.warnings == (
        f"unknown key 'folder' in {user}; did you mean 'folders'?",
        "unknown key 'lock_timout' in .vaultmem.toml; did you mean 'lock_timeout'?",
        "unknown key 'batch_size' in .vaultmem.toml; did you mean 'embed.batch_size'?",
        "unknown key 'zzz' in .vaultmem.toml (ignored)",
        "unknown key 'embed.batchsize' in .vaultmem.toml; did you mean 'embed.batch_size'?",
        "unknown key 'collections.work.inclde' in .vaultmem.toml; "
        "did you mean 'collections.work.include'?",
    )
    # The known values still apply; the misspelt ones are ignored.
    assert config.lock_timeout == 30.0 and config.embed.batch_size == 64
    clean = tmp_path / "clean"
    clean.mkdir()
    assert _load(_vault(clean), tmp_path).warnings == ()


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("cache_dir = 42", "cache_dir: expected a folder path (a string), got 42"),
        ("lock_timeout = -1", "lock_timeout: expected a number >= 0, got -1"),
        ('lock_timeout = "soon"', "lock_timeout: expected a number, got 'soon'"),
        ("[embed]\nbatch_size = -4", "embed.batch_size: expected an integer >= 1, got -4"),
        ("[llm]\nbatch_size = 2.5", "llm.batch_size: expected an integer, got 2.5"),
        ("[rerank]\ntimeout = 0", "rerank.timeout: expected a number > 0, got 0"),
        ("[embed]\nmax_retries = -1", "embed.max_retries: expected an integer >= 0, got -1"),
        ("[embed]\nmodel = 42", "embed.model: expected a string, got 42"),
        ("[chroma]\nport = 70000", "chroma.port: expected a port from 1 to 65535, got 70000"),
        ("[query]\nexpand = 1", "query.expand: expected true or false, got 1"),
        ('folders = "inbox"', "folders: expected a table ([folders]), got 'inbox'"),
        ("embedder = 1", "embedder: expected a string, got 1"),
    ],
)
def test_wrong_types_and_ranges_name_the_key(tmp_path: Path, toml: str, message: str) -> None:
    vault = _vault(tmp_path, toml + "\n")
    _trust(vault.resolve(), tmp_path)  # an untrusted vault's routing keys are not read at all
    with pytest.raises(ConfigError) as caught:
        _load(vault, tmp_path)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    "toml",
    [
        '[folders]\ninbox = "/abs/inbox"',
        '[folders]\nmemory = "../memory"',
        '[folders]\narchive = "a/../../archive"',
        '[folders]\narchive = ""',
        '[folders]\ninbox = "~/inbox"',
        '[collections.w]\npath = "../elsewhere"',
    ],
)
def test_folder_settings_stay_inside_the_vault(tmp_path: Path, toml: str) -> None:
    vault = _vault(tmp_path, toml + "\n")
    with pytest.raises(ConfigError, match="expected a folder inside the vault, relative to its"):
        _load(vault, tmp_path)


def test_folder_settings_are_normalised(tmp_path: Path) -> None:
    toml = '[folders]\ninbox = "notes/./in/"\nmemory = "a/../mem"\n[collections.w]\npath = "p/"\n'
    config = _load(_vault(tmp_path, toml), tmp_path)
    assert (config.inbox_folder, config.memory_folder) == ("notes/in", "mem")
    assert config.collection("w").path == "p"


def test_environment_strings_are_still_parsed(tmp_path: Path) -> None:
    env = {
        "VAULTMEM_LOCK_TIMEOUT": "2.5",
        "VAULTMEM_EMBED_BATCH_SIZE": "16",
        "VAULTMEM_QUERY_EXPAND": "yes",
        "VAULTMEM_CHROMA_PORT": "9000",
    }
    config = _load(_vault(tmp_path), tmp_path, **env)
    assert (config.lock_timeout, config.embed.batch_size) == (2.5, 16)
    assert config.query_expand is True and config.chroma.port == 9000
    with pytest.raises(ConfigError, match="lock_timeout: expected a number >= 0, got '-3'"):
        _load(tmp_path / "vault", tmp_path, VAULTMEM_LOCK_TIMEOUT="-3")


def test_a_config_file_that_is_not_utf8_is_a_config_error(tmp_path: Path) -> None:
    vault = _vault(tmp_path)
    (vault / ".vaultmem.toml").write_bytes(b"lock_timeout = 3 # caf\xe9\n")
    with pytest.raises(ConfigError, match=r"\.vaultmem\.toml: not UTF-8 text \(byte 22\)"):
        _load(vault, tmp_path)
