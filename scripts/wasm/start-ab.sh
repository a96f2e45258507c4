#!/usr/bin/env bash
# Interleaved A/B runs of the WASM worker's start-up (issue 12 item 4).
#
#   scripts/wasm/start-ab.sh ROUNDS 'NAME=NODE FLAGS' ['NAME=NODE FLAGS' ...] > results.jsonl
#   e.g. scripts/wasm/start-ab.sh 3 'size=--optimize-for-size' 'none=' 'semi1=--max-semi-space-size=1'
#
# Each variant is .lean-wasm/backend.json with its node flags replaced by
# the given ones; each round runs every variant once (A B C A B C ...) so a
# changing machine load hits them alike. One JSON line per run: the smoke
# test's figures (ready_s, ready_cpu_s = CPU seconds at ready, ready_rss_mb,
# first_ms/first_cpu_s = the first edit, like the pool's warm-up body,
# rss_mb_after, ...) with the variant and the load average before/after.
# LEAN_SLOT=CMD runs each smoke test under CMD (e.g. a machine-wide lock).
# SMOKE_N=N edits per run (default 4; 40 to compare RSS after 40 edits).
# 'NAME=@FILE' runs the backend.json FILE as it is (e.g. another patched glue).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
node=$root/.lean-wasm/node/bin/node
rounds=$1; shift
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for spec in "$@"; do
  name=${spec%%=*}; flags=${spec#*=}
  if [[ $flags == @* ]]; then cp "${flags#@}" "$tmp/$name.json"; continue; fi
  "$node" -e '
    const fs = require("fs");
    const [src, dst, flags] = process.argv.slice(1);
    const b = JSON.parse(fs.readFileSync(src, "utf8"));
    const glue = b.args.findIndex((a) => a.endsWith(".js"));
    b.args = [...flags.split(" ").filter(Boolean), ...b.args.slice(glue)];
    fs.writeFileSync(dst, JSON.stringify(b));
  ' "$root/.lean-wasm/backend.json" "$tmp/$name.json" "$flags"
done
for _ in $(seq "$rounds"); do
  for spec in "$@"; do
    name=${spec%%=*}
    load=$(cut -d' ' -f1 /proc/loadavg)
    out=$(${LEAN_SLOT:-} "$node" "$root/scripts/wasm/smoke.mjs" --n "${SMOKE_N:-4}" --json --backend "$tmp/$name.json" 2>/dev/null | tail -1) || true
    echo "{\"variant\":\"$name\",\"flags\":\"${spec#*=}\",\"load\":$load,\"load_end\":$(cut -d' ' -f1 /proc/loadavg),\"result\":${out:-null}}"
  done
done
