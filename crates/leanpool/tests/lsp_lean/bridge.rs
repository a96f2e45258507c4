//! `attack_editor_bridge_*`: issue 26's attacks through the editor
//! bridge, on stdio ([`on_stdio`]) and with `--socket` ([`on_socket`]).

use crate::daemon_support::editor::Editor;
use crate::daemon_support::{Daemon, Lean, Rules};
use crate::limits;
use crate::{pos, rpc, CONFIG, SHORT, URI};
use leanpool_protocol::lsp_error;
use serde_json::json;
use std::time::{Duration, Instant};

/// The caps of both paths: 15 s per request (then the default 10 s
/// grace), 60 s of CPU per lease.
const CAPS: &str = "lease_request_timeout_ms = 15000\nlease_cpu_ms = 60000\n";

/// On stdio: the bridge's own gate, its editor's pool serving leases only.
pub(crate) fn on_stdio() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("lp.toml");
    std::fs::write(&cfg, format!("{CAPS}{CONFIG}")).unwrap();
    let mut rules = Rules::default();
    let mut lsp = Editor::spawn(&["lsp", "--config", cfg.to_str().unwrap(), "--no-prewarm"]);
    bridge_attacks(&mut lsp, &mut rules, "stdio", &[]);
    rules.assert_all();
}

/// With `--socket`: the daemon first checks another caller's secret on
/// its pool's one worker; the file's lease must not get that worker
/// (pids compared: the bridge sends the whole text before any request,
/// so no request could show the secret).
pub(crate) fn on_socket() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(
        dir.path(),
        &format!("{CAPS}[pool]\nmax_workers = 1\nspares_per_key = 0\nstart_timeout_ms = 600000\n"),
        Lean::Real,
    );
    let secret = format!("{HEADER}def victimPassword : String := \"hunter2-SECRET-7781\"\n");
    let a = rpc(&daemon.socket, "check", json!({ "text": secret }));
    assert_eq!(a["status"], "ok", "{a}");
    let st = rpc(&daemon.socket, "status", json!({}));
    let ran_secret: Vec<i32> = st["pool"]["keys"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|k| k["workers"].as_array().unwrap().iter())
        .filter_map(|w| w["pid"].as_i64().map(|p| p as i32))
        .collect();
    assert_eq!(ran_secret.len(), 1, "the worker that ran the secret: {st}");
    let mut rules = Rules::default();
    let mut lsp = Editor::spawn(&["lsp", "--socket", daemon.socket.to_str().unwrap()]);
    bridge_attacks(&mut lsp, &mut rules, "--socket", &ran_secret);
    rules.assert_all();
}

/// Every check of the bridge on one `leanpool lsp` (`path` names it in
/// the rules' details; `ran_secret`: the pids of workers that ran another
/// caller's text), then `shutdown` and `exit`.
fn bridge_attacks(lsp: &mut Editor, rules: &mut Rules, path: &str, ran_secret: &[i32]) {
    lsp.initialize();
    let text = open_provider_file(lsp, rules, path, ran_secret);
    forged_provider(lsp, rules, path);
    far_positions(lsp, rules, path);
    let v = bridge_order_and_imports(lsp, rules, path, HEADER, &text);
    limits::bridge_limits(lsp, rules, path, HEADER, v);
    lsp.exit();
}

/// The file's imports (Lean's code-action provider type).
const HEADER: &str = "import Lean.Server.CodeActions.Basic\n";

/// Opens a file declaring a code-action provider that reads the
/// environment (it must elaborate, for the attacks to mean anything):
/// the lease holds no other caller's text, and its worker is none that
/// ran one (`ran_secret`). The file's text.
fn open_provider_file(
    lsp: &mut Editor,
    rules: &mut Rules,
    path: &str,
    ran_secret: &[i32],
) -> String {
    let text = format!("{HEADER}open Lean Server in\npublic def rtlMin : CodeActionProvider := fun _ _ => do\n  let h ← (IO.getEnv \"HOME\" : IO _)\n  return #[{{ eager := {{ title := s!\"env:{{h}}\" }} }}]\ntheorem mine : 2 + 2 = 4 := by\n  sorry\n");
    lsp.open(URI, &text);
    let d = lsp.diagnostics_where(URI, 0, Duration::from_secs(900), |p| {
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
        SHORT,
    );
    rules.check(
        "clean lease: no other caller's text",
        !syms.to_string().contains("victim"),
        format!("{path}: {syms}"),
    );
    // On stdio no other caller's text reaches the editor's pool: nothing
    // to compare.
    if !ran_secret.is_empty() {
        let leased = lsp.leased_pid();
        rules.check(
            "clean lease: never the worker that ran another caller's text",
            !ran_secret.contains(&leased),
            format!("{path}: leased pid {leased}, the secret ran on {ran_secret:?}"),
        );
    }
    text
}

/// `codeAction/resolve` naming the file's provider and an RPC call of
/// it: refused (only data Lean issued, only Lean's own procedures).
fn forged_provider(lsp: &mut Editor, rules: &mut Rules, path: &str) {
    let range =
        json!({ "start": { "line": 0, "character": 0 }, "end": { "line": 0, "character": 0 } });
    let forged = json!({ "title": "x", "data": { "providerName": "rtlMin", "providerResultIndex": 0,
        "params": { "textDocument": { "uri": URI }, "range": range, "context": { "diagnostics": [] } } } });
    let ans = lsp.request("codeAction/resolve", forged, SHORT);
    rules.check(
        "codeAction/resolve: only data Lean issued",
        ans["error"]["code"] == lsp_error::INVALID_PARAMS,
        format!("{path}: {ans}"),
    );
    let s = lsp.result("$/lean/rpc/connect", json!({ "uri": URI }), SHORT);
    let call = json!({ "textDocument": { "uri": URI }, "position": { "line": 0, "character": 0 },
        "sessionId": s["sessionId"], "method": "rtlMin", "params": {} });
    let ans = lsp.request("$/lean/rpc/call", call, SHORT);
    rules.check(
        "RPC: only Lean's builtin procedures",
        ans["error"]["code"] == lsp_error::INVALID_PARAMS,
        format!("{path}: {ans}"),
    );
}

/// Far outside the text: answered at once by the gate, the worker keeps
/// answering, and the file's provider never ran.
fn far_positions(lsp: &mut Editor, rules: &mut Rules, path: &str) {
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
            ans.as_ref()
                .is_some_and(|a| a["error"]["code"] == lsp_error::INVALID_PARAMS)
                && t.elapsed() < Duration::from_secs(5),
            format!("{path}: {m}: {ans:?}"),
        );
    }
    let h = lsp.try_request("textDocument/hover", pos(5, 10), SHORT);
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
}

/// Requests right behind edits are checked against the edited text (the
/// bridge's document actor takes both in the editor's order; before, a
/// hover on a line the edit adds could reach the gate first and be
/// refused as outside the text), and a text with other imports than the
/// worker was leased for is refused (shown, never sent: no new worker),
/// served again once the imports are back. The next version, returned.
fn bridge_order_and_imports(
    lsp: &mut Editor,
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
    let d = lsp.try_diagnostics_where(URI, mark, short, |p| p["version"] == 7);
    let h = lsp.try_request("textDocument/hover", pos(5, 10), short);
    rules.check(
        "a leased text keeps its imports",
        d.as_ref().is_some_and(|d| {
            d["diagnostics"]
                .to_string()
                .contains("imports the lease was granted for")
        }) && h
            .as_ref()
            .is_some_and(|h| h["error"]["code"] == lsp_error::REQUEST_FAILED)
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
