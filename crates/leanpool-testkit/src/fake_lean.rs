//! THE scripted fake Lean file worker: the one stand-in for Lean in
//! leanpool's tests.
//!
//! It exists only for faults real Lean cannot produce on demand: a worker
//! that dies mid-request (once, or on the same request twice), panics
//! without exiting (as the WASM build does at its 2 GiB heap cap, which
//! real Lean reaches only after minutes of allocation), grows by a chosen
//! amount of memory, fails to start, forges frames nobody asked for (real
//! Lean can be made to only with the input guard off), forks into its
//! process group; and for tests of queueing, eviction and the driver's
//! framing that need workers starting in milliseconds rather than 25-70 s.
//! Everything about Lean's *behaviour* is tested on real Lean
//! (`leanpool-methods/tests/lean_worker.rs`, `leanpool-pool/tests/pool_lean.rs`,
//! `leanpool/tests/*_lean.rs`); nothing here says anything about Lean.
//!
//! A test executable becomes the fake when [`ENV`] is set (see
//! [`crate::harness::main`], which every fake-based test binary runs):
//! the tests spawn their own executable as the "lean" command.
//!
//! It speaks the part of Lean's *file-worker* LSP the driver uses:
//! `initialize` (read, never answered, as Lean's file worker does; its
//! `initializationOptions.hasWidgets` must be `true`), `didOpen` (its
//! `dependencyBuildMode` must be `"never"`) and `didChange` (full text),
//! each answered by a `$/lean/fileProgress` with the document processing,
//! `publishDiagnostics` and a `$/lean/fileProgress` with nothing left;
//! `textDocument/waitForDiagnostics`; `$/lean/rpc/connect` (a session id
//! over 2^53), `$/lean/rpc/call` (echoes method, position and params),
//! `$/lean/rpc/release` (recorded). Other requests under `textDocument/` or
//! `$/lean/` are answered `{}`, any other `MethodNotFound`. Hand-rolled
//! rather than tower-lsp: tower-lsp drops notifications that arrive before
//! its `initialize` has completed, and the driver sends `didOpen` right
//! behind an unanswered `initialize`, as Lean's file worker expects.
//!
//! # Script
//!
//! **Arguments** (process-wide): `--chatty` makes the stream as noisy as
//! the WASM build's: start-up chatter on stdout and stderr, a non-frame
//! line before every frame, a server-to-client request (`id` `"srv-1"`)
//! after `initialize`, and diagnostics published *after* the done progress
//! for odd document versions (Lean may do either).
//!
//! **Environment**: `FAKE_LOG=PATH`: every `didChange` appends
//! `<pid> <last line of the text before leanpool's verdict trailer>`.
//!
//! **Text** (per document version, `didOpen` and `didChange`): lines
//! `-- FAKE <cmd> [arg]`, run in order:
//! - `crash`: `boom: fake crash` on stderr, exit 3 (dies mid-request);
//! - `crash_once PATH`: crash unless PATH exists (created first): die on
//!   the first attempt, succeed on the retry;
//! - `sleep MS`: wait before answering;
//! - `hang`: never finish this version (the processing progress only);
//! - `alloc MB`: allocate and touch MB megabytes, keep them, wait 60 s;
//! - `panic`: Lean's `INTERNAL PANIC: out of memory` on stderr, in two
//!   writes split inside the marker, then hang without exiting;
//! - `fork`: start a `sleep 1000` child (same process group);
//! - `error`: one error diagnostic `fake error` at 0:0;
//! - `forge_version` / `forge_uri` / `forge_answer` / `forge_junk` /
//!   `forge_note`: write a frame the driver never asked for, as code
//!   running inside Lean could (the issue-10 attack wrote one from a
//!   smuggled `#eval`): a `publishDiagnostics` for version 2147483647, one
//!   for another document, an answer to request 999999, a frame whose body
//!   is not JSON, an unknown notification;
//! - `slow_barrier MS`: answer the next `waitForDiagnostics` only after
//!   MS ms (a time-out inside the driver's barrier request);
//! - `spin_bg`: start two threads that compute forever and go on: an
//!   elaboration that ignores Lean's cancellation (real Lean cannot be
//!   made to do that on demand), while the document's versions are
//!   answered as usual.
//!
//! Other lines: `bad` anywhere is an `unknown identifier 'bad'` error on
//! that word (columns in UTF-16 units, like Lean), and leanpool's verdict
//! trailer gets native Lean's answers: a `#check NAME` line one
//! information message, a `#print axioms NAME` line
//! `'NAME' does not depend on any axioms`. A document whose text contains
//! `FakeDieOnOpen` makes the worker exit 4 at `didOpen` (a worker that
//! cannot start).

