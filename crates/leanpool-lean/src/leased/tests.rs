//! The gate's rules without Lean (each also attacked on real Lean in
//! `crates/leanpool/tests/lease_lean/`).

use super::rules::{Rule, LEAN_CLIENT_METHODS, NOTIFICATIONS, REQUESTS};
use super::*;
use leanpool_protocol::lsp_error;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const URI: &str = "file:///leanpool/Doc.lean";
const TEXT: &str = "theorem t : 1 = 1 := rfl\n-- héllo\n";

fn gate() -> (Gate, Instant) {
    let now = Instant::now();
    (Gate::new(URI, "", 2, LeaseLimits::default(), now), now)
}

fn with_text() -> (Gate, Instant) {
    let (mut g, now) = gate();
    let p = json!({ "textDocument": { "uri": URI, "version": 3 }, "contentChanges": [{ "text": TEXT }] });
    let e = g.edit(&p, now).unwrap();
    let screened = leanpool_screen::guard::screen(&e.text, &Default::default()).unwrap();
    g.accepted(e.version, &screened, now).unwrap();
    (g, now)
}

fn pos(line: u64, character: u64) -> Value {
    json!({ "line": line, "character": character })
}

/// Params that satisfy `rule` on [`with_text`]'s gate.
fn good_params(rule: Rule) -> Value {
    let td = json!({ "uri": URI });
    let range = json!({ "start": pos(0, 0), "end": pos(1, 2) });
    match rule {
        Rule::Doc => json!({ "textDocument": td }),
        Rule::DocPosition | Rule::Completion => {
            json!({ "textDocument": td, "position": pos(0, 3) })
        }
        Rule::DocRange => json!({ "textDocument": td, "range": range }),
        Rule::CodeAction => {
            json!({ "textDocument": td, "range": range, "context": { "diagnostics": [] } })
        }
        Rule::WaitForDiagnostics => json!({ "uri": URI, "version": 3 }),
        Rule::RpcConnect => json!({ "uri": URI }),
        Rule::Resolve(_) | Rule::RpcCall => Value::Null,
    }
}

#[test]
fn every_lean_method_is_allowed_with_a_rule_or_refused() {
    for &m in LEAN_CLIENT_METHODS {
        let (mut g, now) = with_text();
        let listed = REQUESTS.iter().any(|(r, _)| *r == m);
        let r = g.request(
            json!(1),
            (),
            m,
            &json!({ "textDocument": { "uri": URI } }),
            now,
        );
        if !listed {
            assert_eq!(r.unwrap_err().code, lsp_error::METHOD_NOT_FOUND, "{m}");
        }
        if !NOTIFICATIONS.contains(&m) || m == "textDocument/didChange" {
            let n = g.notification(m, &json!({ "uri": URI }), now);
            assert_eq!(n.unwrap_err().code, lsp_error::METHOD_NOT_FOUND, "{m}");
        }
    }
    for &(m, rule) in REQUESTS {
        assert!(LEAN_CLIENT_METHODS.contains(&m), "{m} is not a Lean method");
        let (mut g, now) = with_text();
        let good = good_params(rule);
        if !good.is_null() {
            let sent = g.request(json!("a"), (), m, &good, now).unwrap();
            assert_eq!(sent["method"], m);
            // Another document: refused, whatever the method.
            let mut other = good.clone();
            crate::leased::tests::set_uri(&mut other, "file:///etc/passwd");
            let e = g.request(json!("b"), (), m, &other, now).unwrap_err();
            assert_eq!(e.code, lsp_error::INVALID_PARAMS, "{m}");
        }
    }
}

fn set_uri(v: &mut Value, uri: &str) {
    if v.get("textDocument").is_some() {
        v["textDocument"]["uri"] = uri.into();
    } else {
        v["uri"] = uri.into();
    }
}

#[test]
fn attack_requests_before_the_first_text_are_refused() {
    let (mut g, now) = gate();
    for &(m, rule) in REQUESTS {
        let e = g
            .request(json!(1), (), m, &good_params(rule), now)
            .unwrap_err();
        assert_eq!(e.code, lsp_error::REQUEST_FAILED, "{m}: {e:?}");
    }
}

