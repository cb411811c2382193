"""vaultmem and QMD side by side on the same man-page vault, as whole processes.

    python benchmarks/bench_vs_qmd.py --install-qmd /tmp/qmd-prefix [--corpus dev|scale]
        [--pairs 5] [--queries 20] [--measures cold,noop,search] [--json OUT]
    python benchmarks/bench_vs_qmd.py --qmd PATH/TO/qmd ...

QMD (github.com/tobi/qmd, the npm package ``@tobilu/qmd``) is a markdown search CLI run
with bun. ``--install-qmd PREFIX`` installs bun (the npm package ``bun``) with npm and
then QMD with that bun, both under PREFIX (npm's and bun's download caches too), never
globally; an install already there at the wanted version is reused. ``--qmd PATH`` uses
an installed ``qmd`` instead (bun must then be on PATH). The ``qmd`` command is measured
as installed: a small Node launcher that starts bun on QMD's code; both processes count.

Both tools get their own copy of the same vault (the dev split, 978 pages, or the scale
corpus, 15,926 pages, written by ``../shared/bench/make_vault.py``) and their own empty
HOME, XDG_CONFIG_HOME and XDG_CACHE_HOME in a temp folder, so nothing is read from or
written to the user's home (QMD keeps its index in ``$XDG_CACHE_HOME/qmd``, its
collections in ``$XDG_CONFIG_HOME/qmd``; vaultmem keeps its index in the vault's
``.vaultmem/``). vaultmem runs with ``VAULTMEM_NO_SERVER=1``; no QMD daemon is started.

Measures, each as interleaved pairs (vaultmem then QMD, then QMD then vaultmem, ...):

- ``cold``: keyword index from nothing, no embeddings for either:
  ``vaultmem index --no-embed`` with ``.vaultmem/`` removed, against
  ``qmd collection add VAULT`` with QMD's cache and config removed;
- ``noop``: re-index with nothing changed: ``vaultmem index --no-embed`` / ``qmd update``;
- ``search``: ``vaultmem search Q -n 10`` / ``qmd search Q -n 10`` for ``--queries``
  dev queries (evenly spaced over the 744), every query a pair, ``--pairs`` rounds.

Each run is timed from spawn to ``os.wait4``, whose resource usage gives the CPU time
(user + sys of the process and the children it waited for) and the peak RSS (the largest
of them). The script prints per measure the medians and the ratio vaultmem/QMD, the
load average before and after each measure, and for search how many queries had their
page in the top 10 of each tool (a check that both did the same work).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from common import make_vault, median, note_id, queries

QMD_PACKAGE = "@tobilu/qmd"
QMD_VERSION = "2.8.3"
MEASURES = ("cold", "noop", "search")
HIT_PATH = re.compile(r"(?:man\d|misc)/([^\s\]:]+\.md)")


@dataclass(frozen=True)
class Sample:
    """One measured process: wall seconds, CPU seconds (user + sys), peak RSS in MiB."""

    wall: float
    cpu: float
    rss_mib: float


@dataclass(frozen=True)
class Tool:
    """How to run one tool on its own vault copy with its own home and caches."""

    name: str
    vault: Path
    env: dict[str, str]
    cold: list[str]
    noop: list[str]
    search: list[str]  # the query is appended, then search_tail
    search_tail: list[str]
    fresh: tuple[Path, ...]  # removed before each cold index

    def search_cmd(self, query: str) -> list[str]:
        """The whole search command line for ``query``."""
        return [*self.search, query, *self.search_tail]


def run_measured(cmd: list[str], env: dict[str, str]) -> tuple[Sample, str]:
    """Run ``cmd`` to its end; its :class:`Sample` and stdout. A failure raises with stderr."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        if proc.returncode != 0:
            stderr = err.read().decode("utf-8", "replace")
            raise RuntimeError(f"{cmd} exited {proc.returncode}:\n{stdout}\n{stderr}")
    sample = Sample(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)
    return sample, stdout