use leanpool_protocol::lsp_error;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Delay (ms) before answering the next `waitForDiagnostics` (`slow_barrier`).
static BARRIER_DELAY_MS: AtomicU64 = AtomicU64::new(0);

/// Env var that turns a test executable into the fake worker.
pub const ENV: &str = "LEANPOOL_FAKE_LEAN";

/// The argument that turns on the noisy stream (see the module docs).
pub const CHATTY: &str = "--chatty";

/// The session id `$/lean/rpc/connect` answers (over 2^53, as Lean's are).
pub const RPC_SESSION: u64 = 12345678901234567890;

/// Whether this process was started as the fake.
pub fn is_fake() -> bool {
    std::env::var_os(ENV).is_some()
}

struct Fake<W: Write> {
    out: W,
    chatty: bool,
    /// Ids of the answers the client sent to the fake's own requests.
    answered: Vec<Value>,
    /// References released by `$/lean/rpc/release`.
    released: Vec<Value>,
}

/// Serves the fake worker on stdin/stdout until stdin closes, then exits.
pub fn serve() -> ! {
    let chatty = std::env::args().any(|a| a == CHATTY);
    let mut input = BufReader::new(std::io::stdin().lock());
    let mut fake = Fake {
        out: std::io::stdout().lock(),
        chatty,
        answered: vec![],
        released: vec![],
    };
    if chatty {
        eprintln!("[DEBUG: fake server on stderr]");
        fake.out
            .write_all(b"[DEBUG:wasm] start-up chatter on stdout\n")
            .unwrap();
        fake.out.flush().unwrap();
    }
    while let Some(msg) = read_message(&mut input) {
        fake.handle(msg);
    }
    std::process::exit(0)
}

/// Next message body, `None` at end of input.
fn read_message(input: &mut impl BufRead) -> Option<Value> {
    let mut len = None;
    loop {
        let mut line = String::new();
        if input.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().ok();
            }
        }
    }
    let mut body = vec![0u8; len?];
    input.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

/// The driver sent what Lean's file worker would not take: say so and die.
fn refuse(what: &str) -> ! {
    eprintln!("fake lean: {what}");
    std::process::exit(5)
}

fn utf16(s: &str) -> usize {
    s.encode_utf16().count()
}

impl<W: Write> Fake<W> {
    fn send(&mut self, msg: &Value) {
        let body = serde_json::to_vec(msg).unwrap();
        if self.chatty {
            self.out
                .write_all(b"[DEBUG: noise before a frame] Content-\n")
                .unwrap();
        }
        write!(self.out, "Content-Length: {}\r\n\r\n", body.len()).unwrap();
        self.out.write_all(&body).unwrap();
        self.out.flush().unwrap();
    }

