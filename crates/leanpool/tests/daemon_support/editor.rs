//! A minimal editor for `leanpool lsp`: LSP over the child's stdio
//! (`Content-Length` frames), the server's own requests answered `null`.
//! Enough to open one file and read its diagnostics.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
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

/// One `leanpool lsp` process.
pub struct Editor {
    child: Child,
    stdin: ChildStdin,
    rx: mpsc::Receiver<Value>,
    next_id: i64,
}

impl Editor {
    /// Runs `leanpool ARGS` (e.g. `lsp --socket S`) and initializes it.
    pub fn start(args: &[&str]) -> Editor {
        let mut child = Command::new(super::BIN)
            .args(args)
            .env("RUST_LOG", "info")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let rx = read_frames(BufReader::new(child.stdout.take().unwrap()));
        let mut e = Editor {
            child,
            stdin,
            rx,
            next_id: 1,
        };
        let init = json!({ "processId": null, "rootUri": null, "capabilities": {} });
        e.request("initialize", init, Duration::from_secs(60));
        e.notify("initialized", json!({}));
        e
    }

    fn send(&mut self, v: &Value) {
        let body = serde_json::to_vec(v).unwrap();
        write!(self.stdin, "Content-Length: {}\r\n\r\n", body.len()).unwrap();
        self.stdin.write_all(&body).unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends a notification (`params: null` left out).
    pub fn notify(&mut self, method: &str, params: Value) {
        let mut m = json!({ "jsonrpc": "2.0", "method": method });
        if !params.is_null() {
            m["params"] = params;
        }
        self.send(&m);
    }

    /// The next message within `until`, the server's requests answered.
    fn next(&mut self, until: Instant) -> Option<Value> {
        let m = self
            .rx
            .recv_timeout(until.checked_duration_since(Instant::now())?)
            .ok()?;
        if m.get("method").is_some() && m.get("id").is_some() {
            self.send(&json!({ "jsonrpc": "2.0", "id": m["id"], "result": null }));
        }
        Some(m)
    }

    /// Sends a request; its whole answer.
    pub fn request(&mut self, method: &str, params: Value, within: Duration) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let mut m = json!({ "jsonrpc": "2.0", "id": id, "method": method });
        if !params.is_null() {
            m["params"] = params;
        }
        self.send(&m);
        let until = Instant::now() + within;
        loop {
            let m = self
                .next(until)
                .unwrap_or_else(|| panic!("no answer to {method}"));
            if m["id"] == json!(id) && m.get("method").is_none() {
                return m;
            }
        }
    }

    /// Opens `uri` with `text` (version 1).
    pub fn open(&mut self, uri: &str, text: &str) {
        let doc = json!({ "uri": uri, "languageId": "lean4", "version": 1, "text": text });
        self.notify("textDocument/didOpen", json!({ "textDocument": doc }));
    }

    /// The first `publishDiagnostics` of `uri` that `pred` accepts (its
    /// params); panics with those seen after `within`.
    pub fn diagnostics(
        &mut self,
        uri: &str,
        within: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        let until = Instant::now() + within;
        let mut seen = vec![];
        loop {
            let Some(m) = self.next(until) else {
                panic!("no matching diagnostics for {uri} within {within:?}; got {seen:#?}");
            };
            if m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == uri {
                if pred(&m["params"]) {
                    return m["params"].clone();
                }
                seen.push(m["params"].clone());
            }
        }
    }

    /// `shutdown`, `exit`, and waits for the process to end.
    pub fn exit(mut self) {
        self.request("shutdown", Value::Null, Duration::from_secs(60));
        self.notify("exit", Value::Null);
        let until = Instant::now() + Duration::from_secs(60);
        while self.child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < until, "leanpool lsp did not exit");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
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
