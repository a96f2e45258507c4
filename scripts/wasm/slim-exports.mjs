// Transform patch "slim-exports": the glue declares a JS variable for each of
// the module's 201,110 exports (`var _main,_lean_main,...`, 21 MB of source)
// and assigns each in `assignWasmExports` (201,108 statements, 68 MB). Every
// pthread's Web Worker loads the whole 89 MB glue into its own V8 isolate, so
// that text, its parse and its bytecode are paid once per thread (the pool
// reaches 9-11 Workers). Only a few hundred of those variables are read by the
// rest of the glue; the others exist for `Module["_name"]` lookups (ccall,
// embedding), which a generic loop over the exports still provides on the
// main thread. A pthread's Worker skips that loop: its `Module` is private to
// its isolate (nothing embeds it, and the glue's only dynamic reads,
// `getCFunc`/ccall and `callStbImage`, are never called there), and the loop
// cost each of the 9-11 isolates a 201,110-name dictionary and a fifth of its
// start-up JavaScript (scripts/wasm/README.md, start-up time).
//
// Kept exactly: every variable whose name occurs as an identifier anywhere
// outside the two generated blocks (over-approximated: strings count too).

const DECL_START = ";var _main,";
const FN_HEAD = "function assignWasmExports(wasmExports){";
const FN_END = "}var wasmImports;";
const MARK = "/*leanpool-slim-exports*/";
// `name=Module["name"]=wasmExports["export"]` (+ `.value` for data symbols); a
// few also assign another glue variable in the chain (`=wasmTable=`).
const ASSIGN = /^([\w$]+)=Module\["([^"]+)"\]=([\w$]+=)?wasmExports\["([^"]+)"\](\.value)?$/;

export class SlimError extends Error {}

function once(text, needle) {
  const i = text.indexOf(needle);
  if (i === -1 || text.indexOf(needle, i + 1) !== -1) {
    throw new SlimError(`expected exactly one ${JSON.stringify(needle)}`);
  }
  return i;
}

/** Returns the glue with both generated blocks reduced; throws SlimError if their shape differs. */
export function slimExports(text) {
  const fn = once(text, FN_HEAD);
  const end = text.indexOf(FN_END, fn);
  if (end === -1) throw new SlimError(`no ${JSON.stringify(FN_END)} after assignWasmExports`);
  const decl = text.lastIndexOf(DECL_START, fn);
  if (decl === -1 || !text.slice(decl, fn).endsWith(";")) throw new SlimError("declaration list does not end right before assignWasmExports");

  const declared = text.slice(decl + 5, fn - 1).split(",");
  const stmts = text.slice(fn + FN_HEAD.length, end).split(";");
  const assigns = stmts.map((st) => {
    const m = ASSIGN.exec(st);
    if (!m || m[1] !== m[2]) throw new SlimError(`unexpected statement in assignWasmExports: ${st.slice(0, 120)}`);
    // kept regardless: chained assignments, and names the generic loop would
    // not reproduce (`_main` comes from `__main_argc_argv`)
    return { name: m[1], stmt: st, chained: m[3] !== undefined || m[2] !== "_" + m[4] };
  });
  if (assigns.length < 1000) throw new SlimError(`only ${assigns.length} assignments: not the generated block`);

  const rest = text.slice(0, decl) + text.slice(end);
  const used = new Set(rest.match(/[A-Za-z_$][\w$]*/g));
  const assigned = new Set(assigns.map((a) => a.name));
  const keptNames = new Set(assigns.filter((a) => a.chained).map((a) => a.name));
  const keepDecl = declared.filter((n) => used.has(n) || keptNames.has(n) || !assigned.has(n));
  const keep = (a) => a.chained || used.has(a.name);
  const keepStmts = assigns.filter(keep).map((a) => a.stmt);
  const loop =
    "if(!ENVIRONMENT_IS_PTHREAD)for(var __lpK in wasmExports){var __lpV=wasmExports[__lpK];" +
    'if(Module["_"+__lpK]===undefined)Module["_"+__lpK]=__lpV instanceof WebAssembly.Global?__lpV.value:__lpV}';
  return (
    text.slice(0, decl) +
    ";var " + keepDecl.join(",") + ";" +
    FN_HEAD + MARK + keepStmts.join(";") + ";" + loop +
    text.slice(end)
  );
}

/** Checks that a glue text carries the slimmed block. */
export function verifySlimExports(text) {
  const fn = once(text, FN_HEAD + MARK);
  const end = text.indexOf(FN_END, fn);
  if (end === -1 || end - fn > 1_000_000) throw new SlimError("assignWasmExports is not slimmed");
}