#[test]
fn attack_positions_outside_the_text_are_refused() {
    let (mut g, now) = with_text();
    for p in [
        pos(2147483648, 1099511627776),
        pos(3, 0),
        pos(1, 9),
        pos(0, 25),
    ] {
        let params = json!({ "textDocument": { "uri": URI }, "position": p });
        let e = g
            .request(json!(1), (), "textDocument/hover", &params, now)
            .unwrap_err();
        assert_eq!(e.code, lsp_error::INVALID_PARAMS, "{p}");
    }
    // The last line (after the final newline) is empty; `é` is one unit.
    for p in [pos(2, 0), pos(1, 8), pos(0, 24)] {
        let params = json!({ "textDocument": { "uri": URI }, "position": p });
        assert!(
            g.request(json!(1), (), "textDocument/hover", &params, now)
                .is_ok(),
            "{p}"
        );
    }
}

#[test]
fn unknown_fields_are_dropped() {
    let (mut g, now) = with_text();
    let p = json!({ "textDocument": { "uri": URI, "x": 1 }, "position": pos(0, 1), "workDoneToken": "t", "data": { "providerName": "evil" } });
    let sent = g
        .request(json!(1), (), "textDocument/hover", &p, now)
        .unwrap();
    assert_eq!(
        sent["params"],
        json!({ "textDocument": { "uri": URI }, "position": pos(0, 1) })
    );
}

#[test]
fn attack_code_action_resolve_with_callers_data_is_refused() {
    let (mut g, now) = with_text();
    let forged = json!({ "title": "x", "data": { "providerName": "rtlMin", "providerResultIndex": 0,
        "params": good_params(Rule::CodeAction) } });
    let e = g
        .request(json!(1), (), "codeAction/resolve", &forged, now)
        .unwrap_err();
    assert_eq!(e.code, lsp_error::INVALID_PARAMS);
    // An action Lean issued comes back exactly as issued.
    let sent = g
        .request(
            json!(2),
            (),
            "textDocument/codeAction",
            &good_params(Rule::CodeAction),
            now,
        )
        .unwrap();
    let lean_data = json!({ "providerName": "Lean.CodeAction.cmdCodeActionProvider", "providerResultIndex": 0 });
    let answer = json!({ "jsonrpc": "2.0", "id": sent["id"], "result": [{ "title": "t", "data": lean_data }] });
    let FromLean::Answer((), a) = g.from_lean(answer).unwrap() else {
        panic!()
    };
    let item = a["result"][0].clone();
    assert_eq!(item["data"]["leanpool"], "0.0");
    let mut tampered = item.clone();
    tampered["data"]["providerName"] = "rtlMin".into();
    tampered["title"] = "changed".into();
    let r = g
        .request(json!(3), (), "codeAction/resolve", &tampered, now)
        .unwrap();
    assert_eq!(r["params"], json!({ "title": "t", "data": lean_data }));
    // Not as a completion item.
    assert!(g
        .request(json!(4), (), "completionItem/resolve", &item, now)
        .is_err());
}

#[test]
fn attack_rpc_calls_only_lean_procedures_on_issued_sessions() {
    let (mut g, now) = with_text();
    let call = |s: &str, m: &str| json!({ "textDocument": { "uri": URI }, "position": pos(0, 0), "sessionId": s, "method": m, "params": {} });
    let e = g.request(
        json!(1),
        (),
        "$/lean/rpc/call",
        &call("1", "Lean.Widget.getInteractiveDiagnostics"),
        now,
    );
    assert_eq!(
        e.unwrap_err().code,
        lsp_error::INVALID_PARAMS,
        "a session not opened through the lease"
    );
    let c = g
        .request(
            json!(2),
            (),
            "$/lean/rpc/connect",
            &json!({ "uri": URI }),
            now,
        )
        .unwrap();
    let a = json!({ "jsonrpc": "2.0", "id": c["id"], "result": { "sessionId": "77" } });
    assert!(matches!(g.from_lean(a).unwrap(), FromLean::Answer(..)));
    assert!(g
        .request(
            json!(3),
            (),
            "$/lean/rpc/call",
            &call("77", "Lean.Widget.getInteractiveDiagnostics"),
            now
        )
        .is_ok());
    let e = g.request(json!(4), (), "$/lean/rpc/call", &call("77", "rtlMin"), now);
    assert_eq!(e.unwrap_err().code, lsp_error::INVALID_PARAMS);
}

