#!/usr/bin/env node
// Stand-alone LSP smoke test of a Lean worker described by a backend.json
// (default: .lean-wasm/backend.json). Independent of the Rust driver on
// purpose: it proves the installed worker serves LSP, and measures it.
//
//   node scripts/wasm/smoke.mjs [--backend FILE] [--n 20] [--init-options JSON] [--json] [--stderr-log FILE]
//
// Steps: spawn, `initialize` (never answered by a file worker), `didOpen` (version 1), wait for
// the version to finish; then N full-text `didChange`s of a one-line `omega`
// theorem (a fresh name each time, so Lean really elaborates it), a false
// `decide` (must give an error), and a text with `∀`, `∃` and an astral `𝓝`
// (must pass stdin intact and give an error at the right UTF-16 column).
// Prints spawn->ready, first request, median/p90 of the rest, RSS (VmRSS).
// Exit code 0 only if every check held.

import { spawn } from "node:child_process";
import { appendFileSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

function parseArgs(argv) {
  const o = { backend: join(ROOT, ".lean-wasm/backend.json"), n: 20, initOptions: {}, json: false, timeoutS: 600 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--backend") o.backend = argv[++i];
    else if (a === "--n") o.n = Number(argv[++i]);
    else if (a === "--init-options") o.initOptions = JSON.parse(argv[++i]);
    else if (a === "--timeout") o.timeoutS = Number(argv[++i]);
    else if (a === "--json") o.json = true;
    else if (a === "--stderr-log") o.stderrLog = argv[++i];
    else throw new Error(`unknown argument ${a}`);
  }
  return o;
}

/** Incremental LSP frame reader that skips bytes before a `Content-Length:` header. */
export class FrameReader {
  constructor() { this.buf = Buffer.alloc(0); this.skipped = 0; }
  push(chunk) { this.buf = Buffer.concat([this.buf, chunk]); }
  /** Next complete message (parsed JSON) or null. */
  next() {
    for (;;) {
      const h = this.buf.indexOf("Content-Length:");
      if (h === -1) {
        // keep a tail that might be the start of a header
        const keep = Math.min(this.buf.length, 14);
        this.skipped += this.buf.length - keep;
        this.buf = this.buf.subarray(this.buf.length - keep);
        return null;
      }
      if (h > 0) { this.skipped += h; this.buf = this.buf.subarray(h); }
      const end = this.buf.indexOf("\r\n\r\n");
      if (end === -1) return null;
      const head = this.buf.subarray(0, end).toString("latin1");
      const m = /Content-Length:\s*(\d+)/i.exec(head);
      if (!m) { this.buf = this.buf.subarray(1); continue; }
      const len = Number(m[1]);
      if (this.buf.length < end + 4 + len) return null;
      const body = this.buf.subarray(end + 4, end + 4 + len).toString("utf8");
      this.buf = this.buf.subarray(end + 4 + len);
      return JSON.parse(body);
    }
  }
}

class Client {
  constructor(backend, cwd, stderrLog) {
    const args = [...backend.args, ...(backend.mode_args ?? ["--worker"])];
    this.proc = spawn(backend.program, args, {
      cwd, env: { ...process.env, ...(backend.env ?? {}) }, stdio: ["pipe", "pipe", "pipe"],
    });
    this.reader = new FrameReader();
    this.nextId = 1;
    this.pending = new Map();
    this.waiters = [];
    this.progress = new Map(); // version -> done?
    this.diags = new Map(); // version -> diagnostics (latest)
    this.log = [];
    this.stderr = "";
    this.exited = null;
    this.proc.stdout.on("data", (c) => { this.reader.push(c); this.drain(); });
    this.proc.stderr.on("data", (c) => {
      this.stderr = (this.stderr + c.toString()).slice(-8000);
      if (stderrLog) appendFileSync(stderrLog, c);
    });
    this.proc.on("exit", (code, sig) => { this.exited = { code, sig }; this.wake(); });
  }
  drain() {
    for (let m; (m = this.reader.next()) !== null;) this.handle(m);
    this.wake();
  }
  handle(m) {
    const t = performance.now();
    if (m.id !== undefined && m.method === undefined) {
      const p = this.pending.get(m.id);
      if (p) { this.pending.delete(m.id); p(m); }
      return;
    }
    if (m.id !== undefined) { // server -> client request
      this.log.push([t, `request ${m.method}`]);
      this.send({ jsonrpc: "2.0", id: m.id, result: null });
      return;
    }
    this.log.push([t, m.method]);
    if (m.method === "$/lean/fileProgress") {
      const v = m.params.textDocument.version;
      if (m.params.processing.length === 0) this.progress.set(v, t);
    } else if (m.method === "textDocument/publishDiagnostics") {
      this.diags.set(m.params.version, m.params.diagnostics);
    }
  }
  wake() { const w = this.waiters; this.waiters = []; w.forEach((f) => f()); }
  async until(pred, timeoutMs, what) {
    const deadline = performance.now() + timeoutMs;
    while (!pred()) {
      if (this.exited) throw new Error(`worker exited (${JSON.stringify(this.exited)}) while waiting for ${what}; stderr tail:\n${this.stderr}`);
      const left = deadline - performance.now();
      if (left <= 0) throw new Error(`timeout waiting for ${typeof what === "function" ? what() : what}`);
      await new Promise((r) => { this.waiters.push(r); setTimeout(r, Math.min(left, 1000)); });
    }
  }
  send(msg) {
    const body = Buffer.from(JSON.stringify(msg), "utf8");
    this.proc.stdin.write(`Content-Length: ${body.length}\r\n\r\n`);
    this.proc.stdin.write(body);
  }
  request(method, params, timeoutMs) {
    const id = this.nextId++;
    return new Promise((res, rej) => {
      const timer = setTimeout(() => rej(new Error(`timeout on ${method}`)), timeoutMs);
      this.pending.set(id, (m) => { clearTimeout(timer); m.error ? rej(new Error(JSON.stringify(m.error))) : res(m.result); });
      this.send({ jsonrpc: "2.0", id, method, params });
    });
  }
  notify(method, params) { this.send({ jsonrpc: "2.0", method, params }); }
  rssBytes() {
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${this.proc.pid}/status`, "utf8"));
      return m ? Number(m[1]) * 1024 : null;
    } catch { return null; }
  }
  /** CPU seconds (user + system) used so far by the worker process. */
  cpuSeconds() {
    try {
      const f = readFileSync(`/proc/${this.proc.pid}/stat`, "utf8");
      const rest = f.slice(f.lastIndexOf(")") + 2).split(" ");
      return (Number(rest[11]) + Number(rest[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
    } catch { return null; }
  }
  kill() { try { this.proc.kill("SIGKILL"); } catch { /* already gone */ } }
}

const quantile = (xs, q) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(q * s.length))]; };

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const backend = JSON.parse(readFileSync(o.backend, "utf8"));
  const uri = pathToFileURL(join(tmpdir(), `LeanpoolSmoke${process.pid}.lean`)).href;
  const limit = o.timeoutS * 1000;
  const t0 = performance.now();
  const c = new Client(backend, ROOT, o.stderrLog);
  const checks = [];
  const check = (name, ok, detail) => { checks.push({ name, ok, detail }); };
  try {
    // A file worker (`lean --worker`) never answers `initialize` (in
    // `lean --server` the watchdog does) and wants `didOpen` right after it:
    // an `initialized` notification there is fatal ("Expected method
    // 'textDocument/didOpen', got method 'initialized'").
    c.send({ jsonrpc: "2.0", id: c.nextId++, method: "initialize", params: {
      processId: process.pid, rootUri: null, capabilities: { textDocument: { publishDiagnostics: {} }, window: {} },
      initializationOptions: { hasWidgets: true, ...o.initOptions },
    } });
    c.notify("textDocument/didOpen", {
      textDocument: { uri, languageId: "lean", version: 1, text: "-- leanpool smoke test\n" },
      dependencyBuildMode: "never",
    });
    await c.until(() => c.progress.has(1), limit, "version 1 done");
    const ready = performance.now() - t0;
    // CPU seconds and RSS at ready: on a shared machine the wall time above
    // depends on the load, the CPU time much less.
    const readyCpu = c.cpuSeconds();
    const readyRss = c.rssBytes();

    let version = 1;
    /** didChange the full text, wait until the version is done and its diagnostics are in. */
    const edit = async (text) => {
      version += 1;
      const v = version;
      const start = performance.now();
      c.notify("textDocument/didChange", { textDocument: { uri, version: v }, contentChanges: [{ text }] });
      await c.until(() => c.progress.has(v) && c.diags.has(v), limit,
        () => `version ${v} done (progress done: ${c.progress.has(v)}, diagnostics: ${c.diags.has(v)}; last messages: ` +
        `${c.log.slice(-6).map(([t, m]) => `${Math.round(t - start)}ms ${m}`).join(", ")})`);
      return { ms: performance.now() - start, diags: c.diags.get(v) };
    };

    const times = [];
    let firstErrors = 0;
    let firstCpu = null;
    for (let i = 0; i < o.n; i++) {
      const r = await edit(`theorem t${i} (a b : Nat) : a + b = b + a := by omega\n`);
      if (i === 0 && readyCpu !== null) firstCpu = c.cpuSeconds() - readyCpu;
      times.push(r.ms);
      firstErrors += r.diags.filter((d) => d.severity === 1).length;
    }
    check("good theorem gives no error", firstErrors === 0, `${firstErrors} errors over ${o.n} requests`);
    const rss = c.rssBytes();
    // Idle cost: a worker waiting for input should not burn CPU.
    const cpu0 = c.cpuSeconds();
    await new Promise((r) => setTimeout(r, 3000));
    const idleCpu = cpu0 === null ? null : (c.cpuSeconds() - cpu0) / 3;

    const bad = await edit("theorem u : 2 + 2 = 5 := by decide\n");
    const badErr = bad.diags.filter((d) => d.severity === 1);
    check("false decide gives an error on line 0", badErr.length >= 1 && badErr.every((d) => d.range.start.line === 0),
      badErr.map((d) => d.message.split("\n")[0]).join(" | "));

    const line2 = "/- 𝓝 -/ example : (1 : Nat) = 2 := by decide";
    const uni = await edit(
      "-- 𝓝 astral, ℕ and ∀ in a comment\n" +
      "theorem uni : ∀ n : Nat, ∃ m, m > n := fun n => ⟨n + 1, Nat.lt_succ_self n⟩\n" +
      line2 + "\n");
    const uniErr = uni.diags.filter((d) => d.severity === 1);
    const col = line2.indexOf("decide"); // JS strings index in UTF-16 units, like LSP
    check("multi-byte text: the only error is at `decide` on line 2 (UTF-16 column)",
      uniErr.length === 1 && uniErr[0].range.start.line === 2 && uniErr[0].range.start.character === col,
      JSON.stringify(uniErr.map((d) => d.range)) + ` want line 2 char ${col}`);

    const rest = times.slice(1);
    const result = {
      ready_s: +(ready / 1000).toFixed(2),
      ready_cpu_s: readyCpu,
      ready_rss_mb: readyRss === null ? null : Math.round(readyRss / 2 ** 20),
      first_cpu_s: firstCpu === null ? null : +firstCpu.toFixed(2),
      first_ms: Math.round(times[0]),
      median_ms: Math.round(quantile(rest, 0.5)),
      p90_ms: Math.round(quantile(rest, 0.9)),
      requests: o.n,
      rss_mb_after: rss === null ? null : Math.round(rss / 2 ** 20),
      rss_mb_end: (() => { const r = c.rssBytes(); return r === null ? null : Math.round(r / 2 ** 20); })(),
      idle_cpu_fraction: idleCpu === null ? null : +idleCpu.toFixed(3),
      non_lsp_stdout_bytes: c.reader.skipped,
      checks,
    };
    if (o.json) console.log(JSON.stringify(result));
    else {
      console.log(`spawn->ready ${result.ready_s} s (${result.ready_cpu_s} CPU s, RSS ${result.ready_rss_mb} MB); first request ${result.first_ms} ms; ` +
        `median of the other ${o.n - 1}: ${result.median_ms} ms (p90 ${result.p90_ms} ms); ` +
        `RSS after ${o.n}: ${result.rss_mb_after} MB; idle CPU ${result.idle_cpu_fraction} cores; skipped ${result.non_lsp_stdout_bytes} non-LSP stdout bytes`);
      for (const k of checks) console.log(`${k.ok ? "ok  " : "FAIL"} ${k.name}: ${k.detail}`);
    }
    return checks.every((k) => k.ok) ? 0 : 1;
  } finally {
    c.kill();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().then((code) => { process.exitCode = code; }, (e) => { console.error(`smoke: ${e.message}`); process.exitCode = 1; });
}
