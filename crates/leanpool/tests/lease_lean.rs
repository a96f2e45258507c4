//! Issue 26's attacks on the daemon's `lease` tunnel, on real Lean (the
//! WASM build installed by `scripts/setup`; FAILS when it is missing),
//! one daemon and two worker starts for all of them: caller A's `check`
//! (a secret in its text) on the pool's worker, caller B's lease on the
//! same imports (a process started for it). The same rules through
//! `leanpool lsp` (stdio and `--socket`): `lsp_lean.rs`.

mod daemon_support;

use daemon_support::{alive, Daemon, Lean};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

const HEADER: &str = "import Lean.Server.CodeActions.Basic\n";
const SECRET: &str = "hunter2-SECRET-7781";

/// One JSON-RPC call on a fresh connection; the whole answer.
fn call(socket: &std::path::Path, method: &str, params: Value) -> Value {
    let mut c = Tunnel::open(socket);
    c.send(&json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params }));
    c.until(Duration::from_secs(900), |m| m["id"] == 1)
}

struct Tunnel {
    wr: UnixStream,
    rd: BufReader<UnixStream>,
    /// Every line received, for the "never leaked" checks.
    all: String,
}

impl Tunnel {
    fn open(socket: &std::path::Path) -> Tunnel {
        let s = UnixStream::connect(socket).unwrap();
        Tunnel {
            rd: BufReader::new(s.try_clone().unwrap()),
            wr: s,
            all: String::new(),
        }
    }

    fn send(&mut self, v: &Value) {
        self.wr.write_all(format!("{v}\n").as_bytes()).unwrap();
    }

    /// The next message `pick` accepts within `within` (others skipped).
    fn until(&mut self, within: Duration, pick: impl Fn(&Value) -> bool) -> Value {
        let end = Instant::now() + within;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "nothing matching within {within:?}");
            self.wr.set_read_timeout(Some(left)).unwrap();
            self.rd.get_ref().set_read_timeout(Some(left)).unwrap();
            let mut line = String::new();
            let n = self.rd.read_line(&mut line).expect("a message in time");
            assert!(n > 0, "the connection closed");
            self.all.push_str(&line);
            let m: Value = serde_json::from_str(&line).unwrap();
            if pick(&m) {
                return m;
            }
        }
    }

    fn request(&mut self, id: &str, method: &str, params: Value, within: Duration) -> Value {
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        self.until(within, |m| m["id"] == id && m.get("method").is_none())
    }
}

fn pool_pids(socket: &std::path::Path) -> Vec<u64> {
    let st = call(socket, "status", json!({}));
    st["result"]["pool"]["keys"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|k| k["workers"].as_array().unwrap().iter())
        .filter_map(|w| w["pid"].as_u64())
        .collect()
}

