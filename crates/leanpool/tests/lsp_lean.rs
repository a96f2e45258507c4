//! `leanpool lsp` driven over stdio as an editor would, on real Lean (the
//! WASM build installed by `scripts/setup`; FAILS when it is missing):
//! open a file with an error and a `sorry` on a warm spare, diagnostics
//! with their ranges, hover, `$/lean/plainGoal`, `$/lean/rpc/connect` +
//! `call`, an incremental edit fixing the error, the guard refusing an
//! edit (shown as a diagnostic, requests refused, Lean never sees it), a
//! request for a file that is not open, the document's worker SIGKILLed
//! under it (replaced by the refill, the file re-opened with a diagnostic
//! saying so, goals answered again), close (the worker is killed), and
//! exit leaving no Lean process. Workers: the spare, its refill starting
//! behind the lease (the feature under test, and the replacement after the
//! kill), and the refill behind that one (killed at exit). Also
//! `leanpool lsp --socket` on a daemon's leased worker (one worker start).

mod daemon_support;

use daemon_support::{alive, children_of, Daemon, Lean, Rules, BIN};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

// No hot spares: the prewarm minimum is the editor's spare (one worker
// start per refill, not two).
const CONFIG: &str = "[pool]\nmax_workers = 2\nmax_workers_per_key = 1\nspares_per_key = 0\nstart_timeout_ms = 600000\n";

const TEXT: &str =
    "theorem bad : 1 + 1 = 3 := by decide\ntheorem sorried (n : Nat) : n + 0 = n := by\n  sorry\n";
const URI: &str = "file:///tmp/leanpool-lsp-test/Test.lean";

struct Lsp {
    child: Child,
    stdin: ChildStdin,
    next_id: i64,
    /// Every message from the server, in order.
    rx: mpsc::Receiver<Value>,
    seen: Vec<Value>,
    stderr: Arc<Mutex<String>>,
}

fn frame(v: &Value) -> Vec<u8> {
    let body = serde_json::to_vec(v).unwrap();
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend(body);
    out
}

impl Lsp {
    fn start(dir: &std::path::Path) -> Lsp {
        let cfg = dir.join("lp.toml");
        std::fs::write(&cfg, CONFIG).unwrap();
        Lsp::start_with(&["lsp", "--config", cfg.to_str().unwrap(), "--prewarm", ""])
    }