def install_qmd(prefix: Path, version: str) -> tuple[Path, Path]:
    """Install bun and QMD ``version`` under ``prefix``; (the qmd command, bun's bin dir)."""
    prefix = prefix.resolve()
    bin_dir = prefix / "node_modules" / ".bin"
    project = prefix / "qmd"
    qmd = project / "node_modules" / ".bin" / "qmd"
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "npm_config_cache": str(prefix / "npm-cache"),
        "BUN_INSTALL_CACHE_DIR": str(prefix / "bun-cache"),
        "XDG_CACHE_HOME": str(prefix / "cache"),
    }
    if qmd.exists() and (bin_dir / "bun").exists():
        done = subprocess.run([str(qmd), "--version"], env=env, capture_output=True, text=True)
        if version in done.stdout:
            return qmd, bin_dir
    project.mkdir(parents=True, exist_ok=True)
    npm = ["npm", "install", "--prefix", str(prefix), "--no-save", "--no-audit", "--no-fund"]
    subprocess.run([*npm, "bun"], env=env, check=True)
    manifest = project / "package.json"
    if not manifest.exists():
        manifest.write_text('{"name": "qmd-bench", "private": true}\n')
    bun_add = [str(bin_dir / "bun"), "add", f"{QMD_PACKAGE}@{version}"]
    subprocess.run(bun_add, cwd=project, env=env, check=True)
    return qmd, bin_dir


def vaultmem_command() -> list[str]:
    """The ``vaultmem`` entry script of this interpreter's environment (what users type)."""
    script = Path(sys.executable).parent / "vaultmem"
    return [str(script)] if script.exists() else [sys.executable, "-m", "vaultmem"]


def own_home(root: Path) -> dict[str, str]:
    """An empty HOME with its own config and cache folders under ``root``."""
    home = root / "home"
    for sub in ("config", "cache"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_CACHE_HOME": str(home / "cache"),
    }


def base_env() -> dict[str, str]:
    """The environment without variables that would point either tool elsewhere."""
    dropped = ("INDEX_PATH", "QMD_CONFIG_DIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")
    return {
        k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_") and k not in dropped
    }


def copy_vault(source: Path, target: Path) -> Path:
    """A copy of the markdown of ``source`` at ``target`` (no index, no marker file)."""
    ignore = shutil.ignore_patterns(".vaultmem", ".made")
    shutil.copytree(source, target, ignore=ignore)
    return target


def make_tools(source: Path, work: Path, qmd: Path, bun_dir: Path | None) -> list[Tool]:
    """vaultmem and QMD, each with its own vault copy, home and caches under ``work``."""
    vm_vault = copy_vault(source, work / "vaultmem" / "vault")
    vm_env = {**base_env(), **own_home(work / "vaultmem"), "VAULTMEM_NO_SERVER": "1"}
    vm = [*vaultmem_command(), "--vault", str(vm_vault)]
    vaultmem = Tool(
        name="vaultmem",
        vault=vm_vault,
        env=vm_env,
        cold=[*vm, "index", "--no-embed", "-q"],
        noop=[*vm, "index", "--no-embed", "-q"],
        search=[*vm, "search"],
        search_tail=["-n", "10"],
        fresh=(vm_vault / ".vaultmem",),
    )
    q_vault = copy_vault(source, work / "qmd" / "vault")
    q_env = {**base_env(), **own_home(work / "qmd"), "NO_COLOR": "1"}
    if bun_dir is not None:
        q_env["PATH"] = f"{bun_dir}{os.pathsep}{q_env.get('PATH', '')}"
    q_home = Path(q_env["HOME"])
    qmd_tool = Tool(
        name="QMD",
        vault=q_vault,
        env=q_env,
        cold=[str(qmd), "collection", "add", str(q_vault), "--name", "bench"],
        noop=[str(qmd), "update"],
        search=[str(qmd), "search"],
        search_tail=["-n", "10"],
        fresh=(q_home / "cache" / "qmd", q_home / "config" / "qmd"),
    )
    return [vaultmem, qmd_tool]


def prime_page_cache(vault: Path) -> tuple[int, int]:
    """Read every note once so neither tool pays for the first disk read; (notes, bytes)."""
    notes = sorted(vault.rglob("*.md"))
    return len(notes), sum(len(p.read_bytes()) for p in notes)


def ordered(tools: list[Tool], pair: int) -> list[Tool]:
    """The pair's order: as given on even pairs, reversed on odd ones."""
    return tools if pair % 2 == 0 else tools[::-1]


