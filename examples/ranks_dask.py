#!/usr/bin/env python3
"""`nsys-lens ranks` over hundreds of exports, the map run on a Dask cluster.

Each export (one per rank or node, `nsys profile -o trace_%q{RANK}` then `nsys export`) is
summarized by a Dask task running the nsys-lens CLI where the file lies:

    nsys-lens ranks --summary EXPORT -o SUMMARY.json     (the map: one file's collectives)

and the summaries are merged in this process:

    nsys-lens ranks --merge SUMMARY.json... --json       (the reduce: every rank, one answer)

which is the JSON `nsys-lens ranks EXPORT... --json` gives over the same exports in the same
order (docs/cli.md, "Many files: map and reduce"). A summary is small (a few numbers per
collective kernel), so it travels back to this process as the task's result: the workers need
not share a file system with it, only see the exports under the paths given.

    python examples/ranks_dask.py trace_r*.sqlite -o ranks.json           # a LocalCluster
    python examples/ranks_dask.py --workers 8 trace_r*.sqlite
    python examples/ranks_dask.py --scheduler tcp://head:8786 /shared/trace_r*.sqlite

Needs `dask[distributed]` (pip) and `nsys-lens` on PATH of the workers (or --nsys-lens PATH).
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def summarize(nsys_lens, export, summaries=None, index=0):
    """The map, on a worker: `nsys-lens ranks --summary EXPORT -o FILE`; returns the summary's
    text. Written into `summaries` (a folder the worker sees) when given, else a temporary file;
    named by the export's place and name."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(summaries or tmp) / f"{index:06d}_{Path(export).name}.ranks.json"
        done = subprocess.run(
            [nsys_lens, "ranks", "--summary", export, "-o", str(out)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise RuntimeError(f"nsys-lens ranks --summary {export}: {done.stderr.strip()}")
        return out.read_text(encoding="utf-8")


def merge(nsys_lens, summaries, output=None):
    """The reduce, here: `nsys-lens ranks --merge SUMMARY... --json [-o OUTPUT]`; returns the JSON
    (None when written to `output`)."""
    args = [nsys_lens, "ranks", "--merge", *map(str, summaries), "--json"]
    if output:
        args += ["-o", str(output)]
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"nsys-lens ranks --merge: {done.stderr.strip()}")
    return None if output else done.stdout


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("exports", nargs="+", help="SQLite exports, one per rank or node, in order")
    p.add_argument("--scheduler", help="a Dask scheduler's address (default: a LocalCluster)")
    p.add_argument("--workers", type=int, default=2, help="LocalCluster workers (default 2)")
    p.add_argument("--nsys-lens", default=os.environ.get("NSYS_LENS", "nsys-lens"),
                   help="the nsys-lens binary on the workers (default: $NSYS_LENS or PATH)")
    p.add_argument("--summaries", help="keep the summaries in this folder (shared by the workers)")
    p.add_argument("-o", "--output", help="write the merged JSON here instead of stdout")
    args = p.parse_args()

    from dask.distributed import Client, LocalCluster

    binary = args.nsys_lens
    if args.scheduler is None:
        # Workers are this machine's processes: resolve the binary once for them.
        binary = shutil.which(binary) or binary
        cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1,
                               dashboard_address=None)
        client = Client(cluster)
    else:
        cluster, client = None, Client(args.scheduler)
    try:
        # One task per export, pure=False: a file may change between runs under the same path.
        n = len(args.exports)
        futures = client.map(summarize, [binary] * n, args.exports, [args.summaries] * n,
                             range(n), pure=False)
        texts = client.gather(futures)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()

    # The reduce runs here, over the summaries in the exports' order.
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i, text in enumerate(texts):
            path = Path(tmp) / f"{i:06d}.ranks.json"
            path.write_text(text, encoding="utf-8")
            paths.append(path)
        out = merge(shutil.which(args.nsys_lens) or args.nsys_lens, paths, args.output)
    if out is not None:
        sys.stdout.write(out)


if __name__ == "__main__":
    main()