#[test]
fn attack_lease_sees_no_other_callers_text_runs_no_callers_code_and_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(
        dir.path(),
        "max_leases = 1\n[pool]\nmax_workers = 1\nspares_per_key = 0\nstart_timeout_ms = 600000\n",
        Lean::Real,
    );
    let long = Duration::from_secs(900);
    let short = Duration::from_secs(60);
    // Caller A: a secret, its declarations, a goal and messages.
    let a_text = format!(
        "{HEADER}def victimPassword : String := \"{SECRET}\"\ntheorem victimGoal : victimPassword.length = 19 := by\n  sorry\n"
    );
    let a = call(&daemon.socket, "check", json!({ "text": a_text }));
    assert_eq!(a["result"]["status"], "sorry", "{a}");
    let serving = pool_pids(&daemon.socket);
    assert_eq!(serving.len(), 1);

    // Caller B leases the same imports: never A's worker (rule: the pool
    // hands out pristine workers only).
    let mut b = Tunnel::open(&daemon.socket);
    let r = b.request("lease", "lease", json!({ "header": HEADER }), long);
    let r = r["result"].clone();
    let (uri, v0, pid) = (
        r["uri"].as_str().unwrap().to_string(),
        r["version"].as_i64().unwrap(),
        r["pid"].as_u64().unwrap(),
    );
    assert!(
        !serving.contains(&pid),
        "the lease got the worker that ran A's text"
    );

    // Before B's first text: nothing reaches Lean's document (rule: no
    // request before the holder's first text).
    let td = json!({ "uri": uri });
    let at =
        |l: u64, c: u64| json!({ "textDocument": td, "position": { "line": l, "character": c } });
    let probes = [
        (
            "s0",
            "textDocument/documentSymbol",
            json!({ "textDocument": td }),
        ),
        ("s1", "textDocument/hover", at(1, 5)),
        ("s2", "$/lean/plainGoal", at(3, 2)),
        ("s3", "$/lean/rpc/connect", json!({ "uri": uri })),
        (
            "s4",
            "$/lean/rpc/call",
            json!({ "textDocument": td, "position": { "line": 0, "character": 0 },
            "sessionId": "0", "method": "Lean.Widget.getInteractiveDiagnostics", "params": {} }),
        ),
    ];
    for (id, m, p) in probes {
        let ans = b.request(id, m, p, short);
        assert_eq!(
            ans["error"]["code"], -32803,
            "{m} before the first text: {ans}"
        );
    }
    assert!(
        !b.all.contains(SECRET) && !b.all.contains("victim"),
        "A's text leaked: {}",
        b.all
    );

    // B's text declares a code-action provider that reads the daemon's
    // environment (a plain def: the attribute is refused by the guard).
    let b_text = format!(
        "{HEADER}open Lean Server in\npublic def rtlMin : CodeActionProvider := fun _ _ => do\n  let h ← (IO.getEnv \"HOME\" : IO _)\n  return #[{{ eager := {{ title := s!\"env:{{h}}\" }} }}]\ntheorem mine : 2 + 2 = 4 := by\n  sorry\n"
    );
    b.send(&json!({ "jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
        "textDocument": { "uri": uri, "version": v0 + 1 }, "contentChanges": [{ "text": b_text }] } }));
    let w = b.request(
        "w1",
        "textDocument/waitForDiagnostics",
        json!({ "uri": uri, "version": v0 + 1 }),
        long,
    );
    assert!(w.get("error").is_none(), "{w}");
    // Lean's answers are about B's own text now.
    let syms = b.request(
        "s5",
        "textDocument/documentSymbol",
        json!({ "textDocument": td }),
        short,
    );
    assert!(syms.to_string().contains("mine"), "{syms}");

    // `codeAction/resolve` naming B's provider (rule: only data Lean
    // issued through this lease).
    let forged = json!({ "title": "x", "data": { "providerName": "rtlMin", "providerResultIndex": 0,
        "params": { "textDocument": td, "range": { "start": { "line": 0, "character": 0 }, "end": { "line": 0, "character": 0 } },
                    "context": { "diagnostics": [] } } } });
    let ans = b.request("r1", "codeAction/resolve", forged, short);
    assert_eq!(ans["error"]["code"], -32602, "{ans}");
    // RPC: only Lean's own procedures.
    let s = b.request("c1", "$/lean/rpc/connect", json!({ "uri": uri }), short);
    let session = s["result"]["sessionId"].clone();
    assert!(session.is_string(), "{s}");
    let rpc = |m: &str| {
        json!({ "textDocument": td, "position": { "line": 0, "character": 0 },
        "sessionId": session, "method": m, "params": {} })
    };
    let ans = b.request("c2", "$/lean/rpc/call", rpc("rtlMin"), short);
    assert_eq!(ans["error"]["code"], -32602, "{ans}");
    let ans = b.request(
        "c3",
        "$/lean/rpc/call",
        rpc("Lean.Widget.getInteractiveDiagnostics"),
        short,
    );
    assert!(ans.get("result").is_some(), "{ans}");
    assert!(!b.all.contains("env:"), "B's provider ran: {}", b.all);

    // A hover far outside the text is answered at once (it pinned a core
    // forever), and the worker still answers (rule: positions inside).
    let t = Instant::now();
    let far = json!({ "textDocument": td, "position": { "line": 2147483648u64, "character": 1099511627776u64 } });
    let ans = b.request("h1", "textDocument/hover", far, short);
    assert_eq!(ans["error"]["code"], -32602, "{ans}");
    assert!(t.elapsed() < Duration::from_secs(5));
    let ans = b.request("h2", "textDocument/hover", at(5, 10), short);
    assert!(ans.get("result").is_some(), "{ans}");

    // Other imports: refused (rule: a lease keeps its imports).
    b.send(&json!({ "jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
        "textDocument": { "uri": uri, "version": v0 + 2 }, "contentChanges": [{ "text": "import Lean\n#check 1\n" }] } }));
    let m = b.until(short, |m| m["method"] == "$/leanpool/refused");
    assert!(
        m["params"]["message"].as_str().unwrap().contains("imports"),
        "{m}"
    );

    // The pool kept its worker for A's imports, warm: counted.
    assert_eq!(pool_pids(&daemon.socket), serving);
    let st = call(&daemon.socket, "status", json!({}));
    assert_eq!(st["result"]["pool"]["counters"]["leases_fresh"], 1, "{st}");
    assert_eq!(st["result"]["pool"]["counters"]["cold_waits"], 1, "{st}");
    let again = call(
        &daemon.socket,
        "check",
        json!({ "text": format!("{HEADER}theorem u : True := trivial\n") }),
    );
    assert_eq!(again["result"]["status"], "ok", "{again}");
    let st = call(&daemon.socket, "status", json!({}));
    assert_eq!(
        st["result"]["pool"]["counters"]["cold_waits"], 1,
        "a check waited for a start: {st}"
    );
    drop(b);
    let until = Instant::now() + short;
    while alive(pid as i32) {
        assert!(
            Instant::now() < until,
            "the leased worker outlived its lease"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