def run_pairs(
    tools: list[Tool], pairs: int, job: Callable[[Tool, int], Sample]
) -> dict[str, list[Sample]]:
    """``job(tool, pair)`` for both tools in each of ``pairs`` alternating pairs; each
    sample is printed to stderr as it comes (a cold index of the scale vault takes minutes)."""
    samples: dict[str, list[Sample]] = {t.name: [] for t in tools}
    for pair in range(pairs):
        for tool in ordered(tools, pair):
            sample = job(tool, pair)
            samples[tool.name].append(sample)
            print(
                f"  {job.__name__} {tool.name}: {sample.wall:.2f} s wall, {sample.cpu:.2f} s CPU, "
                f"{sample.rss_mib:.0f} MiB",
                file=sys.stderr,
                flush=True,
            )
    return samples


def cold_index(tool: Tool, _pair: int) -> Sample:
    """A keyword index built from nothing."""
    for path in tool.fresh:
        shutil.rmtree(path, ignore_errors=True)
    return run_measured(tool.cold, tool.env)[0]


def noop_index(tool: Tool, _pair: int) -> Sample:
    """A re-index with nothing changed."""
    return run_measured(tool.noop, tool.env)[0]


def search_rounds(
    tools: list[Tool], rounds: int, asked: list[dict]
) -> tuple[dict[str, list[Sample]], dict[str, int]]:
    """Every query as a pair in each round; the samples and, per tool, queries whose page
    was in its top 10 (counted in the first round)."""
    for tool in tools:  # one untimed search each: the interpreters' files are read once
        run_measured(tool.search_cmd(asked[0]["query"]), tool.env)
    samples: dict[str, list[Sample]] = {t.name: [] for t in tools}
    found = {t.name: 0 for t in tools}
    pair = 0
    for round_ in range(rounds):
        for q in asked:
            for tool in ordered(tools, pair):
                sample, stdout = run_measured(tool.search_cmd(q["query"]), tool.env)
                samples[tool.name].append(sample)
                hits = [note_id(m) for m in HIT_PATH.findall(stdout)]
                if round_ == 0 and set(hits) & set(q["relevant"]):
                    found[tool.name] += 1
            pair += 1
    return samples, found


def medians(samples: list[Sample]) -> Sample:
    """The median of each field."""
    return Sample(
        median([s.wall for s in samples]),
        median([s.cpu for s in samples]),
        median([s.rss_mib for s in samples]),
    )


def load() -> list[float]:
    """The 1, 5 and 15 minute load averages, rounded."""
    return [round(x, 2) for x in os.getloadavg()]


def version(cmd: list[str], env: dict[str, str]) -> str:
    """The first line a ``--version`` prints."""
    done = subprocess.run([*cmd, "--version"], env=env, capture_output=True, text=True)
    return (done.stdout.strip() or done.stderr.strip()).splitlines()[0]


def table(results: dict[str, dict]) -> str:
    """The markdown table of medians and ratios."""
    lines = [
        "| measure | metric | vaultmem | QMD | vaultmem / QMD |",
        "|---|---|---:|---:|---:|",
    ]
    metrics = (("wall", "wall"), ("cpu", "CPU (user+sys)"), ("rss_mib", "peak RSS"))
    for measure, got in results.items():
        vm, qm = got["median"]["vaultmem"], got["median"]["QMD"]
        for key, label in metrics:
            a, b = vm[key], qm[key]
            text = (
                (f"{a:.0f} MiB", f"{b:.0f} MiB")
                if key == "rss_mib"
                else (_seconds(a, measure), _seconds(b, measure))
            )
            lines.append(f"| {got['label']} | {label} | {text[0]} | {text[1]} | {a / b:.2f}× |")
    return "\n".join(lines)


def _seconds(value: float, measure: str) -> str:
    return f"{value * 1000:.0f} ms" if measure == "search" else f"{value:.2f} s"


