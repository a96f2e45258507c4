//! `editor_session_on_a_warm_worker`'s phases: the protocol over stdio
//! on an in-process pool's warm spare.

use crate::daemon_support::editor::Editor;
use crate::daemon_support::{alive, children_of};
use crate::{
    assert_goal_at_the_sorry, first_error, messages, pos, wait_for, CONFIG, SHORT, TEXT, URI,
};
use leanpool_protocol::lsp_error;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// `leanpool lsp` on its own pool (config [`CONFIG`], a spare for files
/// without imports): Lean's capabilities, then `TEXT` opened on the warm
/// spare, its two diagnostics at their ranges.
pub(crate) fn open_on_the_spare(dir: &std::path::Path) -> Editor {
    let cfg = dir.join("lp.toml");
    std::fs::write(&cfg, CONFIG).unwrap();
    let mut lsp = Editor::spawn(&["lsp", "--config", cfg.to_str().unwrap(), "--prewarm", ""]);
    let long = Duration::from_secs(900);
    let short = SHORT;
    let init = lsp.initialize();
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

    // The spare for files without imports becomes ready first: the file
    // opens on an already warm worker.
    wait_for("the spare worker", long, || lsp.log_has("worker ready"));
    let opened = Instant::now();
    lsp.open(URI, TEXT);
    let d = lsp.diagnostics_where(URI, 0, short, |p| {
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
    let err = first_error(&d);
    assert_eq!(
        err["range"]["start"],
        json!({ "line": 0, "character": 30 }),
        "{err}"
    );
    eprintln!(
        "FIGURE lsp didOpen -> first complete diagnostics on a warm worker: {:.2} s",
        first_diagnostics.as_secs_f64()
    );

    lsp
}

/// Answers on the open file: `waitForDiagnostics`, hover, the goal,
/// the infoview's RPC; a file that is not open gets an error.
pub(crate) fn answers(lsp: &mut Editor) {
    let short = SHORT;
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
    assert_goal_at_the_sorry(lsp, short);

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
    assert_eq!(r["error"]["code"], lsp_error::INVALID_PARAMS, "{r}");
}

/// Edits: an incremental one fixing the error, one the guard refuses
/// (shown, requests refused, Lean does not see it), and that one undone.
pub(crate) fn edits(lsp: &mut Editor) {
    let short = SHORT;
    // An incremental edit fixes the error: `3` -> `2` at 0:22.
    let mark = lsp.seen.len();
    lsp.notify("textDocument/didChange", json!({ "textDocument": { "uri": URI, "version": 2 },
        "contentChanges": [{ "range": { "start": { "line": 0, "character": 22 }, "end": { "line": 0, "character": 23 } }, "text": "2" }] }));
    let d = lsp.diagnostics_where(URI, mark, short, |p| {
        p["version"] == 2 && p["diagnostics"].as_array().unwrap().len() == 1
    });
    assert!(messages(&d)[0].1.contains("sorry"), "{d}");

    // An edit the guard refuses: shown as a diagnostic at the command,
    // requests refused, Lean does not see it.
    let mark = lsp.seen.len();
    lsp.notify("textDocument/didChange", json!({ "textDocument": { "uri": URI, "version": 3 },
        "contentChanges": [{ "range": { "start": { "line": 3, "character": 0 }, "end": { "line": 3, "character": 0 } }, "text": "#eval IO.println \"x\"\n" }] }));
    let d = lsp.diagnostics_where(URI, mark, short, |p| p["version"] == 3);
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
    let d = lsp.diagnostics_where(URI, mark, short, |p| {
        p["version"] == 4
            && p["diagnostics"]
                .as_array()
                .unwrap()
                .iter()
                .any(|x| x["message"].as_str().unwrap().contains("sorry"))
    });
    assert_eq!(d["diagnostics"].as_array().unwrap().len(), 1, "{d}");
}

/// The document's worker is killed under it: once the refill behind the
/// lease is warm, SIGKILL; the file is re-opened on the refill with a
/// diagnostic saying so, next to Lean's own, and answers again. The
/// replacement's pid.
pub(crate) fn worker_killed(lsp: &mut Editor) -> i32 {
    let long = Duration::from_secs(900);
    let short = SHORT;
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
    let d = lsp.diagnostics_where(URI, mark, short, |p| {
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
    assert_goal_at_the_sorry(lsp, short);
    assert!(alive(replacement));

    replacement
}

/// Close: the worker is recycled (killed), not kept; then `exit` ends
/// the process and no Lean process is left.
pub(crate) fn close_and_exit(lsp: &mut Editor, worker: i32) {
    let short = SHORT;
    lsp.notify(
        "textDocument/didClose",
        json!({ "textDocument": { "uri": URI } }),
    );
    wait_for("the document's worker to be killed", short, || {
        !alive(worker)
    });
    let r = lsp.request("$/lean/plainGoal", pos(2, 2), short);
    assert_eq!(r["error"]["code"], lsp_error::INVALID_PARAMS, "{r}");

    lsp.result("shutdown", Value::Null, short);
    lsp.notify("exit", Value::Null);
    let kids = children_of(lsp.pid());
    // `exit` alone ends the process, stdin still open (editors wait for
    // the exit before closing it; tower-lsp alone would not notice). A
    // message after `exit` (Neovim sends a second `shutdown`) must not
    // keep it alive either.
    // (Written even if the process is already gone: a broken pipe is fine.)
    lsp.try_send(&json!({ "jsonrpc": "2.0", "id": 999, "method": "shutdown" }));
    let st = lsp.wait_exit(short);
    assert!(
        st.is_some_and(|st| st.success()),
        "leanpool lsp did not exit after `exit` (stdin open): {st:?}"
    );
    lsp.close_stdin();
    wait_for("no Lean process left", short, || {
        kids.iter().all(|&k| !alive(k))
    });
}
