// Unit tests of the glue patch tool, the shim's symbol cache and the smoke
// client's frame reader. Cheap (no Lean): `node --test scripts/wasm/test/`.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import vm from "node:vm";
import { PATCHES } from "../patches.mjs";
import { PatchError, applyPatches, countOccurrences, sha256, verifyPatched } from "../patch-glue.mjs";
import { FrameReader } from "../smoke.mjs";
import { slimExports } from "../slim-exports.mjs";

/** A miniature generated export block: `n` exports, of which `_used` is read by the glue. */
function fakeExports(n) {
  const names = ["_main", "_used", "__indirect_function_table"];
  for (let i = 0; i < n; i++) names.push(`_l_f${i}`);
  const stmts = names.map((x) =>
    x === "_main" ? '_main=Module["_main"]=wasmExports["__main_argc_argv"]'
    : x === "__indirect_function_table" ? `${x}=Module["${x}"]=wasmTable=wasmExports["${x.slice(1)}"]`
    : `${x}=Module["${x}"]=wasmExports["${x.slice(1)}"]${x === "_l_f7" ? ".value" : ""}`);
  return `;var ${names.join(",")},wasmTable;function assignWasmExports(wasmExports){${stmts.join(";")}}var wasmImports;`;
}

/** A miniature "glue" holding every patch target exactly as often as expected. */
function fakeGlue() {
  let s = "var Module={};_used(1);";
  for (const p of PATCHES) {
    if (p.transform) continue;
    for (let i = 0; i < p.count; i++) s += `/*${p.name}*/${p.find}/*end*/;`;
  }
  return s + fakeExports(2000) + "run();";
}

test("apply then verify succeeds and replaces every target", () => {
  const pristine = fakeGlue();
  const out = applyPatches(pristine);
  verifyPatched(out, PATCHES, sha256(pristine));
  for (const p of PATCHES) if (!p.transform) assert.equal(countOccurrences(out, p.replace), p.count, p.name);
  assert.equal(countOccurrences(out, "newSymIndex=Object.keys(lib.exports).indexOf(symbol);"), 0);
});

test("a missing target fails with the patch's name", () => {
  const victim = PATCHES.find((p) => p.name === "stdout-raw-write");
  const glue = fakeGlue().replace(victim.find, "");
  assert.throws(() => applyPatches(glue), (e) => e instanceof PatchError && e.patch === "stdout-raw-write" && /found 0/.test(e.message));
});

test("a target found more often than expected fails with the patch's name", () => {
  const victim = PATCHES.find((p) => p.name === "dlsym-index-map");
  const glue = fakeGlue() + victim.find;
  assert.throws(() => applyPatches(glue), (e) => e.patch === "dlsym-index-map" && /found 2/.test(e.message));
});

test("already patched input is refused by apply", () => {
  assert.throws(() => applyPatches(applyPatches(fakeGlue())), (e) => e.patch === "(input)");
});

test("verify rejects a pristine file, a reverted patch, another source and another patch set", () => {
  const pristine = fakeGlue();
  const out = applyPatches(pristine);
  assert.throws(() => verifyPatched(pristine), (e) => e.patch === "(header)");
  const p = PATCHES.find((x) => x.name === "stdin-short-raw-read");
  assert.throws(() => verifyPatched(out.replace(p.replace, p.find)), (e) => e.patch === "stdin-short-raw-read");
  assert.throws(() => verifyPatched(out, PATCHES, sha256("other")), (e) => e.patch === "(header)");
  const changed = PATCHES.map((x) => (x.name === "shim" ? { ...x, replace: x.replace + " " } : x));
  assert.throws(() => verifyPatched(out, changed), (e) => e.patch === "(header)");
});

/** Load shim.js as the glue would see it (top-level functions in one scope). */
function loadShim() {
  const ctx = vm.createContext({ ENVIRONMENT_IS_NODE: false, ENVIRONMENT_IS_PTHREAD: false, Map, Object });
  vm.runInContext(readFileSync(new URL("../shim.js", import.meta.url), "utf8"), ctx);
  return ctx;
}

