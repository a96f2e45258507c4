//! `lease` through a real daemon (in-process server, real Unix socket, a
//! real pool) whose workers are leanpool-testkit's FAKE Lean worker
//! (`leanpool_testkit::fake_lean`: it starts in milliseconds, logs every
//! text it is sent, and forges frames on demand, which real Lean cannot be
//! made to do with the guard on). The same tunnel on real Lean:
//! `leanpool`'s `lsp_lean` test (`leanpool lsp --socket`).
//!
//! `harness = false`: this executable is also the fake worker
//! (`leanpool_testkit::harness::main`).

use leanpool_daemon::{DaemonConfig, Lean};
use leanpool_protocol::lsp_error;
use leanpool_protocol::ErrorCode;
use leanpool_testkit::daemon::Daemon;
use leanpool_testkit::harness::{fake_policies, fake_pool_config, Ctx};
use leanpool_testkit::procs;
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::UnixStream;

const T: Duration = Duration::from_secs(20);

/// The daemon library on a socket in the test's dir (the test kit's one
/// fixture, in-process), its pool's workers the fake.
async fn daemon(cx: &Ctx, max_leases: usize, max_request_bytes: usize) -> Daemon {
    let pool = fake_pool_config();
    let config = DaemonConfig {
        max_leases,
        max_request_bytes,
        shutdown_deadline_ms: 5_000,
        sandbox: fake_policies().sandbox,
        pool,
        ..DaemonConfig::default()
    };
    let lean = Lean::Command(cx.fake_command(&[]));
    Daemon::in_process(cx.dir.path(), lean, config, cx.log()).await
}

struct Conn {
    rd: BufReader<OwnedReadHalf>,
    wr: OwnedWriteHalf,
}

impl Conn {
    async fn open(socket: &Path) -> Conn {
        let (rd, wr) = UnixStream::connect(socket).await.unwrap().into_split();
        Conn {
            rd: BufReader::new(rd),
            wr,
        }
    }
    async fn send(&mut self, v: &Value) {
        self.wr
            .write_all(format!("{v}\n").as_bytes())
            .await
            .unwrap();
    }
    async fn recv(&mut self) -> Option<Value> {
        let mut line = String::new();
        let n = tokio::time::timeout(T, self.rd.read_line(&mut line))
            .await
            .expect("an answer in time")
            .unwrap_or(0);
        (n > 0).then(|| serde_json::from_str(&line).unwrap())
    }
    /// The next message that `pick` accepts; the others are skipped.
    async fn until(&mut self, what: &str, pick: impl Fn(&Value) -> bool) -> Value {
        loop {
            let m = self
                .recv()
                .await
                .unwrap_or_else(|| panic!("connection closed while waiting for {what}"));
            if pick(&m) {
                return m;
            }
        }
    }
    async fn call(&mut self, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
            .await;
        self.recv().await.expect("an answer")
    }
}

fn change(uri: &str, version: i64, text: &str) -> Value {
    json!({"jsonrpc": "2.0", "method": "textDocument/didChange",
           "params": {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]}})
}

fn is_diag(v: i64) -> impl Fn(&Value) -> bool {
    move |m| m["method"] == "textDocument/publishDiagnostics" && m["params"]["version"] == v
}

async fn status(socket: &Path) -> Value {
    let mut c = Conn::open(socket).await;
    c.call("status", json!({})).await["result"].clone()
}