#[test]
fn attack_a_leased_text_cannot_change_its_imports() {
    let (mut g, now) = with_text();
    let p = json!({ "textDocument": { "uri": URI, "version": 4 }, "contentChanges": [{ "text": "import Lean\n#check 1\n" }] });
    assert_eq!(g.edit(&p, now).unwrap_err().code, lsp_error::INVALID_PARAMS);
    // An owner that screens texts itself (`leanpool lsp`) is refused the
    // same text at `accepted`, and requests fail until a text with the
    // lease's imports is accepted.
    let other = leanpool_screen::guard::screen("import Lean\n#check 1\n", &Default::default());
    let r = g.accepted(4, &other.unwrap(), now).unwrap_err();
    assert_eq!(r.code, lsp_error::INVALID_PARAMS);
    assert!(
        r.message.contains("imports the lease was granted for"),
        "{r:?}"
    );
    let hover = good_params(Rule::DocPosition);
    let e = g.check_request("textDocument/hover", &hover).unwrap_err();
    assert_eq!(e.code, lsp_error::REQUEST_FAILED);
    let same = leanpool_screen::guard::screen(TEXT, &Default::default()).unwrap();
    g.accepted(5, &same, now).unwrap();
    assert!(g.check_request("textDocument/hover", &hover).is_ok());
}

#[test]
fn overdue_requests_are_cancelled_then_end_the_lease() {
    let (mut g, now) = with_text();
    let p = good_params(Rule::DocPosition);
    let sent = g
        .request(json!("h"), (), "textDocument/hover", &p, now)
        .unwrap();
    assert!(g.tick(now + Duration::from_secs(59)).to_holder.is_empty());
    let t = g.tick(now + Duration::from_secs(60));
    assert_eq!(t.to_lean[0]["params"]["id"], sent["id"]);
    assert_eq!(t.to_holder[0].1["id"], "h");
    assert_eq!(t.to_holder[0].1["error"]["code"], lsp_error::REQUEST_FAILED);
    assert!(t.end.is_none());
    assert!(g.tick(now + Duration::from_secs(70)).end.is_some());
    // Lean's late answer is dropped once; a second is forged.
    let late = json!({ "jsonrpc": "2.0", "id": sent["id"], "result": null });
    assert_eq!(g.from_lean(late.clone()).unwrap(), FromLean::Drop);
    assert!(g.from_lean(late).is_err());
}

#[test]
fn idle_lease_ends() {
    let (mut g, now) = with_text();
    assert!(g.tick(now + Duration::from_secs(60)).end.is_none());
    assert!(g.tick(now + Duration::from_secs(1800)).end.is_some());
}

#[test]
fn lean_reports_on_versions_never_sent_are_forged() {
    let (mut g, _) = with_text();
    let d = |v: i64| json!({ "jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": { "uri": URI, "version": v, "diagnostics": [] } });
    assert_eq!(g.from_lean(d(2)).unwrap(), FromLean::Drop);
    assert!(matches!(g.from_lean(d(3)).unwrap(), FromLean::Holder(_)));
    assert!(g.from_lean(d(4)).is_err());
    assert!(g
        .from_lean(json!({ "jsonrpc": "2.0", "id": 5, "result": 1 }))
        .is_err());
}

/// The real-Lean attacks (`lease_lean/`, `lsp_lean/`) declare a
/// code-action provider in a plain `def`: the guard lets it through, so
/// the gate's rules are what stop its use.
#[test]
fn the_provider_of_the_real_lean_attacks_passes_the_guard() {
    let text = "import Lean.Server.CodeActions.Basic\nopen Lean Server in\npublic def rtlMin : CodeActionProvider := fun _ _ => do\n  let h ← (IO.getEnv \"HOME\" : IO _)\n  return #[{ eager := { title := s!\"env:{h}\" } }]\ntheorem mine : 2 + 2 = 4 := by\n  sorry\n";
    if let Err(r) = leanpool_screen::guard::screen(text, &Default::default()) {
        panic!("refused: {r}");
    }
}
