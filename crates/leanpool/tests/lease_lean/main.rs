//! Issue 26's attacks on the daemon's `lease` tunnel, on real Lean (the
//! WASM build installed by `scripts/setup`; FAILS when it is missing),
//! one daemon and three worker starts for all of them: caller A's `check`
//! (a secret in its text) on the pool's worker; caller B's lease on the
//! same imports (a process started for it) for the gate's rules (every
//! method Lean 4.28 knows: served by Lean or refused), the per-request
//! time limit and the grace after it; a second lease for the CPU budget. Each rule
//! is checked by name ([`Rules`]) so that a run with rules disabled shows
//! every one failing. The same rules through `leanpool lsp` (stdio and
//! `--socket`): `lsp_lean.rs`.

mod daemon_support;

use daemon_support::{
    alive, quiet_or_gone, slow_theorems_round, slower_theorems, Daemon, Lean, Rules,
};
use leanpool_lean::leased::rules::{request_rule, Rule, LEAN_CLIENT_METHODS, NOTIFICATIONS};
use leanpool_protocol::lsp_error;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

const HEADER: &str = "import Lean.Server.CodeActions.Basic\n";
const SECRET: &str = "hunter2-SECRET-7781";
/// The daemon's lease caps here: 15 s per request (then the default 10 s
/// grace), 60 s of CPU per lease (the gate's rules use some 8 s of it
/// before the time-limit check, which must end at its own limit and the
/// grace's, not at the budget: 20 s did not leave room for it on the CI
/// machine, 45 s left a few seconds at the grace's end).
const CONFIG: &str = "max_leases = 1\nlease_request_timeout_ms = 15000\nlease_cpu_ms = 60000\n[pool]\nmax_workers = 1\nspares_per_key = 0\nstart_timeout_ms = 600000\n";

/// One JSON-RPC call on a fresh connection; the whole answer.
fn call(socket: &std::path::Path, method: &str, params: Value) -> Value {
    let mut c = Tunnel::open(socket);
    c.send(&json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params }));
    c.until(Duration::from_secs(900), |m| m["id"] == 1)
        .expect("an answer")
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
        // A closed tunnel shows in what comes back.
        let _ = self.wr.write_all(format!("{v}\n").as_bytes());
    }

    /// The next message `pick` accepts within `within` (others skipped);
    /// `None` when nothing matched in time or the connection closed.
    fn until(&mut self, within: Duration, pick: impl Fn(&Value) -> bool) -> Option<Value> {
        let end = Instant::now() + within;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            self.rd.get_ref().set_read_timeout(Some(left)).unwrap();
            let mut line = String::new();
            match self.rd.read_line(&mut line) {
                Ok(n) if n > 0 => {}
                _ => return None,
            }
            self.all.push_str(&line);
            let m: Value = serde_json::from_str(&line).unwrap();
            if pick(&m) {
                return Some(m);
            }
        }
    }

    /// The answer to a request, or `{"noAnswer": ...}`.
    fn request(&mut self, id: &str, method: &str, params: Value, within: Duration) -> Value {
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        self.until(within, |m| m["id"] == id && m.get("method").is_none())
            .unwrap_or_else(|| json!({ "noAnswer": format!("{method} within {within:?}") }))
    }

    fn lease(&mut self) -> (String, i64, u64) {
        let r = self.request(
            "lease",
            "lease",
            json!({ "header": HEADER }),
            Duration::from_secs(900),
        );
        let r = &r["result"];
        (
            r["uri"].as_str().expect("a lease").to_string(),
            r["version"].as_i64().unwrap(),
            r["pid"].as_u64().unwrap(),
        )
    }

    fn change(&mut self, uri: &str, version: i64, text: &str) {
        self.send(&json!({ "jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": { "uri": uri, "version": version }, "contentChanges": [{ "text": text }] } }));
    }
}

fn is_error(ans: &Value, code: i64) -> bool {
    ans["error"]["code"] == code
}

