//! The test's LSP client: `leanpool lsp` over the child's stdio.

use crate::daemon_support::{self, BIN};
use crate::{CONFIG, URI};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub(crate) struct Lsp {
    pub(crate) child: Child,
    pub(crate) stdin: ChildStdin,
    next_id: i64,
    /// Every message from the server, in order.
    rx: mpsc::Receiver<Value>,
    pub(crate) seen: Vec<Value>,
    stderr: Arc<Mutex<String>>,
}

pub(crate) fn frame(v: &Value) -> Vec<u8> {
    let body = serde_json::to_vec(v).unwrap();
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend(body);
    out
}

impl Lsp {
    pub(crate) fn start(dir: &std::path::Path) -> Lsp {
        let cfg = dir.join("lp.toml");
        std::fs::write(&cfg, CONFIG).unwrap();
        Lsp::start_with(&["lsp", "--config", cfg.to_str().unwrap(), "--prewarm", ""])
    }

    pub(crate) fn start_with(args: &[&str]) -> Lsp {
        let mut child = Command::new(BIN)
            .args(args)
            .env("RUST_LOG", "info")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let rx = daemon_support::editor::read_frames(BufReader::new(child.stdout.take().unwrap()));
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
        Lsp {
            child,
            stdin,
            next_id: 1,
            rx,
            seen: vec![],
            stderr,
        }
    }

    pub(crate) fn send(&mut self, v: Value) {
        self.stdin.write_all(&frame(&v)).unwrap();
        self.stdin.flush().unwrap();
    }

    /// `params: null` is left out (`shutdown`, `exit` take none).
    pub(crate) fn notify(&mut self, method: &str, params: Value) {
        let mut m = json!({ "jsonrpc": "2.0", "method": method });
        if !params.is_null() {
            m["params"] = params;
        }
        self.send(m);
    }

    /// Next message, answering the server's own requests with `null`.
    pub(crate) fn next(&mut self, until: Instant) -> Option<Value> {
        let left = until.checked_duration_since(Instant::now())?;
        let m = self.rx.recv_timeout(left).ok()?;
        if m.get("method").is_some() && m.get("id").is_some() {
            self.send(json!({ "jsonrpc": "2.0", "id": m["id"], "result": null }));
        }
        self.seen.push(m.clone());
        Some(m)
    }

    /// Sends a request and returns its whole answer (`result` or `error`).
    pub(crate) fn request(&mut self, method: &str, params: Value, within: Duration) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let mut m = json!({ "jsonrpc": "2.0", "id": id, "method": method });
        if !params.is_null() {
            m["params"] = params;
        }
        self.send(m);
        let until = Instant::now() + within;
        loop {
            let m = self
                .next(until)
                .unwrap_or_else(|| panic!("no answer to {method} within {within:?}"));
            if m.get("id") == Some(&json!(id)) && m.get("method").is_none() {
                return m;
            }
        }
    }

    /// Like [`Lsp::request`], `None` when no answer came in time.
    pub(crate) fn try_request(
        &mut self,
        method: &str,
        params: Value,
        within: Duration,
    ) -> Option<Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        let until = Instant::now() + within;
        loop {
            let m = self.next(until)?;
            if m.get("id") == Some(&json!(id)) && m.get("method").is_none() {
                return Some(m);
            }
        }
    }

    /// The params of a `publishDiagnostics` of `URI` since `from`
    /// matching `pred`, `None` when none came in time.
    pub(crate) fn try_diagnostics_where(
        &mut self,
        from: usize,
        within: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> Option<Value> {
        let is = |m: &Value| {
            m["method"] == "textDocument/publishDiagnostics"
                && m["params"]["uri"] == URI
                && pred(&m["params"])
        };
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

    pub(crate) fn result(&mut self, method: &str, params: Value, within: Duration) -> Value {
        let r = self.request(method, params, within);
        assert!(r.get("error").is_none(), "{method} failed: {r}");
        r["result"].clone()
    }

    /// Waits for a `publishDiagnostics` of `URI` matching `pred` (among
    /// those already seen since `from`, then new ones).
    pub(crate) fn diagnostics_where(
        &mut self,
        from: usize,
        within: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        let is = |m: &Value| {
            m["method"] == "textDocument/publishDiagnostics"
                && m["params"]["uri"] == URI
                && pred(&m["params"])
        };
        if let Some(m) = self.seen[from..].iter().rev().find(|m| is(m)) {
            return m["params"].clone();
        }
        let until = Instant::now() + within;
        loop {
            let m = self.next(until).unwrap_or_else(|| {
                let got: Vec<_> = self.seen[from..]
                    .iter()
                    .filter(|m| m["method"] == "textDocument/publishDiagnostics")
                    .collect();
                panic!("no matching diagnostics within {within:?}; got {got:#?}")
            });
            if is(&m) {
                return m["params"].clone();
            }
        }
    }

    pub(crate) fn log_has(&self, s: &str) -> bool {
        self.stderr.lock().unwrap().contains(s)
    }

    pub(crate) fn log_count(&self, s: &str) -> usize {
        self.stderr.lock().unwrap().matches(s).count()
    }

    /// Pid of the worker serving the document (the last one logged).
    pub(crate) fn leased_pid(&self) -> i32 {
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
}
