"""A resumable queue of long benchmark commands (training runs), a few at a time.

    python bench/run_queue.py runs/queue/jobs.txt --workers 2

The jobs file holds one bash command a line, run in order from the repository root, each
under ``nice -n 19`` with its output in ``<jobs>.logs/<line>.log``. A line may start with
``after:PATH`` (the job waits until PATH exists, e.g. a file another lane touches when a grid is
complete; the queue takes later jobs meanwhile) and ``#`` starts a comment. The file is read
again before each pick, so lines appended while the queue runs are taken. What finished is
recorded in ``<jobs>.state`` (one JSON line per job: line, command, return code, start, end);
a queue started again skips every job recorded with return code 0 and retries the others. With
``--workers-file F`` the number of jobs at once is read from F before each pick (so it can change
while the queue runs: another lane finishing hands its core back).

The commands should themselves be resumable (bench/compare.py and bench/oracle.py skip what
their ``--out`` already records), so a job stopped mid-way loses only its current run.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def parse_jobs(text: str) -> list[tuple[int, str | None, str]]:
    """(line number, the file it waits for or None, command) of every job line."""
    jobs = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        after = None
        if line.startswith("after:"):
            after, _, line = line[len("after:"):].partition(" ")
            line = line.strip()
        jobs.append((number, after, line))
    return jobs


def finished(state: Path) -> dict[tuple[int, str], int]:
    """(line, command) -> return code of every job the state file records (the last one wins)."""
    if not state.exists():
        return {}
    rows = [json.loads(line) for line in state.read_text().splitlines() if line.strip()]
    return {(r["line"], r["command"]): r["rc"] for r in rows}


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("jobs")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--workers-file", help="read the number of jobs at once from this file before each pick")
    p.add_argument("--poll", type=float, default=30.0, help="seconds between looks at the queue")
    args = p.parse_args()
    jobs_file = Path(args.jobs)
    state = jobs_file.with_name(jobs_file.name + ".state")
    logs = jobs_file.with_name(jobs_file.name + ".logs")
    logs.mkdir(parents=True, exist_ok=True)
    done = {key for key, rc in finished(state).items() if rc == 0}
    running: dict[tuple[int, str], tuple[subprocess.Popen[Any], str]] = {}
    tried: set[tuple[int, str]] = set()
    while True:
        for key, (proc, started) in list(running.items()):
            if proc.poll() is None:
                continue
            del running[key]
            with state.open("a") as fh:
                fh.write(json.dumps({"line": key[0], "command": key[1], "rc": proc.returncode,
                                     "started": started, "ended": _now()}) + "\n")
            if proc.returncode == 0:
                done.add(key)
            print(f"{_now()} line {key[0]} rc {proc.returncode}: {key[1][:120]}", flush=True)
        workers = args.workers
        if args.workers_file and Path(args.workers_file).exists():
            workers = int(Path(args.workers_file).read_text().strip() or args.workers)
        pending = [(n, after, cmd) for n, after, cmd in parse_jobs(jobs_file.read_text())
                   if (n, cmd) not in done and (n, cmd) not in running and (n, cmd) not in tried]
        for n, after, cmd in pending:
            if len(running) >= workers:
                break
            if after is not None and not (REPO / after).exists():
                continue
            started = _now()
            log = (logs / f"{n}.log").open("a")
            log.write(f"# {started} {cmd}\n")
            log.flush()
            proc = subprocess.Popen(["nice", "-n", "19", "bash", "-c", cmd], cwd=REPO, stdout=log,
                                    stderr=subprocess.STDOUT, env=os.environ.copy())
            running[(n, cmd)] = (proc, started)
            tried.add((n, cmd))  # a failed job is retried only when the queue starts again
            print(f"{started} line {n} started: {shlex.quote(cmd)[:120]}", flush=True)
        if not running and not [j for j in pending if j[1] is None or (REPO / j[1]).exists()]:
            waiting = [j for j in pending if j[1] is not None]
            if not waiting:
                print(f"{_now()} queue empty", flush=True)
                return
        time.sleep(args.poll)


if __name__ == "__main__":
    sys.exit(main())