async fn wait_gone(pid: u32) {
    for _ in 0..500 {
        if !procs::alive(pid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("worker {pid} still alive");
}

/// The attack: a raw socket client leases a worker and sends texts Lean
/// must never see (`#eval`), edits the tunnel does not take, requests it
/// does not serve, and a line over the size cap. Each is refused with an
/// answer, the fake worker's log shows none of them reached it, and the
/// worker still serves the acceptable text afterwards. Meanwhile other
/// connections' `check` keeps working, a second lease is refused at the
/// cap, and closing the connection kills the worker.
async fn attack_lease_refuses_what_the_guard_refuses(cx: Ctx) {
    let d = daemon(&cx, 1, 64 << 10).await;
    let mut c = Conn::open(&d.socket).await;
    let l = lease_with_eval_in_its_header(&mut c).await;
    eval_text_is_answered_never_sent(&mut c, &l).await;
    what_the_tunnel_does_not_take_is_refused(&mut c, &l).await;
    others_served_and_a_second_lease_refused(&d).await;
    an_acceptable_text_reaches_the_worker(&mut c, &l, &d).await;
    // Closing the connection kills the leased worker; the place frees.
    drop(c);
    wait_gone(l.pid).await;
    for _ in 0..100 {
        if status(&d.socket).await["daemon"]["leases"]["active"] == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(status(&d.socket).await["daemon"]["leases"]["active"], 0);
    d.shutdown().await;
}

/// A granted lease: its document's uri, first version and worker pid.
struct Leased {
    uri: String,
    v0: i64,
    pid: u32,
}

/// Leases a worker asking for a header with `#eval` in it: only the
/// imports are used.
async fn lease_with_eval_in_its_header(c: &mut Conn) -> Leased {
    let r = c
        .call("lease", json!({"header": "import Init\n\n#eval 1\n"}))
        .await;
    let r = r["result"].clone();
    let l = Leased {
        uri: r["uri"].as_str().unwrap().to_string(),
        v0: r["version"].as_i64().unwrap(),
        pid: r["pid"].as_u64().unwrap() as u32,
    };
    assert_eq!(
        r["header"], "import Init\n",
        "only the imports are used: {r}"
    );
    assert!(procs::alive(l.pid));
    l
}

/// A hover at the start of the leased document.
fn hover(uri: &str) -> Value {
    json!({"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}})
}

/// `#eval` in a full text: answered by leanpool's own diagnostic, never
/// sent; requests while the text is refused get an error, not Lean's
/// answer.
async fn eval_text_is_answered_never_sent(c: &mut Conn, l: &Leased) {
    let (uri, v0) = (&l.uri, l.v0);
    c.send(&change(
        uri,
        v0 + 1,
        "import Init\ntheorem t : True := trivial\n#eval IO.println \"pwned\"\n",
    ))
    .await;
    let m = c.until("the refusal", is_diag(v0 + 1)).await;
    let d0 = &m["params"]["diagnostics"][0];
    assert_eq!(
        (d0["source"].as_str(), d0["severity"].as_i64()),
        (Some("leanpool"), Some(1)),
        "{m}"
    );
    assert!(d0["message"].as_str().unwrap().contains("#eval"), "{m}");
    assert_eq!(
        d0["range"]["start"],
        json!({"line": 2, "character": 0}),
        "{m}"
    );
    // Requests while the text is refused: an error, not Lean's answer.
    c.send(&json!({"jsonrpc": "2.0", "id": "h0", "method": "textDocument/hover", "params": hover(uri)}))
        .await;
    let m = c.until("the hover's error", |m| m["id"] == "h0").await;
    assert_eq!(m["error"]["code"], lsp_error::REQUEST_FAILED, "{m}");
}

/// An incremental edit (the tunnel takes whole texts only), a didOpen, a
/// notification about another document: not passed, said so. A method
/// the tunnel does not serve; a line over the cap.
async fn what_the_tunnel_does_not_take_is_refused(c: &mut Conn, l: &Leased) {
    let (uri, v0) = (&l.uri, l.v0);
    let ranged = json!({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {"textDocument": {"uri": uri, "version": v0 + 2},
        "contentChanges": [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "text": "#eval 1\n"}]}});
    c.send(&ranged).await;
    let m = c
        .until("refused ranged edit", |m| {
            m["method"] == "$/leanpool/refused"
        })
        .await;
    assert!(
        m["params"]["message"]
            .as_str()
            .unwrap()
            .contains("whole texts"),
        "{m}"
    );
    let open = json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": uri, "languageId": "lean", "version": v0 + 3, "text": "#eval 2\n"}}});
    c.send(&open).await;
    let m = c
        .until("refused didOpen", |m| m["method"] == "$/leanpool/refused")
        .await;
    assert_eq!(m["params"]["method"], "textDocument/didOpen");
    c.send(&change("file:///elsewhere.lean", v0 + 4, "#eval 3\n"))
        .await;
    let m = c
        .until("refused other document", |m| {
            m["method"] == "$/leanpool/refused"
        })
        .await;
    assert!(
        m["params"]["message"]
            .as_str()
            .unwrap()
            .contains("its document"),
        "{m}"
    );
    c.send(&json!({"jsonrpc": "2.0", "id": 7, "method": "workspace/executeCommand", "params": {"command": "x"}})).await;
    let m = c.until("method not found", |m| m["id"] == 7).await;
    assert_eq!(m["error"]["code"], ErrorCode::MethodNotFound.code(), "{m}");
    c.send(&change(uri, v0 + 5, &"-".repeat(70 << 10))).await;
    let m = c.until("too large", |m| m.get("error").is_some()).await;
    assert_eq!(
        (m["id"].clone(), m["error"]["code"].as_i64()),
        (Value::Null, Some(ErrorCode::RequestTooLarge.code())),
        "{m}"
    );
}

/// Other callers are served meanwhile; a second lease is over the cap.
async fn others_served_and_a_second_lease_refused(d: &Daemon) {
    let mut other = Conn::open(&d.socket).await;
    let ok = other
        .call("check", json!({"text": "theorem u : True := trivial\n"}))
        .await;
    assert_eq!(ok["result"]["status"], "ok", "{ok}");
    let mut second = Conn::open(&d.socket).await;
    let e = second.call("lease", json!({"header": ""})).await;
    assert_eq!(e["error"]["code"], ErrorCode::Overloaded.code(), "{e}");
    let st = status(&d.socket).await;
    assert_eq!(
        st["daemon"]["leases"],
        json!({"active": 1, "max": 1, "granted": 1, "refused_texts": 1, "compromised": 0}),
        "{st}"
    );
}

/// An acceptable text reaches the worker; its answers come back with the
/// client's own ids; the fake's log shows no refused text.
async fn an_acceptable_text_reaches_the_worker(c: &mut Conn, l: &Leased, d: &Daemon) {
    let (uri, v0, pid) = (&l.uri, l.v0, l.pid);
    c.send(&change(
        uri,
        v0 + 6,
        "import Init\ntheorem t : True := trivial\n-- FAKE error\n",
    ))
    .await;
    let m = c.until("Lean's diagnostics", is_diag(v0 + 6)).await;
    assert_eq!(
        m["params"]["diagnostics"][0]["message"], "fake error",
        "{m}"
    );
    c.send(&json!({"jsonrpc": "2.0", "id": "h1", "method": "textDocument/hover", "params": hover(uri)}))
        .await;
    let m = c.until("hover", |m| m["id"] == "h1").await;
    assert_eq!(m["result"], json!({}), "{m}");
    let log = std::fs::read_to_string(&d.log).unwrap();
    assert!(
        !log.contains("eval") && !log.contains("pwned"),
        "a refused text reached a worker:\n{log}"
    );
    assert!(log.contains(&format!("{pid} -- FAKE error")), "{log}");
}

/// Code in a leased worker forging frames (diagnostics for a version never
/// sent; an answer to a request never sent): the worker is killed, counted
/// `compromised`, and the tunnel ends with the reason.
async fn attack_forged_frame_from_a_leased_worker_ends_the_lease(cx: Ctx) {
    let d = daemon(&cx, 2, 4 << 20).await;
    for (n, script) in ["forge_version", "forge_answer"].into_iter().enumerate() {
        let mut c = Conn::open(&d.socket).await;
        let r = c.call("lease", json!({"header": ""})).await["result"].clone();
        let (uri, v0, pid) = (
            r["uri"].as_str().unwrap().to_string(),
            r["version"].as_i64().unwrap(),
            r["pid"].as_u64().unwrap() as u32,
        );
        c.send(&change(
            &uri,
            v0 + 1,
            &format!("theorem t : True := trivial\n-- FAKE {script}\n"),
        ))
        .await;
        let m = c
            .until("the end of the lease", |m| {
                m["method"] == "$/leanpool/leaseEnded"
            })
            .await;
        assert!(
            m["params"]["reason"]
                .as_str()
                .unwrap()
                .contains("nobody asked for"),
            "{m}"
        );
        assert!(
            c.recv().await.is_none(),
            "the connection must close after the lease ends"
        );
        wait_gone(pid).await;
        let st = status(&d.socket).await;
        assert_eq!(st["daemon"]["leases"]["compromised"], n as u64 + 1, "{st}");
    }
    d.shutdown().await;
}

/// `lease` takes the connection over only when it is alone on it.
async fn lease_must_be_alone_on_its_connection(cx: Ctx) {
    let d = daemon(&cx, 2, 4 << 20).await;
    let mut c = Conn::open(&d.socket).await;
    // A `check` in flight (the fake sleeps), then `lease` behind it.
    c.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "check", "params": {"text": "theorem t : True := trivial\n-- FAKE sleep 300\n"}})).await;
    c.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "lease", "params": {"header": ""}}))
        .await;
    let a = c.recv().await.unwrap();
    assert_eq!(
        (a["id"].clone(), a["error"]["code"].as_i64()),
        (json!(2), Some(ErrorCode::InvalidRequest.code())),
        "{a}"
    );
    let b = c.recv().await.unwrap();
    assert_eq!(
        (b["id"].clone(), b["result"]["status"].clone()),
        (json!(1), json!("ok")),
        "{b}"
    );
    // Bad params: INVALID_PARAMS, the connection stays JSON-RPC.
    let e = c.call("lease", json!({"header": 5})).await;
    assert_eq!(e["error"]["code"], ErrorCode::InvalidParams.code(), "{e}");
    let p = c.call("ping", json!("still rpc")).await;
    assert_eq!(p["result"], "still rpc");
    d.shutdown().await;
}

fn main() {
    leanpool_testkit::harness::main(leanpool_testkit::tests![
        attack_lease_refuses_what_the_guard_refuses,
        attack_forged_frame_from_a_leased_worker_ends_the_lease,
        lease_must_be_alone_on_its_connection,
    ]);
}
