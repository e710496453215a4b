"""S3 requests a build makes, counted by API operation, against a local S3 API server (moto).

Counts do not depend on the machine's load (timings against an in-process moto server would
measure moto more than `prior`). Two builds in one store: a fresh build, then the same build
again (a no-op). In-process (`--workers 0`), so every request is counted here.

    .venv/bin/python bench/s3_requests.py [--dataset sick --split test --limit 40 --partition-size 8 --features sdoi,dep]

Needs the `test` extra (moto[server], s3fs).
"""

from __future__ import annotations

import argparse
import collections
import logging
import os
import tempfile
import uuid
from typing import Any


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="sick")
    parser.add_argument("--split", default="test")
    parser.add_argument("--limit", type=int, default=40)
    parser.add_argument("--partition-size", type=int, default=8)
    parser.add_argument("--features", default="sdoi,dep")
    args = parser.parse_args()

    import boto3
    import s3fs
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    os.environ.setdefault("PRIOR_HOME", tempfile.mkdtemp(prefix="prior-bench-"))
    os.environ["PRIOR_NO_PROGRESS"] = "1"
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    options = {"endpoint_url": endpoint, "key": "bench", "secret": "bench"}
    bucket = f"bench-{uuid.uuid4().hex[:8]}"
    boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="bench", aws_secret_access_key="bench",
                 region_name="us-east-1").create_bucket(Bucket=bucket)

    counts: collections.Counter[str] = collections.Counter()
    call = s3fs.S3FileSystem._call_s3

    async def counted(self: Any, method: str, *a: Any, **k: Any) -> Any:
        counts[method] += 1
        return await call(self, method, *a, **k)

    s3fs.S3FileSystem._call_s3 = counted  # type: ignore[method-assign]
    from prior.featurestore import StoreRef
    from prior.pipeline.build import build
    from prior.pipeline.build_options import BuildOptions, RunOptions

    try:
        for run in ("fresh build", "no-op rebuild"):
            counts.clear()
            build(BuildOptions(dataset=args.dataset, splits=(args.split,), features=tuple(args.features.split(",")),
                               parser="spacy", limit=args.limit),
                  RunOptions(store=StoreRef(f"s3://{bucket}/store", options), workers=0,
                             partition_size=args.partition_size, progress=False))
            detail = ", ".join(f"{op} {n}" for op, n in counts.most_common())
            print(f"{run}: {sum(counts.values())} requests ({detail})")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
