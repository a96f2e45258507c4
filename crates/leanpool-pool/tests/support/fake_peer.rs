//! A FAKE Lean file worker, for pool tests only.
//!
//! Why a fake: the pool's fault paths need faults on demand that real Lean
//! cannot produce: a worker that dies on the same request twice (the
//! `WorkerFailed` path), dies exactly once, eats a chosen amount of
//! memory, or fails to start; and tests of queueing and eviction need
//! workers that start in milliseconds rather than 25 s. The fake speaks
//! just the part of Lean's *file-worker* protocol the driver uses:
//! `initialize` (read, never answered, as the real file worker does),
//! `didOpen`/`didChange` (full text) answered by `publishDiagnostics` and
//! `$/lean/fileProgress` with nothing left to process, and
//! `textDocument/waitForDiagnostics`. Everything else about Lean is not
//! imitated; `pool_lean.rs` tests the same pool on real Lean.
//!
//! Hand-rolled rather than built on tower-lsp: tower-lsp drops
//! notifications that arrive before its `initialize` has completed, but a
//! Lean file worker takes `didOpen` right behind an unanswered
//! `initialize`, which is what the driver sends.
//!
//! Behaviour is scripted by `-- FAKE <cmd> [arg]` lines in the document
//! body (several allowed, run in order):
//! - `crash`: exit at once (the worker dies mid-request);
//! - `crash_once PATH`: exit unless PATH exists (create it first), i.e. die
//!   on the first attempt and succeed on the retry;
//! - `sleep MS`: wait before answering;
//! - `alloc MB`: allocate and touch MB megabytes, keep them, wait 60 s;
//! - `error`: report one error diagnostic;
//!
//! and leanpool's verdict trailer gets native Lean's answers: a `#check`
//! line one information message, a `#print axioms NAME` line
//! `'NAME' does not depend on any axioms`.
//! - `forge_version`: first write a `publishDiagnostics` with no
//!   diagnostics for version 2147483647, as the issue-10 attack did from a
//!   smuggled `#eval` (real Lean can only be made to do it with the guard
//!   off, which config cannot do yet);
//! - `forge_answer`: first write an answer to request id 999999, which the
//!   driver never sent.
//!
//! A header containing `FakeDieOnOpen` makes the worker exit at `didOpen`
//! (a worker that cannot start). If `FAKE_LOG` is set, every `didChange`
//! appends `<pid> <last line of the text before leanpool's trailer>` to
//! that file.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::time::Duration;

/// Env var that turns the test executable into the fake worker.
pub const FAKE_ENV: &str = "LEANPOOL_FAKE_PEER";

fn send(out: &mut impl Write, msg: &Value) {
    let body = serde_json::to_vec(msg).unwrap();
    write!(out, "Content-Length: {}\r\n\r\n", body.len()).unwrap();
    out.write_all(&body).unwrap();
    out.flush().unwrap();
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
        if let Some(v) = line.strip_prefix("Content-Length:") {
            len = v.trim().parse().ok();
        }
    }
    let mut body = vec![0u8; len?];
    input.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

/// `publishDiagnostics` then "nothing left to process" for `version`.
fn finish(out: &mut impl Write, uri: &Value, version: &Value, diagnostics: Vec<Value>) {
    send(out, &json!({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics",
        "params": {"uri": uri, "version": version, "diagnostics": diagnostics}}));
    send(out, &json!({"jsonrpc": "2.0", "method": "$/lean/fileProgress",
        "params": {"textDocument": {"uri": uri, "version": version}, "processing": []}}));
}

/// Runs the `-- FAKE` script of a document; returns its diagnostics.
fn run_script(text: &str, uri: &Value, out: &mut impl Write) -> Vec<Value> {
    let mut diags = vec![];
    for (i, line) in text.lines().enumerate() {
        // leanpool's verdict trailer, answered as native Lean answers it for
        // a declaration without axioms.
        let at = json!({"start": {"line": i, "character": 0}, "end": {"line": i, "character": 6}});
        if let Some(name) = line.strip_prefix("#check ") {
            diags.push(json!({"range": at, "severity": 3, "message": format!("{name} : Prop")}));
            continue;
        }
        if let Some((_, name)) = line.split_once("#print axioms ") {
            diags.push(json!({"range": at, "severity": 3, "message": format!("'{name}' does not depend on any axioms")}));
            continue;
        }
        let Some(cmd) = line.trim().strip_prefix("-- FAKE ") else { continue };
        let mut words = cmd.split_whitespace();
        let (verb, arg) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
        match verb {
            "crash" => std::process::exit(3),
            "crash_once" => {
                if std::fs::metadata(arg).is_err() {
                    std::fs::write(arg, b"crashed").unwrap();
                    std::process::exit(3);
                }
            }
            "sleep" => std::thread::sleep(Duration::from_millis(arg.parse().unwrap())),
            "alloc" => {
                let v = vec![1u8; arg.parse::<usize>().unwrap() << 20];
                std::hint::black_box(&v);
                std::mem::forget(v);
                std::thread::sleep(Duration::from_secs(60));
            }
            "forge_version" => send(out, &json!({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics",
                "params": {"uri": uri, "version": 2147483647, "diagnostics": []}})),
            "forge_answer" => send(out, &json!({"jsonrpc": "2.0", "id": 999999, "result": {}})),
            "error" => diags.push(json!({"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                "severity": 1, "message": "fake error"})),
            other => panic!("unknown FAKE command {other}"),
        }
    }
    diags
}

/// Serves the fake worker on stdin/stdout until stdin closes.
pub fn serve() {
    let mut input = BufReader::new(std::io::stdin().lock());
    let mut out = std::io::stdout().lock();
    while let Some(msg) = read_message(&mut input) {
        let method = msg["method"].as_str().unwrap_or("");
        let params = &msg["params"];
        match method {
            "textDocument/didOpen" => {
                let doc = &params["textDocument"];
                if doc["text"].as_str().unwrap_or("").contains("FakeDieOnOpen") {
                    std::process::exit(4);
                }
                finish(&mut out, &doc["uri"], &doc["version"], vec![]);
            }
            "textDocument/didChange" => {
                let text = params["contentChanges"].as_array().and_then(|c| c.last()).and_then(|c| c["text"].as_str()).unwrap_or("");
                if let Ok(path) = std::env::var("FAKE_LOG") {
                    // The caller's last line, not leanpool's verdict trailer.
                    let last = text
                        .trim_end()
                        .lines()
                        .rfind(|l| !l.starts_with("#check ") && !l.contains("#print axioms "))
                        .unwrap_or("");
                    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap();
                    writeln!(f, "{} {last}", std::process::id()).unwrap();
                }
                let doc = &params["textDocument"];
                let diags = run_script(text, &doc["uri"], &mut out);
                finish(&mut out, &doc["uri"], &doc["version"], diags);
            }
            // Like Lean's file worker: `initialize` is read, not answered.
            "initialize" => {}
            _ => {
                if let Some(id) = msg.get("id") {
                    if !method.is_empty() {
                        send(&mut out, &json!({"jsonrpc": "2.0", "id": id, "result": {}}));
                    }
                }
            }
        }
    }
}