    fn answer(&mut self, id: &Value, result: Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    fn handle(&mut self, msg: Value) {
        let Some(method) = msg["method"].as_str().map(str::to_string) else {
            // An answer to one of the fake's own requests.
            self.answered.push(msg["id"].clone());
            return;
        };
        let params = &msg["params"];
        let id = msg.get("id");
        match method.as_str() {
            "initialize" => self.initialize(params),
            "textDocument/didOpen" => self.did_open(params),
            "textDocument/didChange" => self.did_change(params),
            "$/lean/rpc/connect" => self.answer(
                id.unwrap_or(&Value::Null),
                json!({"sessionId": RPC_SESSION}),
            ),
            "$/lean/rpc/call" => self.rpc_call(id.unwrap_or(&Value::Null).clone(), params),
            "$/lean/rpc/release" => {
                let refs = params["refs"].as_array().cloned().unwrap_or_default();
                self.released.extend(refs.iter().map(|r| r["p"].clone()));
            }
            // The fake's own introspection, for the driver's tests.
            "test/released" => self.answer(
                id.unwrap_or(&Value::Null),
                Value::Array(self.released.clone()),
            ),
            "test/answered" => self.answer(
                id.unwrap_or(&Value::Null),
                Value::Array(self.answered.clone()),
            ),
            m => self.other(m, id),
        }
    }

    /// Like Lean's file worker: `initialize` is read, not answered.
    fn initialize(&mut self, params: &Value) {
        if params["initializationOptions"]["hasWidgets"] != json!(true) {
            refuse("initialize without initializationOptions.hasWidgets = true");
        }
        if self.chatty {
            self.send(&json!({"jsonrpc": "2.0", "id": "srv-1", "method": "workspace/semanticTokens/refresh"}));
        }
    }

    fn did_open(&mut self, params: &Value) {
        if params["dependencyBuildMode"] != "never" {
            refuse("didOpen without dependencyBuildMode = never");
        }
        let doc = &params["textDocument"];
        let text = doc["text"].as_str().unwrap_or("");
        if text.contains("FakeDieOnOpen") {
            std::process::exit(4);
        }
        self.elaborate(&doc["uri"], &doc["version"], text);
    }

    fn did_change(&mut self, params: &Value) {
        let text = params["contentChanges"]
            .as_array()
            .and_then(|c| c.last())
            .and_then(|c| c["text"].as_str())
            .unwrap_or("");
        log_edit(text);
        let doc = &params["textDocument"];
        self.elaborate(&doc["uri"], &doc["version"], text);
    }

    /// Echoes the call (Lean would send the goals), or asks for a
    /// reconnect when the session is not the fake's.
    fn rpc_call(&mut self, id: Value, params: &Value) {
        if params["sessionId"] != json!(RPC_SESSION) {
            self.send(&json!({"jsonrpc": "2.0", "id": id, "error": {"code": lsp_error::LEAN_RPC_NEEDS_RECONNECT, "message": "reconnect"}}));
        } else {
            let echo = json!({"method": params["method"], "position": params["position"], "params": params["params"]});
            self.answer(&id, echo);
        }
    }

    /// Any other method: requests under `textDocument/` and `$/lean/` get
    /// an empty answer (after the scripted barrier delay for
    /// `waitForDiagnostics`), others "method not found".
    fn other(&mut self, m: &str, id: Option<&Value>) {
        if m == "textDocument/waitForDiagnostics" {
            let ms = BARRIER_DELAY_MS.swap(0, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(ms));
        }
        if let Some(id) = id {
            if m.starts_with("textDocument/") || m.starts_with("$/lean/") {
                self.answer(id, json!({}));
            } else {
                self.send(&json!({"jsonrpc": "2.0", "id": id, "error": {"code": lsp_error::METHOD_NOT_FOUND, "message": format!("no {m}")}}));
            }
        }
    }

    /// One document version: its script, then its diagnostics and the
    /// done progress (unless the script hangs or exits).
    fn elaborate(&mut self, uri: &Value, version: &Value, text: &str) {
        let n_lines = text.split('\n').count();
        self.send(&json!({"jsonrpc": "2.0", "method": "$/lean/fileProgress", "params": {
            "textDocument": {"uri": uri, "version": version},
            "processing": [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": n_lines, "character": 0}}, "kind": 1}]}}));
        let mut diags = vec![];
        let mut hang = false;
        for (i, line) in text.split('\n').enumerate() {
            if let Some(cmd) = line.trim().strip_prefix("-- FAKE ") {
                match self.script(cmd, uri, version) {
                    Scripted::Nothing => {}
                    Scripted::Hang => hang = true,
                    Scripted::Diagnostic(d) => diags.push(d),
                }
            } else if let Some(d) = line_diagnostic(i, line) {
                diags.push(d);
            }
        }
        if !hang {
            self.finish(uri, version, diags);
        }
    }

    /// Runs one `-- FAKE VERB ARG` line of the script.
    fn script(&mut self, cmd: &str, uri: &Value, version: &Value) -> Scripted {
        let mut words = cmd.split_whitespace();
        let (verb, arg) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
        match verb {
            "crash" => crash(),
            "crash_once" => {
                if std::fs::metadata(arg).is_err() {
                    std::fs::write(arg, b"crashed").unwrap();
                    crash();
                }
            }
            "sleep" => std::thread::sleep(Duration::from_millis(arg.parse().unwrap())),
            "hang" => return Scripted::Hang,
            "alloc" => alloc_and_wait(arg.parse().unwrap()),
            "panic" => panic_and_wait(),
            "fork" => {
                let child = std::process::Command::new("sleep").arg("1000").spawn().unwrap();
                std::mem::forget(child);
            }
            "error" => return Scripted::Diagnostic(json!({"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                "severity": 1, "message": "fake error"})),
            "forge_version" => self.send(&json!({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics",
                "params": {"uri": uri, "version": 2147483647, "diagnostics": []}})),
            "forge_uri" => self.send(&json!({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics",
                "params": {"uri": "file:///elsewhere/Other.lean", "version": version, "diagnostics": []}})),
            "forge_answer" => self.answer(&json!(999999), json!({})),
            "slow_barrier" => BARRIER_DELAY_MS.store(arg.parse().unwrap_or_else(|_| refuse("slow_barrier MS")), Ordering::SeqCst),
            "spin_bg" => spin_in_background(),
            "forge_junk" => {
                self.out.write_all(b"Content-Length: 5\r\n\r\nnot{}").unwrap();
                self.out.flush().unwrap();
            }
            "forge_note" => self.send(&json!({"jsonrpc": "2.0", "method": "$/lean/forged", "params": {}})),
            other => refuse(&format!("unknown FAKE command {other}")),
        }
        Scripted::Nothing
    }

    /// The version's diagnostics and its done progress (in the other
    /// order for odd versions when chatty, as Lean may send them).
    fn finish(&mut self, uri: &Value, version: &Value, diags: Vec<Value>) {
        let publish = json!({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics",
            "params": {"uri": uri, "version": version, "diagnostics": diags}});
        let done = json!({"jsonrpc": "2.0", "method": "$/lean/fileProgress",
            "params": {"textDocument": {"uri": uri, "version": version}, "processing": []}});
        if self.chatty && version.as_i64().unwrap_or(0) % 2 == 1 {
            self.send(&done);
            self.send(&publish);
        } else {
            self.send(&publish);
            self.send(&done);
        }
    }
}

/// What one script line asks of the version being elaborated.
enum Scripted {
    Nothing,
    /// Never publish this version's diagnostics.
    Hang,
    Diagnostic(Value),
}

/// The diagnostic the fake gives a line of code: leanpool's trailer
/// (`#check`, `#print axioms`) answered as Lean would, `bad` an error.
fn line_diagnostic(i: usize, line: &str) -> Option<Value> {
    // leanpool's trailer writes `set_option … in #check @NAME`.
    let check = line
        .strip_prefix("#check ")
        .or_else(|| line.split_once(" in #check ").map(|(_, n)| n));
    if let Some(name) = check {
        let at = json!({"start": {"line": i, "character": 0}, "end": {"line": i, "character": 6}});
        return Some(json!({"range": at, "severity": 3, "message": format!("{name} : Prop")}));
    }
    if let Some(j) = line.find("#print axioms") {
        let c = utf16(&line[..j]);
        let name = line[j + "#print axioms".len()..].trim();
        let at =
            json!({"start": {"line": i, "character": c}, "end": {"line": i, "character": c + 6}});
        return Some(
            json!({"range": at, "severity": 3, "message": format!("'{name}' does not depend on any axioms")}),
        );
    }
    let j = line.find("bad")?;
    let c = utf16(&line[..j]);
    let at = json!({"start": {"line": i, "character": c}, "end": {"line": i, "character": c + 3}});
    Some(json!({"range": at, "severity": 1, "message": "unknown identifier 'bad'"}))
}

/// Appends "<pid> <the caller's last line>" to `$FAKE_LOG` (not leanpool's
/// verdict trailer), so tests see which process served which request.
fn log_edit(text: &str) {
    let Ok(path) = std::env::var("FAKE_LOG") else {
        return;
    };
    let last = text
        .trim_end()
        .lines()
        .rfind(|l| {
            !l.starts_with("#check ")
                && !l.contains("#print axioms ")
                && !l.contains(" in #check @")
        })
        .unwrap_or("");
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    // One write(2) per line: with O_APPEND, workers' lines never
    // interleave (writeln! on a File may write the pid and the rest apart).
    let line = format!("{} {last}\n", std::process::id());
    f.write_all(line.as_bytes()).unwrap();
}

/// Holds `mib` MiB resident, then waits (for the memory cap to act).
fn alloc_and_wait(mib: usize) {
    let v = vec![1u8; mib << 20];
    std::hint::black_box(&v);
    std::mem::forget(v);
    std::thread::sleep(Duration::from_secs(60));
}

/// Writes Lean's out-of-memory panic to stderr in two pieces, then waits.
fn panic_and_wait() {
    let mut err = std::io::stderr();
    err.write_all(b"some output\nINTERNAL PA").unwrap();
    std::thread::sleep(Duration::from_millis(200));
    err.write_all(b"NIC: out of memory\n").unwrap();
    std::thread::sleep(Duration::from_secs(1000));
}

/// Two threads that compute forever (an elaboration ignoring a cancel).
fn spin_in_background() {
    for _ in 0..2 {
        std::thread::spawn(|| {
            let mut x = 0u64;
            loop {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
        });
    }
}

fn crash() -> ! {
    eprintln!("boom: fake crash");
    std::process::exit(3)
}
