"""Paired benchmark: did the start-up tricks `prior` used to apply pay for themselves?

Until this benchmark's commit, every `prior` process and a build's local workers were tuned at
start-up (`prior/pipeline/startup.py`, switched by ``PRIOR_STARTUP_TUNING``): a meta-path
finder that hid pandas while pyarrow looked for it (``no-pandas``), spaCy imported with torch
hidden (``spacy-without-torch``), ``gc.freeze`` before the workers closed (``gc-freeze``), glibc's
malloc defaults kept in the workers (``malloc``), and a global patch of typer's help. They are
gone from the default path; they come back only if this benchmark, run on an idle machine,
shows a gain of at least 10 % on ``prior --help`` or ``prior build``.

It runs the same commands with two checkouts of `prior`, each as its own ``python -m
prior.cli.main`` process with ``PYTHONPATH`` set to the checkout:

- ``--before DIR``: a checkout of the commit before the tricks were removed (``git worktree add
  DIR 3b51673``), run in several configurations: ``all`` (its default), ``none``, and ``-TRICK``
  (all but one);
- ``--after DIR``: this code (default: this checkout), no tricks.

Measured per configuration: ``prior --help``; a cold ``prior build`` of the bundled SICK slice
(``PRIOR_DATA_DIR`` unset: 200/100/200 pairs; default parser and features, 2 workers) into a
fresh store; and a no-op rebuild of that store. Configurations alternate within each round and
the order reverses every other round (A B C, C B A, …), so a drift of the machine's load falls
on all alike. Reported: median wall seconds and median CPU seconds (this process's children:
the command and its workers) per configuration, and each configuration's paired ratio to
``after`` (the median over rounds of its time / after's time in the same round).

    git worktree add /tmp/prior-before 3b51673
    python bench/startup.py --before /tmp/prior-before --rounds 10              # all three commands
    python bench/startup.py --before /tmp/prior-before --rounds 20 --what help  # help only

Results go to bench/out/startup-<date>.json and are printed as a table.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TRICKS = ("malloc", "gc-freeze", "no-pandas", "spacy-without-torch")  # PRIOR_STARTUP_TUNING's values before
SWITCH = "PRIOR_STARTUP_TUNING"
WHAT = ("help", "build", "noop")


def configurations(before: Path | None, after: Path) -> dict[str, tuple[Path, str | None]]:
    """Label → (checkout, value of ``PRIOR_STARTUP_TUNING`` or None)."""
    out: dict[str, tuple[Path, str | None]] = {"after": (after, None)}
    if before is not None:
        out |= {"before:all": (before, "all"), "before:none": (before, "none")}
        out |= {f"before:-{t}": (before, ",".join(x for x in TRICKS if x != t)) for t in TRICKS}
    return out


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds (user + system of the command and the processes it waited for)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def imports_from(checkout: Path) -> None:
    """Fail unless ``prior`` imports from ``checkout`` under the environment the runs get (a
    ``python -m`` child puts its working directory first on ``sys.path``, and an editable install
    answers for any checkout that is not on the path: both would time this checkout twice)."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    found = subprocess.run([sys.executable, "-P", "-c", "import prior; print(prior.__file__)"], env=env,
                           capture_output=True, text=True, check=True).stdout.strip()
    if not Path(found).resolve().is_relative_to(checkout.resolve()):
        raise SystemExit(f"prior imports from {found}, not from the checkout {checkout}")


def run_round(configs: dict[str, tuple[Path, str | None]], order: list[str], what: tuple[str, ...],
              build_args: list[str], home: Path) -> dict[str, dict[str, tuple[float, float]]]:
    """One round: every command of ``what`` under every configuration, in ``order``."""
    out: dict[str, dict[str, tuple[float, float]]] = {}
    for label in order:
        checkout, value = configs[label]
        env = {k: v for k, v in os.environ.items() if k not in (SWITCH, "PRIOR_DATA_DIR")}
        env |= {"PYTHONPATH": str(checkout), "PRIOR_HOME": str(home), "PRIOR_NO_PROGRESS": "1"}
        if value is not None:
            env[SWITCH] = value
        prior = [sys.executable, "-P", "-m", "prior.cli.main"]  # -P: the checkout, not the working directory
        store = home / "store"
        out[label] = {}
        if "help" in what:
            out[label]["help"] = timed([*prior, "--help"], env)
        if "build" in what or "noop" in what:
            shutil.rmtree(store, ignore_errors=True)
            built = timed([*prior, "build", *build_args, "--store", str(store)], env)
            if "build" in what:
                out[label]["build"] = built
            if "noop" in what:
                out[label]["noop"] = timed([*prior, "build", *build_args, "--store", str(store)], env)
        print(f"{label:28} " + "  ".join(f"{k} {w:6.2f} s (cpu {c:6.2f})" for k, (w, c) in out[label].items()),
              flush=True)
    return out


