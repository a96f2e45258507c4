#!/usr/bin/env python3
"""Score a JSONL file on a Ray cluster: one leanpool daemon per node.

    ray start --head ...; ray start --address ... (on each node)
    python3 examples/score_jsonl_ray.py IN.jsonl OUT.jsonl --lean /path/to/leanpool/.lean-wasm
    python3 examples/score_jsonl_ray.py IN.jsonl OUT.jsonl --data     # through Ray Data (map_batches)

Input and output lines as examples/score_jsonl.py. Without `--data`, the
requests are routed by import set (a node keeps warm workers of the import
sets it serves), spill over to other nodes under load, and a node lost
mid-run has its requests re-sent elsewhere. Needs `pip install .[ray]` on
every node, and setup's Lean at the same path on each.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Dict, List

import ray

from leanpool.ray import LeanpoolCluster, score_jsonl

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from score_jsonl import params_of, status_of  # noqa: E402  (same input format)


def score(cluster: LeanpoolCluster, method: str, path: str, data: bool = False) -> List[Dict[str, Any]]:
    """One output line per input line of ``path``, in input order."""
    if data:  # Ray Data: each batch on the daemon of the node it runs on
        ray.data.DataContext.get_current().execution_options.preserve_order = True  # input order out
        rows = score_jsonl(path, method).take_all()
        return [{"id": r.get("id"), "status": r["status"], "result": json.loads(r["result"])} if r["error"] is None
                else {"id": r.get("id"), "error": json.loads(r["error"])} for r in rows]
    with open(path, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    results = cluster.map(method, [params_of(method, r) for r in rows], progress=True, return_exceptions=True)
    return [{"id": row.get("id"), "status": status_of(r), "result": r.to_dict()} if not isinstance(r, Exception)
            else {"id": row.get("id"), "error": {"code": getattr(r, "code", None), "message": str(r)}}
            for row, r in zip(rows, results)]


def main(argv: Any = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--method", default="check", choices=["check", "verify", "normalize", "opt"])
    ap.add_argument("--lean", help="setup's backend.json or its directory, the same path on every node")
    ap.add_argument("--address", default=None, help="the Ray cluster (default: RAY_ADDRESS, or a local one)")
    ap.add_argument("--data", action="store_true", help="score through Ray Data's map_batches")
    ap.add_argument("--max-workers", type=int, default=None, help="Lean workers per node (default: the daemon's)")
    a = ap.parse_args(argv)
    ray.init(address=a.address)
    config = {"pool": {"max_workers": a.max_workers}} if a.max_workers else None
    with LeanpoolCluster(config, lean=a.lean) as cluster:
        out = score(cluster, a.method, a.input, a.data)
        if not a.data:
            print(f"served per node: {dict(cluster.last_served)}", file=sys.stderr)
    with open(a.output, "w", encoding="utf-8") as f:
        for line in out:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
    print(f"{len(out)} scored", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
