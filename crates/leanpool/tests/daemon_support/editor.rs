//! The one test LSP client for `leanpool lsp` (stdio, `--socket`,
//! `--project`): LSP over the child's stdio (`Content-Length` frames),
//! the server's own requests answered `null`, every message kept in
//! order ([`Editor::seen`]), the server's log (stderr) echoed and kept for
//! [`Editor::log_has`]. Used by `lsp_lean` and `projects_lean`.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Reads `Content-Length` frames from an LSP server's stdout on a thread
/// of its own: each JSON body comes out of the receiver, in order, until
/// the stream ends.
pub fn read_frames(mut out: impl BufRead + Send + 'static) -> mpsc::Receiver<Value> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || loop {
        let mut len = None;
        loop {
            let mut line = String::new();
            if out.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            match line.trim_end() {
                "" => break,
                l => {
                    if let Some(v) = l.strip_prefix("Content-Length: ") {
                        len = v.parse::<usize>().ok();
                    }
                }
            }
        }
        let mut body = vec![0; len.expect("Content-Length")];
        out.read_exact(&mut body).unwrap();
        if tx.send(serde_json::from_slice(&body).unwrap()).is_err() {
            return;
        }
    });
    rx
}

/// One message as an LSP frame.
pub fn frame(v: &Value) -> Vec<u8> {
    let body = serde_json::to_vec(v).unwrap();
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend(body);
    out
}

/// A JSON-RPC message; `params: null` is left out (`shutdown`, `exit`
/// take none).
fn message(id: Option<i64>, method: &str, params: Value) -> Value {
    let mut m = json!({ "jsonrpc": "2.0", "method": method });
    if let Some(id) = id {
        m["id"] = id.into();
    }
    if !params.is_null() {
        m["params"] = params;
    }
    m
}

/// One `leanpool lsp` process, driven as an editor would. Killed when
/// dropped (a failed test leaves no server behind; its workers die with
/// it).
pub struct Editor {
    child: Child,
    stdin: Option<ChildStdin>,
    rx: mpsc::Receiver<Value>,
    next_id: i64,
    /// Every message from the server read so far, in order.
    pub seen: Vec<Value>,
    stderr: Arc<Mutex<String>>,
}

impl Drop for Editor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Editor {
    /// Runs `leanpool ARGS` (e.g. `lsp --socket S`), not yet initialized.
    pub fn spawn(args: &[&str]) -> Editor {
        let mut child = Command::new(super::BIN)
            .args(args)
            .env("RUST_LOG", "info")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let rx = read_frames(BufReader::new(child.stdout.take().unwrap()));
        let stderr = Arc::new(Mutex::new(String::new()));
        let log = stderr.clone();
        let mut err = BufReader::new(child.stderr.take().unwrap());
        std::thread::spawn(move || loop {
            let mut line = String::new();
            if err.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            eprint!("[lsp] {line}");
            log.lock().unwrap().push_str(&line);
        });
        Editor {
            child,
            stdin,
            rx,
            next_id: 1,
            seen: vec![],
            stderr,
        }
    }

    /// Runs `leanpool ARGS` and initializes it.
    pub fn start(args: &[&str]) -> Editor {
        let mut e = Editor::spawn(args);
        e.initialize();
        e
    }

    /// `initialize` (no client capabilities), then `initialized`: the
    /// server's `initialize` result.
    pub fn initialize(&mut self) -> Value {
        let init = json!({ "processId": null, "rootUri": null, "capabilities": {} });
        let r = self.result("initialize", init, Duration::from_secs(60));
        self.notify("initialized", json!({}));
        r
    }

    /// The server's pid.
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Writes one message.
    pub fn send(&mut self, v: &Value) {
        assert!(self.try_send(v), "could not write to leanpool lsp");
    }

    /// Writes one message; `false` when the server's stdin is closed
    /// (e.g. it exited).
    pub fn try_send(&mut self, v: &Value) -> bool {
        let Some(stdin) = self.stdin.as_mut() else {
            return false;
        };
        stdin.write_all(&frame(v)).is_ok() && stdin.flush().is_ok()
    }