test("symbol index cache agrees with Object.keys().indexOf and follows growth", () => {
  const shim = loadShim();
  const exports = {};
  for (let i = 0; i < 1000; i++) exports[`sym${i}`] = i;
  const lib = { exports };
  for (const k of ["sym0", "sym1", "sym999", "sym500"]) {
    assert.equal(shim.__lpSymbolIndex(lib, k), Object.keys(exports).indexOf(k));
  }
  assert.equal(shim.__lpSymbolIndex(lib, "nope"), -1);
  assert.equal(shim.__lpSymbolIndex(lib, "toString"), -1, "prototype names are not exports");
  exports.late = 1; // the main program's table grows when a side module loads
  assert.equal(shim.__lpSymbolIndex(lib, "late"), 1000);
  exports.later = 2;
  assert.equal(shim.__lpSymbolName(lib, 1001), "later");
  assert.equal(shim.__lpSymbolName(lib, 7), "sym7");
  lib.exports = { other: 1 };
  assert.equal(shim.__lpSymbolIndex(lib, "other"), 0, "a replaced export object is re-indexed");
});

test("frame reader skips non-LSP bytes and reassembles split multi-byte bodies", () => {
  const r = new FrameReader();
  const body = Buffer.from(JSON.stringify({ jsonrpc: "2.0", method: "m", params: { t: "∀ 𝓝" } }));
  const frame = Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`), body]);
  const noise = Buffer.from("[DEBUG:A] lean_main entered\n");
  const all = Buffer.concat([noise, frame, frame]);
  const got = [];
  for (let i = 0; i < all.length; i += 7) { // 7-byte chunks split headers and characters
    r.push(all.subarray(i, i + 7));
    for (let m; (m = r.next()) !== null;) got.push(m);
  }
  assert.equal(got.length, 2);
  assert.equal(got[1].params.t, "∀ 𝓝");
  assert.equal(r.skipped, noise.length);
});

test("slim-exports keeps what the glue reads and still fills Module for the rest", () => {
  const glue = "var Module={};_used(1);" + fakeExports(2000) + "assignWasmExports(EXPORTS);";
  const slim = slimExports(glue);
  assert.ok(slim.length < glue.length / 5, `slimmed ${glue.length} -> ${slim.length}`);
  assert.ok(!slim.includes("_l_f5=Module"), "unused export variable dropped");
  assert.ok(slim.includes('_used=Module["_used"]=wasmExports["used"]'), "used variable kept");
  assert.ok(slim.includes("=wasmTable=wasmExports"), "chained assignment kept");
  class Global { constructor(v) { this.value = v; } }
  const exports = { __main_argc_argv: () => 0, used: () => 1, indirect_function_table: "table" };
  for (let i = 0; i < 2000; i++) exports[`l_f${i}`] = i === 7 ? new Global(77) : () => i;
  const run = (src, pthread = false) => {
    const ctx = vm.createContext({ EXPORTS: exports, WebAssembly: { Global }, ENVIRONMENT_IS_PTHREAD: pthread });
    vm.runInContext(src.replace("_used(1);", ""), ctx);
    return ctx;
  };
  const a = run(glue), b = run(slim);
  for (const k of ["_main", "_used", "_l_f0", "_l_f1999", "_l_f7", "__indirect_function_table"]) {
    assert.equal(typeof b.Module[k], typeof a.Module[k], k);
  }
  assert.equal(b.Module._l_f7, 77, "data symbols get their .value");
  assert.equal(b.wasmTable, a.wasmTable);
  // a pthread's Worker keeps the variables the glue reads and skips the loop
  const p = run(slim, true);
  assert.equal(typeof p.Module._used, "function", "kept assignment still runs in a pthread");
  assert.equal(typeof p.Module._main, "function");
  assert.equal(p.wasmTable, a.wasmTable);
  assert.equal(p.Module._l_f0, undefined, "no generic Module fill in a pthread");
  assert.equal(Object.keys(p.Module).length < 10, true, `${Object.keys(p.Module).length} Module names in a pthread`);
  assert.throws(() => slimExports(glue.replace('_l_f3=Module["_l_f3"]', "_l_f3=other")), /unexpected statement/);
});
