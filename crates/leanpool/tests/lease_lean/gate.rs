//! The gate's rules through a real lease: nothing before the holder's
//! first text, every Lean 4.28 method served by Lean or refused, params
//! only about the leased document, `data` only as Lean issued it, RPC
//! only Lean's procedures, the imports fixed, positions inside the text.

use crate::tunnel::{is_error, Tunnel};
use crate::{daemon_support::Rules, HEADER, SECRET};
use leanpool_lean::leased::rules::{request_rule, Rule, LEAN_CLIENT_METHODS, NOTIFICATIONS};
use leanpool_protocol::lsp_error;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

pub(crate) const SHORT: Duration = Duration::from_secs(60);

/// Before the holder's first text, other documents, methods off the
/// list, data Lean did not issue, RPC procedures of the caller's, far
/// positions, other imports.
pub(crate) fn gate_rules(b: &mut Tunnel, uri: &str, v0: i64, rules: &mut Rules) {
    before_first_text(b, uri, rules);
    holders_text(b, uri, v0 + 1);
    every_lean_method(b, uri, v0 + 1, rules);
    method_and_param_rules(b, uri, rules);
    resolve_and_rpc_rules(b, uri, rules);
    imports_and_positions(b, uri, v0 + 2, rules);
}

/// The position `l`:`c` in the leased document.
pub(crate) fn at(uri: &str, l: u64, c: u64) -> Value {
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
                    && ans.to_string().contains("not served through a lease")
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
        is_error(&ans, lsp_error::METHOD_NOT_FOUND)
            && ans.to_string().contains("not served through a lease"),
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
