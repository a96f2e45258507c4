//! `editor_session_through_a_daemon_lease`'s phases: `leanpool lsp
//! --socket` on a worker leased from a running daemon.

use crate::daemon_support::editor::Editor;
use crate::daemon_support::{alive, children_of, Daemon};
use crate::{
    assert_goal_at_the_sorry, first_error, messages, pos, rpc, wait_for, SHORT, TEXT, URI,
};
use serde_json::json;
use std::time::Duration;

/// `TEXT` opened through the daemon (its lease starts the worker): the
/// error and the `sorry` at their ranges, a hover, the goal.
pub(crate) fn open_through(daemon: &Daemon) -> Editor {
    let mut lsp = Editor::start(&["lsp", "--socket", daemon.socket.to_str().unwrap()]);
    lsp.open(URI, TEXT);
    let d = lsp.diagnostics_where(URI, 0, Duration::from_secs(900), |p| {
        p["version"] == 1 && p["diagnostics"].as_array().unwrap().len() >= 2
    });
    let mut m = messages(&d);
    m.sort();
    assert_eq!(m.len(), 2, "{d}");
    assert!(m[0].0 == 0 && m[0].1.contains("decide"), "{m:?}");
    assert!(m[1].0 == 1 && m[1].1.contains("sorry"), "{m:?}");
    let err = first_error(&d);
    assert_eq!(
        err["range"]["start"],
        json!({ "line": 0, "character": 30 }),
        "{err}"
    );
    let h = lsp.result("textDocument/hover", pos(1, 22), SHORT);
    assert!(h["contents"].to_string().contains("Nat"), "{h}");
    assert_goal_at_the_sorry(&mut lsp, SHORT);
    lsp
}

/// The lease is the daemon's, counted; other callers are answered. The
/// leased worker's pid.
pub(crate) fn lease_counted(lsp: &Editor, daemon: &Daemon) -> i32 {
    let leased = lsp.leased_pid();
    assert!(
        children_of(daemon.pid()).contains(&leased),
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
    leased
}

/// An incremental edit (sent to the daemon as the whole text) fixes the
/// error; close: the connection ends, the daemon kills the worker and
/// frees the lease; exit.
pub(crate) fn edit_close_exit(lsp: &mut Editor, daemon: &Daemon, leased: i32) {
    let mark = lsp.seen.len();
    lsp.notify("textDocument/didChange", json!({ "textDocument": { "uri": URI, "version": 2 },
        "contentChanges": [{ "range": { "start": { "line": 0, "character": 22 }, "end": { "line": 0, "character": 23 } }, "text": "2" }] }));
    let d = lsp.diagnostics_where(URI, mark, SHORT, |p| {
        p["version"] == 2 && p["diagnostics"].as_array().unwrap().len() == 1
    });
    assert!(messages(&d)[0].1.contains("sorry"), "{d}");

    lsp.notify(
        "textDocument/didClose",
        json!({ "textDocument": { "uri": URI } }),
    );
    wait_for("the leased worker to be killed", SHORT, || !alive(leased));
    wait_for("the lease to be freed", SHORT, || {
        rpc(&daemon.socket, "status", json!({}))["daemon"]["leases"]["active"] == 0
    });
    lsp.exit();
}