    /// Closes the server's stdin.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Sends a notification.
    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&message(None, method, params));
    }

    /// Sends `uri`'s whole new `text` as `version` (`didChange`).
    pub fn change(&mut self, uri: &str, version: u64, text: &str) {
        let p = json!({ "textDocument": { "uri": uri, "version": version },
                        "contentChanges": [{ "text": text }] });
        self.notify("textDocument/didChange", p);
    }

    /// Opens `uri` with `text` (version 1).
    pub fn open(&mut self, uri: &str, text: &str) {
        let doc = json!({ "uri": uri, "languageId": "lean4", "version": 1, "text": text });
        self.notify("textDocument/didOpen", json!({ "textDocument": doc }));
    }

    /// The next message within `until` (kept in [`Editor::seen`]), the
    /// server's requests answered `null`.
    pub fn next(&mut self, until: Instant) -> Option<Value> {
        let left = until.checked_duration_since(Instant::now())?;
        let m = self.rx.recv_timeout(left).ok()?;
        if m.get("method").is_some() && m.get("id").is_some() {
            self.send(&json!({ "jsonrpc": "2.0", "id": m["id"], "result": null }));
        }
        self.seen.push(m.clone());
        Some(m)
    }

    /// Sends a request; its whole answer (`result` or `error`), `None`
    /// when none came within `within`.
    pub fn try_request(&mut self, method: &str, params: Value, within: Duration) -> Option<Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&message(Some(id), method, params));
        let until = Instant::now() + within;
        loop {
            let m = self.next(until)?;
            if m.get("id") == Some(&json!(id)) && m.get("method").is_none() {
                return Some(m);
            }
        }
    }

    /// Sends a request; its whole answer (`result` or `error`).
    pub fn request(&mut self, method: &str, params: Value, within: Duration) -> Value {
        self.try_request(method, params, within)
            .unwrap_or_else(|| panic!("no answer to {method} within {within:?}"))
    }

    /// Sends a request; its `result` (an error answer fails the test).
    pub fn result(&mut self, method: &str, params: Value, within: Duration) -> Value {
        let r = self.request(method, params, within);
        assert!(r.get("error").is_none(), "{method} failed: {r}");
        r["result"].clone()
    }

    /// The params of the first `publishDiagnostics` of `uri` since
    /// message `from` of [`Editor::seen`] that `pred` accepts, waiting for
    /// new ones; `None` when none came in time.
    pub fn try_diagnostics_where(
        &mut self,
        uri: &str,
        from: usize,
        within: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> Option<Value> {
        let is = |m: &Value| is_diagnostics(m, uri) && pred(&m["params"]);
        if let Some(m) = self.seen[from..].iter().find(|m| is(m)) {
            return Some(m["params"].clone());
        }
        let until = Instant::now() + within;
        loop {
            let m = self.next(until)?;
            if is(&m) {
                return Some(m["params"].clone());
            }
        }
    }

    /// The params of the newest `publishDiagnostics` of `uri` since
    /// message `from` that `pred` accepts, else the first new one; panics
    /// with those seen after `within`.
    pub fn diagnostics_where(
        &mut self,
        uri: &str,
        from: usize,
        within: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        let is = |m: &Value| is_diagnostics(m, uri) && pred(&m["params"]);
        if let Some(m) = self.seen[from..].iter().rev().find(|m| is(m)) {
            return m["params"].clone();
        }
        let found = self.try_diagnostics_where(uri, self.seen.len(), within, &pred);
        found.unwrap_or_else(|| {
            let got: Vec<_> = self.seen[from..]
                .iter()
                .filter(|m| is_diagnostics(m, uri))
                .collect();
            panic!("no matching diagnostics for {uri} within {within:?}; got {got:#?}")
        })
    }

    /// The first new `publishDiagnostics` of `uri` that `pred` accepts
    /// (its params); panics with those seen after `within`.
    pub fn diagnostics(
        &mut self,
        uri: &str,
        within: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        let from = self.seen.len();
        self.diagnostics_where(uri, from, within, pred)
    }

    /// Whether the server's log holds `s`.
    pub fn log_has(&self, s: &str) -> bool {
        self.stderr.lock().unwrap().contains(s)
    }

    /// How often the server's log holds `s`.
    pub fn log_count(&self, s: &str) -> usize {
        self.stderr.lock().unwrap().matches(s).count()
    }

    /// Pid of the worker serving the document (the last one logged).
    pub fn leased_pid(&self) -> i32 {
        let log = self.stderr.lock().unwrap();
        let line = log
            .lines()
            .rfind(|l| l.contains("document on a leased worker"))
            .expect("a lease logged");
        let at = line.find("pid=").expect("pid in the log line") + 4;
        line[at..]
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .unwrap()
            .parse()
            .unwrap()
    }

    /// Waits up to `within` for the process to end.
    pub fn wait_exit(&mut self, within: Duration) -> Option<ExitStatus> {
        let until = Instant::now() + within;
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                return Some(st);
            }
            if Instant::now() > until {
                return None;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// `shutdown`, `exit`, and waits for the process to end.
    pub fn exit(&mut self) {
        self.result("shutdown", Value::Null, Duration::from_secs(60));
        self.notify("exit", Value::Null);
        let st = self.wait_exit(Duration::from_secs(60));
        assert!(st.is_some(), "leanpool lsp did not exit");
    }
}

fn is_diagnostics(m: &Value, uri: &str) -> bool {
    m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == uri
}

/// `(line, severity, message)` of each diagnostic in `params`, sorted.
pub fn lines(params: &Value) -> Vec<(u64, u64, String)> {
    let mut v: Vec<_> = params["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["range"]["start"]["line"].as_u64().unwrap(),
                d["severity"].as_u64().unwrap_or(0),
                d["message"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    v.sort();
    v
}
