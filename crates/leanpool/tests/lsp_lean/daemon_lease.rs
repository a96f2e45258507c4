//! `editor_session_through_a_daemon_lease`: `leanpool lsp --socket`.

use crate::client::Lsp;
use crate::daemon_support::{self, alive, Daemon, Lean};
use crate::{messages, pos, rpc, wait_for, TEXT, URI};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

pub(crate) fn editor_session_through_a_daemon_lease() {
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
