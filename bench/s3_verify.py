"""`prior store verify` of a store on moto's S3 API server, timed, with a round trip per request.

    python bench/s3_verify.py --store /tmp/S500w --latency-ms 20
    python bench/s3_verify.py --table LINES.jsonl     # the table of such lines, each with label and commit

Starts moto's server as its own process, copies ``--store`` into a bucket and times
`verify_store` there (the tree, every catalog record, every committed file's size and checksum,
each split against its manifest). moto on the loopback answers at once: ``--latency-ms N`` adds
N ms to each request the checks make (`StoreFS.exists`, ``is_file``, ``size``, ``open``, and
whole files and ranges), in the thread that makes it, as a network round trip would. Prints one
JSON line: seconds, segments, files, whether the store is whole. Needs the `test` extra
(moto[server], s3fs). Run it from the checkout whose code it should time (this script puts its
own checkout first on the path).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from loader import _bucket, moto_server  # noqa: E402  (bench/ is the script's directory)

#: the `StoreFS` methods that make a request, each delayed by ``--latency-ms``
REQUESTS = ("exists", "is_file", "size", "open", "read_bytes", "read_range", "read_ranges")


def with_latency(seconds: float) -> None:
    """Each of `REQUESTS` waits ``seconds`` before it runs (in its own thread)."""
    from prior.featurestore.fs import StoreFS

    for name in REQUESTS:
        real = getattr(StoreFS, name)

        def delayed(self: Any, *args: Any, _real: Any = real, **kwargs: Any) -> Any:
            time.sleep(seconds)
            return _real(self, *args, **kwargs)

        setattr(StoreFS, name, delayed)


def table(path: str) -> None:
    """The Markdown table of lines this script printed, each with a ``label`` and ``commit``."""
    print("| code | ms a request | verify s | segments | files | whole |")
    print("|---|---|---|---|---|---|")
    for line in Path(path).read_text().splitlines():
        if line.strip():
            d = json.loads(line)
            print(f"| {d['label']} ({d['commit']}) | {d['latency_ms']:g} | {d['verify_s']:.1f} | {d['segments']:,} "
                  f"| {d['files']:,} | {'yes' if d['ok'] else 'no'} |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--store")
    p.add_argument("--latency-ms", type=float, default=0.0)
    p.add_argument("--table", metavar="LINES.jsonl", help="print the table of such lines (with label, commit)")
    args = p.parse_args()
    if args.table:
        table(args.table)
        return
    if not args.store:
        p.error("--store is required")
    from prior.featurestore import StoreRef, open_store
    from prior.featurestore.maintenance import verify_store

    with moto_server() as endpoint:
        url, options = _bucket(args.store, endpoint)
        if args.latency_ms:
            with_latency(args.latency_ms / 1000)
        t0 = time.perf_counter()
        report = verify_store(open_store(StoreRef(url, options), create=False))
        seconds = time.perf_counter() - t0
    print(json.dumps({"store": args.store, "latency_ms": args.latency_ms, "verify_s": round(seconds, 2),
                      "segments": report.checked_segments, "files": report.checked_files, "ok": report.ok}))


if __name__ == "__main__":
    main()
