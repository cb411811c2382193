"""Configuration layers, vault discovery and validation."""

from pathlib import Path

import pytest

from vaultmem.config import load
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
    assert config.exclude == ("drafts/**",)
    env["VAULTMEM_EMBED_MODEL"] = "from-env"
    env["VAULTMEM_EXCLUDE"] = "a/**, b/**, {c,d}/**"
    config = load(vault_flag="work", env=env, cwd=tmp_path)
    assert config.embed.model == "from-env"
    assert config.exclude == ("a/**", "b/**", "{c,d}/**")
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
