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

#[path = "../daemon_support/mod.rs"]
mod daemon_support;

mod bridge;
mod daemon_lease;
mod limits;
mod nvim;
mod session;

use daemon_support::editor::Editor;
use daemon_support::{Daemon, Lean};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::time::{Duration, Instant};

// No hot spares: the prewarm minimum is the editor's spare (one worker
// start per refill, not two).
const CONFIG: &str = "[pool]\nmax_workers = 2\nmax_workers_per_key = 1\nspares_per_key = 0\nstart_timeout_ms = 600000\n";

const TEXT: &str =
    "theorem bad : 1 + 1 = 3 := by decide\ntheorem sorried (n : Nat) : n + 0 = n := by\n  sorry\n";
const URI: &str = "file:///tmp/leanpool-lsp-test/Test.lean";
/// How long an answer of a warm worker may take.
const SHORT: Duration = Duration::from_secs(60);

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

/// The first error (severity 1) of a `publishDiagnostics`' params.
fn first_error(d: &Value) -> Value {
    d["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["severity"] == 1)
        .unwrap()
        .clone()
}

fn pos(line: u32, character: u32) -> Value {
    json!({ "textDocument": { "uri": URI }, "position": { "line": line, "character": character } })
}

/// Asks for the goal at `TEXT`'s `sorry` and checks it is `sorried`'s:
/// `n : Nat ⊢ n + 0 = n`.
fn assert_goal_at_the_sorry(lsp: &mut Editor, within: Duration) {
    let g = lsp.result("$/lean/plainGoal", pos(2, 2), within);
    let goal = g["goals"][0].as_str().unwrap_or_default();
    assert!(
        goal.contains("n : Nat") && goal.contains("⊢ n + 0 = n"),
        "{g}"
    );
}

fn wait_for(what: &str, within: Duration, mut cond: impl FnMut() -> bool) {
    let until = Instant::now() + within;
    while !cond() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
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

#[test]
fn editor_session_on_a_warm_worker() {
    let dir = tempfile::tempdir().unwrap();
    let mut lsp = session::open_on_the_spare(dir.path());
    session::answers(&mut lsp);
    session::edits(&mut lsp);
    let replacement = session::worker_killed(&mut lsp);
    session::close_and_exit(&mut lsp, replacement);
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
    let mut lsp = daemon_lease::open_through(&daemon);
    let leased = daemon_lease::lease_counted(&lsp, &daemon);
    daemon_lease::edit_close_exit(&mut lsp, &daemon, leased);
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
    let dir = tempfile::tempdir().unwrap();
    let run = nvim::run(dir.path());
    nvim::check_opened(&run.record, &dir.path().join("Test.lean"));
    nvim::check_answers_and_edit(&run.record);
    nvim::check_stopped(&run);
}

/// Issue 26's attacks through the editor bridge, on real Lean: the same
/// rules as the daemon's `lease` tunnel (`lease_lean/`) hold on stdio
/// (`leanpool lsp`, the gate in the bridge; here) and with `--socket`
/// (the daemon's gate behind the bridge's:
/// [`attack_editor_bridge_through_a_daemon_starts_clean_and_refuses_the_same`]).
/// The file declares a code-action provider reading the environment;
/// `codeAction/resolve` naming it and an RPC call of it are refused, a
/// hover far outside the text is answered at once and the worker keeps
/// answering; requests right behind edits see the edited text; a text
/// with other imports is refused (no new worker) and served again with
/// the lease's; a slow text's `waitForDiagnostics` (right behind its
/// edit) is answered `RequestFailed` at the request limit (15 s) and the
/// worker is ended by the cancel's grace (10 s; the text lasts over a
/// minute, the lease's CPU budget is 60 s); re-opened by the next edit on
/// a fresh worker, the slow text alone ends it by the CPU budget. Two
/// worker starts. Rules are checked by name (`daemon_support::Rules`).
#[test]
fn attack_editor_bridge_refuses_callers_providers_and_far_positions() {
    bridge::on_stdio();
}

/// The attacks of
/// [`attack_editor_bridge_refuses_callers_providers_and_far_positions`]
/// through `leanpool lsp --socket`, after the daemon checked another
/// caller's secret on its pool's worker: the file's lease never gets that
/// worker (pids compared). Three worker starts (the check's, two leases).
#[test]
fn attack_editor_bridge_through_a_daemon_starts_clean_and_refuses_the_same() {
    bridge::on_socket();
}

/// Issue 26's idle limit through the editor bridge on stdio (here
/// `lease_idle_timeout_ms = 20000`; the same gate as the daemon's, whose
/// idle test is `lease_lean/`'s): a file the editor keeps asking about
/// keeps its worker; left idle, the worker is ended (the note names the
/// limit) and killed. One worker start.
#[test]
fn attack_editor_bridge_idle_file_loses_its_worker() {
    limits::bridge_idle();
}