def parse_args() -> argparse.Namespace:
    """The command line; ``measures`` comes back as a checked list."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--install-qmd", type=Path, metavar="PREFIX")
    where.add_argument("--qmd", type=Path, metavar="PATH")
    ap.add_argument("--qmd-version", default=QMD_VERSION)
    ap.add_argument("--corpus", choices=("dev", "scale"), default="dev")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--measures", default=",".join(MEASURES))
    ap.add_argument("--json", type=Path, metavar="OUT")
    ap.add_argument("--keep", action="store_true", help="keep the temp vault copies")
    args = ap.parse_args()
    args.measures = [m.strip() for m in args.measures.split(",") if m.strip()]
    unknown = set(args.measures) - set(MEASURES)
    if unknown:
        ap.error(f"--measures: unknown {sorted(unknown)}; choose from {','.join(MEASURES)}")
    return args


def describe(tools: list[Tool], qmd: Path, bun_dir: Path | None, corpus: str) -> dict:
    """What was run where: the corpus, the machine, the versions, the load at the start."""
    notes, size = prime_page_cache(tools[0].vault)
    prime_page_cache(tools[1].vault)
    qmd_env = tools[1].env
    bun = [str(bun_dir / "bun")] if bun_dir else ["bun"]
    return {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "corpus": corpus,
        "notes": notes,
        "bytes": size,
        "cpus": os.cpu_count(),
        "versions": {
            "vaultmem": version(vaultmem_command(), tools[0].env),
            "qmd": version([str(qmd)], qmd_env),
            "bun": version(bun, qmd_env),
            "node": version(["node"], qmd_env),
            "python": sys.version.split()[0],
        },
        "load_start": load(),
    }


def run_measure(measure: str, tools: list[Tool], pairs: int, n_queries: int) -> dict:
    """One measure's pairs: its label, the load before and after, medians and samples
    (and, for search, how many queries found their page)."""
    before = load()
    extra: dict = {}
    if measure == "cold":
        samples = run_pairs(tools, pairs, cold_index)
        label = "cold index (keyword only)"
    elif measure == "noop":
        samples = run_pairs(tools, pairs, noop_index)
        label = "no-op re-index"
    else:
        every = queries("dev")
        asked = every[:: max(1, len(every) // n_queries)][:n_queries]
        samples, found = search_rounds(tools, pairs, asked)
        label = f"`search`, one process per query ({len(asked)} queries)"
        extra = {"queries": len(asked), "found_in_top10": found}
    after = load()
    print(f"{label}: {len(samples['vaultmem'])} runs each, load {before} → {after}", flush=True)
    return {
        "label": label,
        "runs": len(samples["vaultmem"]),
        "load_before": before,
        "load_after": after,
        **extra,
        "median": {name: asdict(medians(s)) for name, s in samples.items()},
        "samples": {name: [asdict(x) for x in s] for name, s in samples.items()},
    }


def main() -> None:
    """Install or find QMD, run the chosen measures, print and save the results."""
    args = parse_args()
    if args.install_qmd:
        qmd, bun_dir = install_qmd(args.install_qmd, args.qmd_version)
    else:
        qmd, bun_dir = args.qmd.resolve(), None
    source = make_vault(args.corpus)
    work = Path(tempfile.mkdtemp(prefix="bench-vs-qmd-"))
    try:
        tools = make_tools(source, work, qmd, bun_dir)
        info = describe(tools, qmd, bun_dir, args.corpus)
        info["pairs"] = args.pairs
        print(
            f"{args.corpus} vault: {info['notes']} notes, {info['bytes'] / 1e6:.1f} MB; "
            f"cpus {info['cpus']}"
        )
        print(f"versions: {info['versions']}")
        print(f"load average at start: {info['load_start']}", flush=True)
        if "cold" not in args.measures:
            run_pairs(tools, 1, cold_index)  # noop and search need an index
        results = {
            m: run_measure(m, tools, args.pairs, args.queries)
            for m in MEASURES
            if m in args.measures
        }
        info["load_end"] = load()
        print()
        print(table(results))
        print()
        if "search" in results:
            found = results["search"]["found_in_top10"]
            print(
                f"page in the top 10 ({results['search']['queries']} queries): "
                + ", ".join(f"{name} {n}" for name, n in found.items())
            )
        print(f"load average at end: {info['load_end']}")
        if args.json:
            args.json.write_text(json.dumps({**info, "results": results}, indent=2) + "\n")
    finally:
        if args.keep:
            print(f"kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