/// Waits up to `within` for `pid` to be gone.
fn gone_within(pid: u64, within: Duration) -> bool {
    let until = Instant::now() + within;
    while alive(pid as i32) {
        if Instant::now() > until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    true
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
    let daemon = Daemon::start(dir.path(), CONFIG, Lean::Real);
    let mut rules = Rules::default();
    // Caller A: a secret, its declarations, a goal and messages.
    let a_text = format!(
        "{HEADER}def victimPassword : String := \"{SECRET}\"\ntheorem victimGoal : victimPassword.length = 19 := by\n  sorry\n"
    );
    let a = call(&daemon.socket, "check", json!({ "text": a_text }));
    assert_eq!(a["result"]["status"], "sorry", "{a}");
    let serving = pool_pids(&daemon.socket);
    assert_eq!(serving.len(), 1);

    let mut b = Tunnel::open(&daemon.socket);
    let (uri, v0, pid) = b.lease();
    rules.check(
        "clean lease: never the worker that ran another caller's text",
        !serving.contains(&pid),
        format!("leased pid {pid}, the pool's {serving:?}"),
    );
    gate_rules(&mut b, &uri, v0, &mut rules);
    time_limit(&mut b, &uri, v0 + 3, pid, &mut rules);
    drop(b);

    pool_kept_warm(&daemon.socket, &serving, &mut rules);

    // A second lease (once the first is freed), no request at all: the
    // CPU budget ends it, whatever one slow text costs on this machine.
    let until = Instant::now() + Duration::from_secs(60);
    while call(&daemon.socket, "status", json!({}))["result"]["daemon"]["leases"]["active"] != 0 {
        assert!(Instant::now() < until, "the first lease was not freed");
        std::thread::sleep(Duration::from_millis(200));
    }
    let mut c = Tunnel::open(&daemon.socket);
    let (uri, v0, pid) = c.lease();
    let why = spend_cpu_until_ended(&mut c, &uri, v0, pid);
    rules.check(
        "CPU budget per lease",
        why.as_deref().is_some_and(|w| w.contains("lease_cpu_ms")),
        format!("the lease ended with {why:?}"),
    );
    rules.check(
        "CPU budget per lease: the worker is killed",
        gone_within(pid, Duration::from_secs(30)),
        format!("pid {pid} still runs"),
    );
    rules.assert_all();
}

/// Issue 26 part 4: the lease did not cost the pool its warm worker for
/// A's imports (the lease got a process of its own, counted in `status`),
/// and a `check` on those imports after it waits for no start.
fn pool_kept_warm(socket: &std::path::Path, serving: &[u64], rules: &mut Rules) {
    let pids = pool_pids(socket);
    let st = call(socket, "status", json!({}));
    let counters = &st["result"]["pool"]["counters"];
    rules.check(
        "leases do not cost the pool its warmth",
        pids == serving && counters["leases_fresh"] == 1 && counters["cold_waits"] == 1,
        format!("pool pids {pids:?} (before: {serving:?}), counters {counters}"),
    );
    let again = call(
        socket,
        "check",
        json!({ "text": format!("{HEADER}theorem u : True := trivial\n") }),
    );
    let st = call(socket, "status", json!({}));
    rules.check(
        "leases do not cost the pool its warmth: the next check waits for no start",
        again["result"]["status"] == "ok" && st["result"]["pool"]["counters"]["cold_waits"] == 1,
        format!("{again}; counters {}", st["result"]["pool"]["counters"]),
    );
}

/// Edits the leased document to fresh slow texts, with no request at all,
/// until the lease ends (its reason) or 5 rounds pass (`None`). One text
/// costs 20-45 s of CPU depending on the machine: renamed theorems make
/// Lean elaborate each round anew, so the budget is reached however fast
/// the machine is. The next round starts when the worker falls quiet.
fn spend_cpu_until_ended(c: &mut Tunnel, uri: &str, v0: i64, pid: u64) -> Option<String> {
    let cpu = || leanpool_lean::proc::group_cpu_time(pid as u32).unwrap_or_default();
    let mut spent = Duration::ZERO;
    for round in 1..=5 {
        let text = slow_theorems_round(round as u64);
        c.change(uri, v0 + round, &format!("{HEADER}{text}"));
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(120) {
            let before = cpu();
            spent = spent.max(before);
            let ended = c.until(Duration::from_secs(3), |m| {
                m["method"] == "$/leanpool/leaseEnded"
            });
            if let Some(m) = ended {
                eprintln!("second lease ended in round {round}, {spent:?} of worker CPU seen");
                return Some(m["params"]["reason"].to_string());
            }
            if alive(pid as i32) && cpu().saturating_sub(before) < Duration::from_millis(300) {
                break;
            }
        }
    }
    eprintln!("second lease not ended after 5 rounds, {spent:?} of worker CPU seen");
    None
}

const SHORT: Duration = Duration::from_secs(60);

/// Before the holder's first text, other documents, methods off the
/// list, data Lean did not issue, RPC procedures of the caller's, far
/// positions, other imports.
fn gate_rules(b: &mut Tunnel, uri: &str, v0: i64, rules: &mut Rules) {
    before_first_text(b, uri, rules);
    holders_text(b, uri, v0 + 1);
    every_lean_method(b, uri, v0 + 1, rules);
    method_and_param_rules(b, uri, rules);
    resolve_and_rpc_rules(b, uri, rules);
    imports_and_positions(b, uri, v0 + 2, rules);
}

/// The position `l`:`c` in the leased document.
fn at(uri: &str, l: u64, c: u64) -> Value {
    json!({ "textDocument": { "uri": uri }, "position": { "line": l, "character": c } })
}

/// No request reaches the worker before the holder's first text, and
/// nothing of caller A's comes back.
fn before_first_text(b: &mut Tunnel, uri: &str, rules: &mut Rules) {
    let probes = [
        (
            "s0",
            "textDocument/documentSymbol",
            json!({ "textDocument": { "uri": uri } }),
        ),
        ("s1", "textDocument/hover", at(uri, 1, 5)),
        ("s2", "$/lean/plainGoal", at(uri, 3, 2)),
        ("s3", "$/lean/rpc/connect", json!({ "uri": uri })),
    ];
    for (id, m, p) in probes {
        let ans = b.request(id, m, p, SHORT);
        rules.check(
            "clean lease: no request before the holder's first text",
            is_error(&ans, lsp_error::REQUEST_FAILED),
            format!("{m}: {ans}"),
        );
    }
    rules.check(
        "clean lease: no other caller's text",
        !b.all.contains(SECRET) && !b.all.contains("victim"),
        &b.all,
    );
}

/// B's text declares a code-action provider that reads the daemon's
/// environment (a plain def: the attribute is refused by the guard).
fn holders_text(b: &mut Tunnel, uri: &str, version: i64) {
    let b_text = format!(
        "{HEADER}open Lean Server in\npublic def rtlMin : CodeActionProvider := fun _ _ => do\n  let h ← (IO.getEnv \"HOME\" : IO _)\n  return #[{{ eager := {{ title := s!\"env:{{h}}\" }} }}]\ntheorem mine : 2 + 2 = 4 := by\n  sorry\n"
    );
    b.change(uri, version, &b_text);
    let w = b.request(
        "w1",
        "textDocument/waitForDiagnostics",
        json!({ "uri": uri, "version": version }),
        SHORT,
    );
    assert!(w.get("result").is_some(), "B's text elaborates: {w}");
    let syms = b.request(
        "s5",
        "textDocument/documentSymbol",
        json!({ "textDocument": { "uri": uri } }),
        SHORT,
    );
    assert!(syms.to_string().contains("mine"), "{syms}");
}

/// Every client-to-server method Lean 4.28 knows
/// (`leased::rules::LEAN_CLIENT_METHODS`): each one the lease serves,
/// sent with good params, is answered by Lean (a completion item resolved
/// as Lean issued it; `codeAction/resolve` needs an action Lean issued
/// with `data`, which this text has none of: its refusal of the caller's
/// own data is `resolve_and_rpc_rules`'); every other one, as a request
/// and as a notification, is refused by the gate and never reaches Lean.
fn every_lean_method(b: &mut Tunnel, uri: &str, version: i64, rules: &mut Rules) {
    let s = b.request("e-c", "$/lean/rpc/connect", json!({ "uri": uri }), SHORT);
    let session = s["result"]["sessionId"].clone();
    for (i, &m) in LEAN_CLIENT_METHODS.iter().enumerate() {
        let id = format!("e{i}");
        let rule = request_rule(m);
        if matches!(rule, Some(Rule::Resolve(_))) {
            continue;
        }
        if rule.is_some() {
            let ans = b.request(&id, m, lean_params(rule, uri, version, &session), SHORT);
            rules.check(
                "every Lean 4.28 method: each one a lease serves is answered by Lean",
                ans.get("result").is_some(),
                format!("{m}: {ans}"),
            );
        } else if !NOTIFICATIONS.contains(&m) {
            let ans = b.request(&id, m, json!({ "textDocument": { "uri": uri } }), SHORT);
            b.send(&json!({ "jsonrpc": "2.0", "method": m, "params": { "uri": uri } }));
            let note = b.until(Duration::from_secs(10), |n| {
                n["method"] == "$/leanpool/refused" && n["params"]["method"] == m
            });
            rules.check(
                "every Lean 4.28 method: each other one is refused by the gate",
                is_error(&ans, lsp_error::METHOD_NOT_FOUND)
                    && ans.to_string().contains("lease")
                    && note.is_some(),
                format!("{m}: {ans}, as a notification: {note:?}"),
            );
        }
    }
    // A completion item Lean issued (`IO.ge|t`: IO's names), resolved.
    let items = b.request("e-i", "textDocument/completion", at(uri, 3, 17), SHORT);
    let item = items["result"]["items"][0].clone();
    let ans = b.request("e-r", "completionItem/resolve", item, SHORT);
    rules.check(
        "every Lean 4.28 method: each one a lease serves is answered by Lean",
        ans.get("result").is_some(),
        format!("completionItem/resolve of {items}: {ans}"),
    );
}

/// Good params of a request by its rule, about B's text (its line 5:
/// `theorem mine : 2 + 2 = 4 := by`).
fn lean_params(rule: Option<Rule>, uri: &str, version: i64, session: &Value) -> Value {
    let td = json!({ "uri": uri });
    let position = json!({ "line": 5, "character": 10 });
    let range =
        json!({ "start": { "line": 5, "character": 0 }, "end": { "line": 5, "character": 5 } });
    match rule {
        Some(Rule::WaitForDiagnostics) => json!({ "uri": uri, "version": version }),
        Some(Rule::RpcConnect) => json!({ "uri": uri }),
        Some(Rule::RpcCall) => json!({ "textDocument": td, "position": position,
            "sessionId": session, "method": "Lean.Widget.getInteractiveDiagnostics", "params": {} }),
        Some(Rule::DocRange) => json!({ "textDocument": td, "range": range }),
        Some(Rule::CodeAction) => {
            json!({ "textDocument": td, "range": range, "context": { "diagnostics": [] } })
        }
        _ => json!({ "textDocument": td, "position": position }),
    }
}

/// A method one Lean's file worker answers but a lease does not serve;
/// another document in the params.
fn method_and_param_rules(b: &mut Tunnel, uri: &str, rules: &mut Rules) {
    let ans = b.request(
        "m1",
        "textDocument/documentColor",
        json!({ "textDocument": { "uri": uri } }),
        SHORT,
    );
    rules.check(
        "method allowlist",
        is_error(&ans, lsp_error::METHOD_NOT_FOUND) && ans.to_string().contains("lease"),
        &ans,
    );
    let other = json!({ "textDocument": { "uri": "file:///etc/passwd" } });
    let ans = b.request("p1", "textDocument/documentSymbol", other, SHORT);
    rules.check(
        "param rules: only the leased document",
        is_error(&ans, lsp_error::INVALID_PARAMS),
        &ans,
    );
}

/// `codeAction/resolve` naming B's provider, and RPC calls: only Lean's
/// own procedures, and the provider never runs.
fn resolve_and_rpc_rules(b: &mut Tunnel, uri: &str, rules: &mut Rules) {
    let td = json!({ "uri": uri });
    let forged = json!({ "title": "x", "data": { "providerName": "rtlMin", "providerResultIndex": 0,
        "params": { "textDocument": td, "range": { "start": { "line": 0, "character": 0 }, "end": { "line": 0, "character": 0 } },
                    "context": { "diagnostics": [] } } } });
    let ans = b.request("r1", "codeAction/resolve", forged, SHORT);
    rules.check(
        "codeAction/resolve: only data Lean issued through the lease",
        is_error(&ans, lsp_error::INVALID_PARAMS),
        &ans,
    );
    let s = b.request("c1", "$/lean/rpc/connect", json!({ "uri": uri }), SHORT);
    let session = s["result"]["sessionId"].clone();
    assert!(session.is_string(), "{s}");
    let rpc = |m: &str| {
        json!({ "textDocument": td, "position": { "line": 0, "character": 0 },
        "sessionId": session, "method": m, "params": {} })
    };
    let ans = b.request("c2", "$/lean/rpc/call", rpc("rtlMin"), SHORT);
    rules.check(
        "RPC: only Lean's builtin procedures",
        is_error(&ans, lsp_error::INVALID_PARAMS),
        &ans,
    );
    let ans = b.request(
        "c3",
        "$/lean/rpc/call",
        rpc("Lean.Widget.getInteractiveDiagnostics"),
        SHORT,
    );
    assert!(ans.get("result").is_some(), "{ans}");
    rules.check(
        "no caller code ran",
        !b.all.contains("env:"),
        "a provider's `env:` title came back",
    );
}

/// Other imports are refused; a hover far outside the text is answered
/// at once (it pinned a core forever), and the worker still answers.
fn imports_and_positions(b: &mut Tunnel, uri: &str, version: i64, rules: &mut Rules) {
    b.change(uri, version, "import Lean\n#check 1\n");
    let m = b.until(Duration::from_secs(10), |m| {
        m["method"] == "$/leanpool/refused"
    });
    rules.check(
        "imports fixed",
        m.as_ref()
            .is_some_and(|m| m["params"]["message"].to_string().contains("imports")),
        format!("{m:?}"),
    );
    let t = Instant::now();
    let far = json!({ "textDocument": { "uri": uri }, "position": { "line": 2147483648u64, "character": 1099511627776u64 } });
    let ans = b.request("h1", "textDocument/hover", far, Duration::from_secs(10));
    rules.check(
        "positions inside the text",
        is_error(&ans, lsp_error::INVALID_PARAMS) && t.elapsed() < Duration::from_secs(5),
        &ans,
    );
    let ans = b.request("h2", "textDocument/hover", at(uri, 5, 10), SHORT);
    rules.check(
        "positions inside the text: the worker still answers",
        ans.get("result").is_some(),
        &ans,
    );
}

/// A request past the lease's limit (15 s) is answered `RequestFailed` at
/// the limit and cancelled in Lean; Lean computes on (the text lasts over
/// a minute: a `waitForDiagnostics` is answered only when the text is
/// elaborated), so the grace (10 s) ends the lease, before the CPU budget
/// would (60 s; with the grace removed the budget ends it, its reason
/// named).
fn time_limit(b: &mut Tunnel, uri: &str, version: i64, pid: u64, rules: &mut Rules) {
    b.change(uri, version, &format!("{HEADER}{}", slower_theorems()));
    let t = Instant::now();
    let ans = b.request(
        "t1",
        "textDocument/waitForDiagnostics",
        json!({ "uri": uri, "version": version }),
        Duration::from_secs(60),
    );
    let took = t.elapsed();
    rules.check(
        "per-request time limit",
        // The limit's own answer: the CPU budget ending the lease answers
        // -32803 too, and must not pass for it.
        is_error(&ans, lsp_error::REQUEST_FAILED)
            && ans["error"]["message"].to_string().contains("per request")
            && took >= Duration::from_secs(14)
            && took < Duration::from_secs(30),
        format!("after {took:?}: {ans}"),
    );
    let ended = b.until(Duration::from_secs(60), |m| {
        m["method"] == "$/leanpool/leaseEnded"
    });
    let after = t.elapsed();
    eprintln!("lease ended {after:?} after the request: {ended:?}");
    rules.check(
        "grace: a cancelled request Lean goes on computing ends the lease",
        ended.as_ref().is_some_and(|m| {
            m["params"]["reason"]
                .to_string()
                .contains("past its time limit after it was cancelled")
        }) && after < Duration::from_secs(45),
        format!("{after:?} after the request: {ended:?}"),
    );
    // Whatever ended it, the worker does not go on computing.
    let quiet = quiet_or_gone(pid, Duration::from_secs(120));
    eprintln!(
        "after the time limit: worker {pid} {}",
        if alive(pid as i32) {
            "alive and quiet"
        } else {
            "gone"
        }
    );
    rules.check(
        "a request past its limit does not leave the worker computing",
        quiet,
        format!("worker {pid} still computing 120 s after the limit"),
    );
}