def summary(rounds: list[dict[str, dict[str, tuple[float, float]]]], labels: list[str],
            what: tuple[str, ...]) -> list[dict[str, object]]:
    rows = []
    for label in labels:
        row: dict[str, object] = {"configuration": label}
        for cmd in what:
            walls = [r[label][cmd][0] for r in rounds]
            cpus = [r[label][cmd][1] for r in rounds]
            ratios = [r[label][cmd][0] / r["after"][cmd][0] for r in rounds]
            row[cmd] = {"walls_s": [round(w, 3) for w in walls], "cpus_s": [round(c, 3) for c in cpus],
                        "median_wall_s": round(statistics.median(walls), 3),
                        "median_cpu_s": round(statistics.median(cpus), 3),
                        "paired_ratio_to_after": round(statistics.median(ratios), 3)}
        rows.append(row)
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--before", type=Path, help="a checkout of the commit with the tricks (e.g. 3b51673)")
    p.add_argument("--after", type=Path, default=REPO, help="a checkout without them (default: this one)")
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--what", default=",".join(WHAT), help=f"comma-separated, of {', '.join(WHAT)}")
    p.add_argument("--only", help="comma-separated configuration labels (default: all of them)")
    p.add_argument("--dataset", default="sick")
    p.add_argument("--build-args", default="", help="more `prior build` arguments (e.g. '--limit 5 --parser spacy')")
    p.add_argument("--out", type=Path, default=REPO / "bench" / "out")
    args = p.parse_args()
    what = tuple(w for w in args.what.split(",") if w)
    if unknown := set(what) - set(WHAT):
        p.error(f"unknown --what {sorted(unknown)}")
    configs = configurations(args.before, args.after)
    if args.only:
        configs = {k: v for k, v in configs.items() if k in args.only.split(",") or k == "after"}
    labels = list(configs)
    for checkout, _ in configs.values():
        imports_from(checkout)
    build_args = ["--dataset", args.dataset, *args.build_args.split()]
    home = Path(tempfile.mkdtemp(prefix="prior-startup-"))
    try:
        if "build" in what or "noop" in what:  # one-time caches (WordNet's hierarchy table) made once, untimed
            run_round({"after": configs["after"]}, ["after"], ("build",), build_args, home / "warm-up")
        rounds = [run_round(configs, labels if i % 2 == 0 else labels[::-1], what, build_args, home / "runs")
                  for i in range(args.rounds)]
    finally:
        shutil.rmtree(home, ignore_errors=True)
    rows = summary(rounds, labels, what)
    print(f"\n{'configuration':28}" + "".join(f" {cmd + ' wall/cpu (ratio)':>30}" for cmd in what))
    for row in rows:
        cells = []
        for cmd in what:
            r = row[cmd]
            assert isinstance(r, dict)
            cells.append(f"{r['median_wall_s']:8.2f}/{r['median_cpu_s']:7.2f} ({r['paired_ratio_to_after']:.3f})")
        print(f"{row['configuration']:28}" + "".join(f" {c:>30}" for c in cells))
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"startup-{datetime.now(UTC):%Y%m%d-%H%M%S}.json"
    out.write_text(json.dumps({"date": datetime.now(UTC).isoformat(timespec="seconds"), "rounds": args.rounds,
                               "what": what, "build_args": build_args, "before": str(args.before),
                               "after": str(args.after), "load_avg_start": os.getloadavg()[0], "rows": rows},
                              indent=2) + "\n")
    print(f"\n{out}")


if __name__ == "__main__":
    main()