    fn start_with(args: &[&str]) -> Lsp {
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

    fn send(&mut self, v: Value) {
        self.stdin.write_all(&frame(&v)).unwrap();
        self.stdin.flush().unwrap();
    }

    /// `params: null` is left out (`shutdown`, `exit` take none).
    fn notify(&mut self, method: &str, params: Value) {
        let mut m = json!({ "jsonrpc": "2.0", "method": method });
        if !params.is_null() {
            m["params"] = params;
        }
        self.send(m);
    }

    /// Next message, answering the server's own requests with `null`.
    fn next(&mut self, until: Instant) -> Option<Value> {
        let left = until.checked_duration_since(Instant::now())?;
        let m = self.rx.recv_timeout(left).ok()?;
        if m.get("method").is_some() && m.get("id").is_some() {
            self.send(json!({ "jsonrpc": "2.0", "id": m["id"], "result": null }));
        }
        self.seen.push(m.clone());
        Some(m)
    }

    /// Sends a request and returns its whole answer (`result` or `error`).
    fn request(&mut self, method: &str, params: Value, within: Duration) -> Value {
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
    fn try_request(&mut self, method: &str, params: Value, within: Duration) -> Option<Value> {
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
    fn try_diagnostics_where(
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

    fn result(&mut self, method: &str, params: Value, within: Duration) -> Value {
        let r = self.request(method, params, within);
        assert!(r.get("error").is_none(), "{method} failed: {r}");
        r["result"].clone()
    }

    /// Waits for a `publishDiagnostics` of `URI` matching `pred` (among
    /// those already seen since `from`, then new ones).
    fn diagnostics_where(
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

    fn log_has(&self, s: &str) -> bool {
        self.stderr.lock().unwrap().contains(s)
    }

    fn log_count(&self, s: &str) -> usize {
        self.stderr.lock().unwrap().matches(s).count()
    }

    /// Pid of the worker serving the document (the last one logged).
    fn leased_pid(&self) -> i32 {
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

fn messages(d: &Value) -> Vec<(u64, String)> {
    d["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                x["range"]["start"]["line"].as_u64().unwrap(),
                x["message"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn pos(line: u32, character: u32) -> Value {
    json!({ "textDocument": { "uri": URI }, "position": { "line": line, "character": character } })
}

fn wait_for(what: &str, within: Duration, mut cond: impl FnMut() -> bool) {
    let until = Instant::now() + within;
    while !cond() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn editor_session_on_a_warm_worker() {
    let dir = tempfile::tempdir().unwrap();
    let mut lsp = Lsp::start(dir.path());
    let long = Duration::from_secs(900);
    let short = Duration::from_secs(60);

    let init = lsp.result(
        "initialize",
        json!({ "processId": null, "rootUri": null, "capabilities": {} }),
        short,
    );
    let caps = &init["capabilities"];
    assert_eq!(caps["hoverProvider"], true);
    assert_eq!(
        caps["textDocumentSync"]["change"], 2,
        "incremental sync, as Lean's server"
    );
    assert_eq!(
        caps["semanticTokensProvider"]["legend"]["tokenTypes"][23],
        "leanSorryLike"
    );
    lsp.notify("initialized", json!({}));

    // The spare for files without imports becomes ready first: the file
    // opens on an already warm worker.
    wait_for("the spare worker", long, || lsp.log_has("worker ready"));
    let opened = Instant::now();
    lsp.notify("textDocument/didOpen", json!({ "textDocument": { "uri": URI, "languageId": "lean4", "version": 1, "text": TEXT } }));
    let d = lsp.diagnostics_where(0, short, |p| {
        p["version"] == 1 && p["diagnostics"].as_array().unwrap().len() >= 2
    });
    let first_diagnostics = opened.elapsed();
    let mut m = messages(&d);
    m.sort();
    assert_eq!(m.len(), 2, "{d}");
    assert_eq!(m[0].0, 0);
    assert!(m[0].1.contains("decide"), "{m:?}");
    assert_eq!(m[1].0, 1);
    assert!(m[1].1.contains("sorry"), "{m:?}");
    // Ranges in the editor's own text: the error is on `decide` (columns 30..36).
    let err = d["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["severity"] == 1)
        .unwrap()
        .clone();
    assert_eq!(
        err["range"]["start"],
        json!({ "line": 0, "character": 30 }),
        "{err}"
    );
    eprintln!(
        "FIGURE lsp didOpen -> first complete diagnostics on a warm worker: {:.2} s",
        first_diagnostics.as_secs_f64()
    );

    // waitForDiagnostics is answered (a barrier for the version).
    lsp.result(
        "textDocument/waitForDiagnostics",
        json!({ "uri": URI, "version": 1 }),
        short,
    );

    // Hover on `Nat` (line 1, columns 21..24) and the goal at the `sorry`.
    let h = lsp.result("textDocument/hover", pos(1, 22), short);
    assert!(h["contents"].to_string().contains("Nat"), "{h}");
    assert_eq!(h["range"]["start"]["line"], 1, "{h}");
    let g = lsp.result("$/lean/plainGoal", pos(2, 2), short);
    let goal = g["goals"][0].as_str().unwrap_or_default().to_string();
    assert!(
        goal.contains("n : Nat") && goal.contains("⊢ n + 0 = n"),
        "{g}"
    );

    // The infoview's RPC: connect, then a call at the sorry.
    let s = lsp.result("$/lean/rpc/connect", json!({ "uri": URI }), short);
    let session = s["sessionId"].clone();
    assert!(session.is_string(), "{s}");
    let call = json!({ "textDocument": { "uri": URI }, "position": { "line": 2, "character": 2 }, "sessionId": session,
        "method": "Lean.Widget.getInteractiveGoals", "params": { "textDocument": { "uri": URI }, "position": { "line": 2, "character": 2 } } });
    let goals = lsp.result("$/lean/rpc/call", call, short);
    assert!(
        goals["goals"].as_array().is_some_and(|a| a.len() == 1),
        "{goals}"
    );
    lsp.notify(
        "$/lean/rpc/keepAlive",
        json!({ "uri": URI, "sessionId": session }),
    );

    // Documents that are not open: a proper error, not silence.
    let r = lsp.request("textDocument/hover", json!({ "textDocument": { "uri": "file:///nope.lean" }, "position": { "line": 0, "character": 0 } }), short);
    assert_eq!(r["error"]["code"], -32602, "{r}");

    // An incremental edit fixes the error: `3` -> `2` at 0:22.
    let mark = lsp.seen.len();
    lsp.notify("textDocument/didChange", json!({ "textDocument": { "uri": URI, "version": 2 },
        "contentChanges": [{ "range": { "start": { "line": 0, "character": 22 }, "end": { "line": 0, "character": 23 } }, "text": "2" }] }));
    let d = lsp.diagnostics_where(mark, short, |p| {
        p["version"] == 2 && p["diagnostics"].as_array().unwrap().len() == 1
    });
    assert!(messages(&d)[0].1.contains("sorry"), "{d}");

    // An edit the guard refuses: shown as a diagnostic at the command,
    // requests refused, Lean does not see it.
    let mark = lsp.seen.len();
    lsp.notify("textDocument/didChange", json!({ "textDocument": { "uri": URI, "version": 3 },
        "contentChanges": [{ "range": { "start": { "line": 3, "character": 0 }, "end": { "line": 3, "character": 0 } }, "text": "#eval IO.println \"x\"\n" }] }));
    let d = lsp.diagnostics_where(mark, short, |p| p["version"] == 3);
    let refused = &d["diagnostics"][0];
    assert_eq!(d["diagnostics"].as_array().unwrap().len(), 1, "{d}");
    assert!(
        refused["message"].as_str().unwrap().contains("refused"),
        "{d}"
    );
    assert_eq!(
        refused["range"]["start"],
        json!({ "line": 3, "character": 0 }),
        "{d}"
    );
    let r = lsp.request("$/lean/plainGoal", pos(2, 2), short);
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("refused"),
        "{r}"
    );
    // Taken out again: Lean's diagnostics are back.
    let mark = lsp.seen.len();
    lsp.notify("textDocument/didChange", json!({ "textDocument": { "uri": URI, "version": 4 },
        "contentChanges": [{ "range": { "start": { "line": 3, "character": 0 }, "end": { "line": 4, "character": 0 } }, "text": "" }] }));
    let d = lsp.diagnostics_where(mark, short, |p| {
        p["version"] == 4
            && p["diagnostics"]
                .as_array()
                .unwrap()
                .iter()
                .any(|x| x["message"].as_str().unwrap().contains("sorry"))
    });
    assert_eq!(d["diagnostics"].as_array().unwrap().len(), 1, "{d}");

    // The document's worker is killed under it: once the refill behind
    // the lease is warm, SIGKILL; the file is re-opened on the refill with
    // a diagnostic saying so, next to Lean's own, and answers again.
    let first = lsp.leased_pid();
    wait_for("the refill behind the lease", long, || {
        lsp.log_count("worker ready") >= 2
    });
    let mark = lsp.seen.len();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(first),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let d = lsp.diagnostics_where(mark, short, |p| {
        let msgs: Vec<String> = p["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["message"].as_str().unwrap_or_default().to_string())
            .collect();
        msgs.iter().any(|m| m.contains("sorry"))
            && msgs
                .iter()
                .any(|m| m.contains("re-opened on a fresh worker"))
    });
    assert_eq!(d["version"], 4, "{d}");
    let note = d["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["source"] == "leanpool")
        .unwrap()
        .clone();
    assert_eq!(note["severity"], 2, "{note}");
    assert!(
        note["message"].as_str().unwrap().contains("stopped"),
        "{note}"
    );
    assert_eq!(
        d["diagnostics"].as_array().unwrap().len(),
        2,
        "sorry + the note: {d}"
    );
    let replacement = lsp.leased_pid();
    assert_ne!(replacement, first, "a new worker serves the file");
    assert!(!alive(first));
    let g = lsp.result("$/lean/plainGoal", pos(2, 2), short);
    assert!(
        g["goals"][0]
            .as_str()
            .unwrap_or_default()
            .contains("⊢ n + 0 = n"),
        "{g}"
    );
    assert!(alive(replacement));

    // Close: the worker is recycled (killed), not kept.
    lsp.notify(
        "textDocument/didClose",
        json!({ "textDocument": { "uri": URI } }),
    );
    wait_for("the document's worker to be killed", short, || {
        !alive(replacement)
    });
    let r = lsp.request("$/lean/plainGoal", pos(2, 2), short);
    assert_eq!(r["error"]["code"], -32602, "{r}");

    lsp.result("shutdown", Value::Null, short);
    lsp.notify("exit", Value::Null);
    let pid = lsp.child.id() as i32;
    let kids = children_of(pid);
    // `exit` alone ends the process, stdin still open (editors wait for
    // the exit before closing it; tower-lsp alone would not notice). A
    // message after `exit` (Neovim sends a second `shutdown`) must not
    // keep it alive either.
    // (Written even if the process is already gone: a broken pipe is fine.)
    let _ = lsp.stdin.write_all(&frame(
        &json!({ "jsonrpc": "2.0", "id": 999, "method": "shutdown" }),
    ));
    let _ = lsp.stdin.flush();
    let until = Instant::now() + short;
    loop {
        if let Some(st) = lsp.child.try_wait().unwrap() {
            assert!(st.success(), "{st:?}");
            break;
        }
        assert!(
            Instant::now() < until,
            "leanpool lsp did not exit after `exit` (stdin open)"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(lsp.stdin);
    wait_for("no Lean process left", short, || {
        kids.iter().all(|&k| !alive(k))
    });
}

/// `leanpool lsp --socket`: the document's worker is leased from a running
/// daemon (`lease`). One worker start (the daemon has no prewarm, so the
/// lease starts it and nothing refills behind it): open with an error and a
/// `sorry`, diagnostics with their ranges, hover, an incremental edit
/// (sent to the daemon as the whole text) fixing the error, the lease
/// counted in the daemon's `status` and other callers served meanwhile,
/// close (the daemon kills the worker), exit. The tunnel's guard, caps and
/// forged frames: leanpool-daemon's `lease_fake`.
#[test]
fn editor_session_through_a_daemon_lease() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(
        dir.path(),
        "[pool]\nmax_workers = 1\nspares_per_key = 0\nstart_timeout_ms = 600000\n",
        Lean::Real,
    );
    let mut lsp = Lsp::start_with(&["lsp", "--socket", daemon.socket.to_str().unwrap()]);
    let long = Duration::from_secs(900);
    let short = Duration::from_secs(60);
    lsp.result(
        "initialize",
        json!({ "processId": null, "rootUri": null, "capabilities": {} }),
        short,
    );
    lsp.notify("initialized", json!({}));
    lsp.notify("textDocument/didOpen", json!({ "textDocument": { "uri": URI, "languageId": "lean4", "version": 1, "text": TEXT } }));
    let d = lsp.diagnostics_where(0, long, |p| {
        p["version"] == 1 && p["diagnostics"].as_array().unwrap().len() >= 2
    });
    let mut m = messages(&d);
    m.sort();
    assert_eq!(m.len(), 2, "{d}");
    assert!(m[0].0 == 0 && m[0].1.contains("decide"), "{m:?}");
    assert!(m[1].0 == 1 && m[1].1.contains("sorry"), "{m:?}");
    let err = d["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["severity"] == 1)
        .unwrap()
        .clone();
    assert_eq!(
        err["range"]["start"],
        json!({ "line": 0, "character": 30 }),
        "{err}"
    );
    let h = lsp.result("textDocument/hover", pos(1, 22), short);
    assert!(h["contents"].to_string().contains("Nat"), "{h}");
    let g = lsp.result("$/lean/plainGoal", pos(2, 2), short);
    assert!(
        g["goals"][0]
            .as_str()
            .unwrap_or_default()
            .contains("⊢ n + 0 = n"),
        "{g}"
    );

    // The lease is the daemon's, counted; other callers are answered.
    let leased = lsp.leased_pid();
    assert!(
        daemon_support::children_of(daemon.pid()).contains(&leased),
        "the daemon's worker serves the file"
    );
    let st = rpc(&daemon.socket, "status", json!({}));
    assert_eq!(
        (
            st["daemon"]["leases"]["active"].as_u64(),
            st["daemon"]["leases"]["granted"].as_u64()
        ),
        (Some(1), Some(1)),
        "{st}"
    );
    assert_eq!(
        rpc(&daemon.socket, "ping", json!("still served")),
        json!("still served")
    );

    let mark = lsp.seen.len();
    lsp.notify("textDocument/didChange", json!({ "textDocument": { "uri": URI, "version": 2 },
        "contentChanges": [{ "range": { "start": { "line": 0, "character": 22 }, "end": { "line": 0, "character": 23 } }, "text": "2" }] }));
    let d = lsp.diagnostics_where(mark, short, |p| {
        p["version"] == 2 && p["diagnostics"].as_array().unwrap().len() == 1
    });
    assert!(messages(&d)[0].1.contains("sorry"), "{d}");

    // Close: the connection ends, the daemon kills the worker.
    lsp.notify(
        "textDocument/didClose",
        json!({ "textDocument": { "uri": URI } }),
    );
    wait_for("the leased worker to be killed", short, || !alive(leased));
    wait_for("the lease to be freed", short, || {
        rpc(&daemon.socket, "status", json!({}))["daemon"]["leases"]["active"] == 0
    });
    lsp.result("shutdown", Value::Null, short);
    lsp.notify("exit", Value::Null);
    let until = Instant::now() + short;
    while lsp.child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < until, "leanpool lsp --socket did not exit");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// One request on a fresh connection to the daemon; its `result`.
fn rpc(socket: &std::path::Path, method: &str, params: Value) -> Value {
    let mut s = std::os::unix::net::UnixStream::connect(socket).unwrap();
    s.write_all(
        format!(
            "{}\n",
            json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params })
        )
        .as_bytes(),
    )
    .unwrap();
    let mut line = String::new();
    BufReader::new(s).read_line(&mut line).unwrap();
    let v: Value = serde_json::from_str(&line).unwrap();
    assert!(v.get("error").is_none(), "{method}: {v}");
    v["result"].clone()
}

/// Issue 13 part 4: a real editor. Debian's Neovim, headless, points its
/// built-in LSP client at `leanpool lsp` (tests/lsp_nvim.lua: start the
/// client, wait for the warm spare, attach the buffer), opens a file with
/// one error and one `sorry`, waits for the diagnostics, asks for a hover
/// and the plain goal at the `sorry`, fixes the error with an incremental
/// edit and sees it clear, then stops the client. Checked here: the exact
/// ranges and messages Neovim received and shows, the answers, and that
/// no process of the server outlives the editor. FAILS when `nvim` is
/// missing (scripts/setup installs it). Lean workers: the spare the file
/// opens on, and the refill behind the lease (killed at exit, part-started).
#[test]
fn neovim_headless_session() {
    let nvim = std::env::var_os("PATH")
        .and_then(|p| std::env::split_paths(&p).map(|d| d.join("nvim")).find(|f| f.is_file()))
        .expect("nvim not found on PATH: the real-editor test needs Neovim (scripts/setup installs it: apt-get install neovim)");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let file = d.join("Test.lean");
    std::fs::write(&file, TEXT).unwrap();
    std::fs::write(d.join("lp.toml"), CONFIG).unwrap();
    let lua = d.join("lsp_nvim.lua");
    std::fs::write(&lua, include_str!("lsp_nvim.lua")).unwrap();
    let (log, pidfile, result) = (d.join("lsp.log"), d.join("lsp.pid"), d.join("result.json"));
    let mut child = Command::new(nvim)
        .args(["--headless", "-u", "NONE", "-i", "NONE", "-n"])
        .arg(&file)
        .arg("-c")
        .arg(format!("luafile {}", lua.display()))
        .current_dir(d)
        .env("LEANPOOL_BIN", BIN)
        .env("LP_CONFIG", d.join("lp.toml"))
        .env("LP_LOG", &log)
        .env("LP_PIDFILE", &pidfile)
        .env("LP_RESULT", &result)
        .env("RUST_LOG", "info")
        // Neovim's own files (lsp.log, shada, swap) stay in the temp dir.
        .env("XDG_CONFIG_HOME", d.join("xdg/config"))
        .env("XDG_CACHE_HOME", d.join("xdg/cache"))
        .env("XDG_STATE_HOME", d.join("xdg/state"))
        .env("XDG_DATA_HOME", d.join("xdg/data"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("nvim starts");
    // Every process the server starts, seen while the editor runs.
    let mut server = None;
    let mut workers = std::collections::BTreeSet::new();
    let until = Instant::now() + Duration::from_secs(1200);
    let status = loop {
        if server.is_none() {
            server = std::fs::read_to_string(&pidfile)
                .ok()
                .and_then(|s| s.trim().parse::<i32>().ok());
        }
        if let Some(s) = server {
            workers.extend(children_of(s));
        }
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "nvim did not finish; server log:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let server_log = std::fs::read_to_string(&log).unwrap_or_default();
    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(&result).unwrap_or_else(|e| {
            panic!("no record from nvim ({e}), exit {status:?}; server log:\n{server_log}")
        }))
        .unwrap();
    eprintln!("nvim record: {record:#}");
    assert!(
        status.success() && record.get("error").is_none(),
        "nvim: {status:?} {record:#}\nserver log:\n{server_log}"
    );

    // What the server sent for the opened text: the error on `decide`
    // (0:30..0:36) and the `sorry` warning on the theorem's name (1:8..1:15),
    // positions in the editor's own text.
    let first = record["published"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["diagnostics"].as_array().is_some_and(|a| a.len() == 2))
        .unwrap_or_else(|| panic!("no complete diagnostics: {record:#}"));
    assert_eq!(
        first["uri"],
        format!("file://{}", file.display()),
        "{first}"
    );
    let mut ds: Vec<Value> = first["diagnostics"].as_array().unwrap().clone();
    ds.sort_by_key(|x| x["range"]["start"]["line"].as_u64());
    assert_eq!(ds[0]["severity"], 1, "{first}");
    assert_eq!(
        ds[0]["range"],
        json!({ "start": { "line": 0, "character": 30 }, "end": { "line": 0, "character": 36 } }),
        "{first}"
    );
    assert!(
        ds[0]["message"].as_str().unwrap().contains("decide"),
        "{first}"
    );
    assert_eq!(ds[1]["severity"], 2, "{first}");
    assert_eq!(
        ds[1]["range"]["start"],
        json!({ "line": 1, "character": 8 }),
        "{first}"
    );
    assert_eq!(ds[1]["message"], "declaration uses `sorry`", "{first}");
    // What Neovim shows (0-based lines, byte columns: the text is ASCII).
    let shown = record["opened"].as_array().unwrap();
    assert_eq!(shown.len(), 2, "{record:#}");
    assert_eq!(
        (
            shown[0]["lnum"].as_u64(),
            shown[0]["col"].as_u64(),
            shown[0]["end_col"].as_u64()
        ),
        (Some(0), Some(30), Some(36)),
        "{record:#}"
    );
    assert_eq!(
        (shown[1]["lnum"].as_u64(), shown[1]["col"].as_u64()),
        (Some(1), Some(8)),
        "{record:#}"
    );
    eprintln!(
        "FIGURE nvim attach -> diagnostics shown, warm worker: {:.0} ms",
        record["open_ms"].as_f64().unwrap()
    );

    let hover = &record["hover"];
    assert!(
        hover["err"].is_null() && hover["result"]["contents"].to_string().contains("Nat"),
        "{hover}"
    );
    let goal = &record["goal"];
    let g = goal["result"]["goals"][0].as_str().unwrap_or_default();
    assert!(g.contains("n : Nat") && g.contains("⊢ n + 0 = n"), "{goal}");

    // After the edit: the error cleared, the `sorry` warning left, shown
    // and as sent.
    let after = record["after_edit"].as_array().unwrap();
    assert_eq!(after.len(), 1, "{record:#}");
    assert_eq!(after[0]["lnum"], 1, "{record:#}");
    let last = record["published"].as_array().unwrap().last().unwrap();
    assert_eq!(last["diagnostics"].as_array().unwrap().len(), 1, "{last}");
    assert_eq!(
        last["diagnostics"][0]["message"], "declaration uses `sorry`",
        "{last}"
    );

    // Stopped cleanly: the server and every Lean worker it started are gone.
    assert_eq!(record["stopped"], true, "{record:#}");
    let server = server.expect("the server wrote its pid");
    assert!(!workers.is_empty(), "the server started no worker?");
    wait_for(
        "the server and its workers to exit",
        Duration::from_secs(60),
        || !alive(server) && workers.iter().all(|&w| !alive(w)),
    );
}

/// Issue 26's attacks through the editor bridge, on real Lean: the same
/// rules as the daemon's `lease` tunnel (`lease_lean.rs`) hold on stdio
/// (`leanpool lsp`, the gate in the bridge) and with `--socket` (the
/// daemon's gate behind the bridge's). The file declares a code-action
/// provider reading the environment; `codeAction/resolve` naming it and
/// an RPC call of it are refused, a hover far outside the text is
/// answered at once and the worker keeps answering; requests right
/// behind edits see the edited text; a text with other imports is
/// refused (no new worker) and served again with the lease's; a slow
/// text's `waitForDiagnostics` (right behind its edit) is answered `RequestFailed` at the request limit
/// (15 s) and the worker is ended (the cancel's grace or the lease's CPU
/// budget, 45 s); re-opened by the next edit on a fresh worker, the slow
/// text alone ends it by the CPU budget. With `--socket` the daemon first
/// checks another caller's secret: the file's worker is never that one.
/// Two worker starts per path. Rules are checked by name ([`Rules`]).
#[test]
fn attack_editor_bridge_refuses_callers_providers_and_far_positions() {
    let caps = "lease_request_timeout_ms = 15000\nlease_cpu_ms = 45000\n";
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("lp.toml");
    std::fs::write(&cfg, format!("{caps}{CONFIG}")).unwrap();
    let mut rules = Rules::default();
    let mut lsp = Lsp::start_with(&["lsp", "--config", cfg.to_str().unwrap(), "--no-prewarm"]);
    bridge_attacks(&mut lsp, &mut rules, "stdio");
    drop(lsp);
    let daemon = Daemon::start(
        dir.path(),
        &format!("{caps}[pool]\nmax_workers = 1\nspares_per_key = 0\nstart_timeout_ms = 600000\n"),
        Lean::Real,
    );
    let secret = "import Lean.Server.CodeActions.Basic\ndef victimPassword : String := \"hunter2-SECRET-7781\"\n";
    let a = rpc(&daemon.socket, "check", json!({ "text": secret }));
    assert_eq!(a["status"], "ok", "{a}");
    let mut lsp = Lsp::start_with(&["lsp", "--socket", daemon.socket.to_str().unwrap()]);
    bridge_attacks(&mut lsp, &mut rules, "--socket");
    rules.assert_all();
}

fn bridge_attacks(lsp: &mut Lsp, rules: &mut Rules, path: &str) {
    let long = Duration::from_secs(900);
    let short = Duration::from_secs(60);
    lsp.result(
        "initialize",
        json!({ "processId": null, "rootUri": null, "capabilities": {} }),
        short,
    );
    lsp.notify("initialized", json!({}));
    let header = "import Lean.Server.CodeActions.Basic\n";
    let text = format!("{header}open Lean Server in\npublic def rtlMin : CodeActionProvider := fun _ _ => do\n  let h ← (IO.getEnv \"HOME\" : IO _)\n  return #[{{ eager := {{ title := s!\"env:{{h}}\" }} }}]\ntheorem mine : 2 + 2 = 4 := by\n  sorry\n");
    lsp.notify("textDocument/didOpen", json!({ "textDocument": { "uri": URI, "languageId": "lean4", "version": 1, "text": text } }));
    let d = lsp.diagnostics_where(0, long, |p| {
        p["version"] == 1
            && p["diagnostics"]
                .as_array()
                .unwrap()
                .iter()
                .any(|d| d["message"].as_str().unwrap_or("").contains("sorry"))
    });
    assert!(
        !d["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["severity"] == 1),
        "the provider must elaborate for the attack to mean anything: {d}"
    );
    let syms = lsp.result(
        "textDocument/documentSymbol",
        json!({ "textDocument": { "uri": URI } }),
        short,
    );
    rules.check(
        "clean lease: no other caller's text",
        !syms.to_string().contains("victim"),
        format!("{path}: {syms}"),
    );
    let range =
        json!({ "start": { "line": 0, "character": 0 }, "end": { "line": 0, "character": 0 } });
    let forged = json!({ "title": "x", "data": { "providerName": "rtlMin", "providerResultIndex": 0,
        "params": { "textDocument": { "uri": URI }, "range": range, "context": { "diagnostics": [] } } } });
    let ans = lsp.request("codeAction/resolve", forged, short);
    rules.check(
        "codeAction/resolve: only data Lean issued",
        ans["error"]["code"] == -32602,
        format!("{path}: {ans}"),
    );
    let s = lsp.result("$/lean/rpc/connect", json!({ "uri": URI }), short);
    let call = json!({ "textDocument": { "uri": URI }, "position": { "line": 0, "character": 0 },
        "sessionId": s["sessionId"], "method": "rtlMin", "params": {} });
    let ans = lsp.request("$/lean/rpc/call", call, short);
    rules.check(
        "RPC: only Lean's builtin procedures",
        ans["error"]["code"] == -32602,
        format!("{path}: {ans}"),
    );
    // Far outside the text: the numbers through a Lean method
    // (JSON params: they reach the gate as sent), and numbers a typed
    // LSP position (u32) holds through `hover` (tower-lsp would refuse the
    // issue's own before the gate).
    let far = |l: u64, c: u64| json!({ "textDocument": { "uri": URI }, "position": { "line": l, "character": c } });
    for (m, p) in [
        ("$/lean/plainGoal", far(2147483648, 1099511627776)),
        ("textDocument/hover", far(4000000000, 4000000000)),
        ("textDocument/hover", far(6, 4000000000)),
    ] {
        let t = Instant::now();
        let ans = lsp.try_request(m, p, Duration::from_secs(10));
        rules.check(
            "positions inside the text",
            ans.as_ref().is_some_and(|a| a["error"]["code"] == -32602)
                && t.elapsed() < Duration::from_secs(5),
            format!("{path}: {m}: {ans:?}"),
        );
    }
    let h = lsp.try_request("textDocument/hover", pos(5, 10), short);
    rules.check(
        "positions inside the text: the worker still answers",
        h.as_ref().is_some_and(|h| !h["result"].is_null()),
        format!("{path}: {h:?}"),
    );
    rules.check(
        "no caller code ran",
        !lsp.seen.iter().any(|m| m.to_string().contains("env:")),
        format!("{path}: the file's provider ran"),
    );
    let v = bridge_order_and_imports(lsp, rules, path, header, &text);
    bridge_limits(lsp, rules, path, header, v);
    lsp.result("shutdown", Value::Null, short);
    lsp.notify("exit", Value::Null);
    let until = Instant::now() + short;
    while lsp.child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < until, "leanpool lsp did not exit");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Requests right behind edits are checked against the edited text (the
/// bridge's document actor takes both in the editor's order; before, a
/// hover on a line the edit adds could reach the gate first and be
/// refused as outside the text), and a text with other imports than the
/// worker was leased for is refused (shown, never sent: no new worker),
/// served again once the imports are back. The next version, returned.
fn bridge_order_and_imports(
    lsp: &mut Lsp,
    rules: &mut Rules,
    path: &str,
    header: &str,
    text: &str,
) -> u64 {
    let short = Duration::from_secs(60);
    let mut body = text.to_string();
    for v in 2..=6u64 {
        // Cheap lines: the lease's CPU budget must be left for the
        // time-limit check that follows.
        for j in 0..8 {
            body.push_str(&format!("theorem order{v}_{j} : True := trivial\n"));
        }
        let line = body.lines().count() as u32 - 1;
        lsp.notify(
            "textDocument/didChange",
            json!({ "textDocument": { "uri": URI, "version": v }, "contentChanges": [{ "text": body }] }),
        );
        let h = lsp.try_request("textDocument/hover", pos(line, 9), short);
        rules.check(
            "requests in the editor's order with its edits",
            h.as_ref().is_some_and(|h| h.get("error").is_none()),
            format!("{path}: version {v}, line {line}: {h:?}"),
        );
    }
    let leases = lsp.log_count("document on a leased worker");
    let mark = lsp.seen.len();
    let other = body.replacen(header, &format!("{header}import Lean.Elab.Command\n"), 1);
    lsp.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": URI, "version": 7 }, "contentChanges": [{ "text": other }] }),
    );
    let d = lsp.try_diagnostics_where(mark, short, |p| p["version"] == 7);
    let h = lsp.try_request("textDocument/hover", pos(5, 10), short);
    rules.check(
        "a leased text keeps its imports",
        d.as_ref().is_some_and(|d| {
            d["diagnostics"]
                .to_string()
                .contains("imports the lease was granted for")
        }) && h.as_ref().is_some_and(|h| h["error"]["code"] == -32803)
            && lsp.log_count("document on a leased worker") == leases,
        format!("{path}: {d:?}, then hover {h:?}"),
    );
    lsp.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": URI, "version": 8 }, "contentChanges": [{ "text": body }] }),
    );
    let h = lsp.try_request("textDocument/hover", pos(5, 10), short);
    rules.check(
        "a leased text keeps its imports: served again with them",
        h.as_ref().is_some_and(|h| !h["result"].is_null()),
        format!("{path}: {h:?}"),
    );
    9
}

/// The per-request time limit and the CPU budget through the bridge
/// (from version `v` on).
fn bridge_limits(lsp: &mut Lsp, rules: &mut Rules, path: &str, header: &str, v: u64) {
    let slow = format!("{header}{}", daemon_support::slow_theorems());
    let pid = lsp.leased_pid();
    lsp.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": URI, "version": v },
        "contentChanges": [{ "text": slow }] }),
    );
    // Right behind the edit: the gate sees the edit first (the bridge's
    // document actor takes requests in the editor's order with edits).
    let t = Instant::now();
    let ans = lsp.try_request(
        "textDocument/waitForDiagnostics",
        json!({ "uri": URI, "version": v }),
        Duration::from_secs(60),
    );
    let took = t.elapsed();
    rules.check(
        "per-request time limit",
        // The limit's own answer (the CPU budget's end answers -32803 too).
        ans.as_ref().is_some_and(|a| {
            a["error"]["code"] == -32803
                && a["error"]["message"].to_string().contains("per request")
        }) && took >= Duration::from_secs(14)
            && took < Duration::from_secs(30),
        format!("{path}: after {took:?}: {ans:?}"),
    );
    // Lean was asked to cancel: either it ends the elaboration there (the
    // worker falls quiet) or the lease's limits end the worker.
    let quiet = daemon_support::quiet_or_gone(pid as u64, Duration::from_secs(120));
    eprintln!(
        "{path}: after the time limit, worker {pid} {}",
        if alive(pid) {
            "alive and quiet"
        } else {
            "gone"
        }
    );
    rules.check(
        "a request past its limit does not leave the worker computing",
        quiet,
        format!("{path}: worker {pid} still computing 120 s after the limit"),
    );
    // The next edit (on the same worker if it is quiet, else re-opened on
    // a fresh one) changes the first line after the header, so Lean
    // elaborates every slow theorem again: with no request at all, the
    // CPU budget ends it.
    let mark = lsp.seen.len();
    let body = daemon_support::slow_theorems();
    lsp.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": URI, "version": v + 1 },
        "contentChanges": [{ "text": format!("{header}theorem again : True := trivial\n{body}") }] }),
    );
    let ended = lsp.try_diagnostics_where(mark, Duration::from_secs(900), |p| {
        p["diagnostics"].to_string().contains("was ended")
    });
    let second = lsp.leased_pid();
    rules.check(
        "CPU budget per lease",
        ended
            .as_ref()
            .is_some_and(|e| e.to_string().contains("lease_cpu_ms")),
        format!("{path}: pids {pid} then {second}: {ended:?}"),
    );
    rules.check(
        "CPU budget per lease: the worker is killed",
        wait_until(Duration::from_secs(30), || !alive(second)),
        format!("{path}: pid {second} still runs"),
    );
}

fn wait_until(within: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + within;
    while !cond() {
        if Instant::now() > until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    true
}
