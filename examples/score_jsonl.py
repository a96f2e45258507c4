#!/usr/bin/env python3
"""Score a JSONL file of Lean statements or proofs on one machine.

    python3 examples/score_jsonl.py IN.jsonl OUT.jsonl                  # starts a local daemon
    python3 examples/score_jsonl.py IN.jsonl OUT.jsonl --socket /tmp/lp.sock
    python3 examples/score_jsonl.py PROOFS.jsonl OUT.jsonl --method verify

Input lines (as `leanpool batch`): {"id": ..., "text": ...} or
{"id": ..., "header": ..., "statement": ...} for check/normalize/opt;
{"id": ..., "header"?: ..., "statement": ..., "proof": ...} for verify.
Output: one line per input, in input order: {"id", "status", "result"} or
{"id", "error": {"code", "message"}}. Prints a summary (counts per status).
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from typing import Any, Dict, List

import leanpool


def params_of(method: str, row: Dict[str, Any]) -> Dict[str, Any]:
    """The request params for one input line."""
    if method == "verify":
        return {k: row[k] for k in ("header", "statement", "proof") if k in row}
    text = row["text"] if "text" in row else row.get("header", "") + "\n" + row["statement"]
    return {"text": text}


def status_of(result: Any) -> str:
    """``status`` of a check/verify result, ``check.status`` of normalize/opt."""
    return getattr(result, "status", None) or result.check.status


def score(client: leanpool.Client, method: str, rows: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """One output line per row, in order (per-item errors in place)."""
    results = client.map(method, [params_of(method, r) for r in rows], progress=True, return_exceptions=True)
    out = []
    for row, r in zip(rows, results):
        if isinstance(r, leanpool.LeanpoolError):
            out.append({"id": row.get("id"), "error": {"code": r.code, "message": r.message}})
        else:
            out.append({"id": row.get("id"), "status": status_of(r), "result": r.to_dict()})
    return out


def main(argv: Any = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--method", default="check", choices=["check", "verify", "normalize", "opt"])
    ap.add_argument("--socket", help="a running daemon (default: start one for this run)")
    ap.add_argument("--lean", help="setup's backend.json or its directory (default: the daemon's lookup)")
    a = ap.parse_args(argv)
    with open(a.input, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    if a.socket:
        with leanpool.Client(a.socket) as c:
            out = score(c, a.method, rows)
    else:
        with leanpool.Daemon(lean=a.lean) as d, d.client() as c:
            out = score(c, a.method, rows)
    with open(a.output, "w", encoding="utf-8") as f:
        for line in out:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
    counts = collections.Counter(o.get("status", "error answer") for o in out)
    print(f"{len(out)} scored: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
