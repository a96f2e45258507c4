//! Attack: a reader that closes stdout early (`leanpool opt F | head -c 100`).
//! Every subcommand must stop quietly with status 141 (never a panic, never
//! a 0 that `set -o pipefail` would read as success). No Lean needed:
//! `gted score` and `doctor` print without it, and `check`/`normalize`/`opt`
//! ask a scripted stand-in daemon on a real Unix socket (it answers one
//! canned JSON-RPC result; the test is about the CLI's stdout, not Lean).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// Runs leanpool with stdout a pipe whose reading end is already closed,
/// so its first write fails with `EPIPE`.
fn run_with_closed_stdout(args: &[&str]) -> Output {
    let (reader, writer) = nix::unistd::pipe().expect("pipe");
    drop(reader);
    Command::new(env!("CARGO_BIN_EXE_leanpool"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .output()
        .expect("run leanpool")
}

fn assert_quiet_141(args: &[&str], out: &Output) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(141), "leanpool {args:?}: status {:?}, stderr {stderr}", out.status);
    assert!(!stderr.contains("panicked"), "leanpool {args:?} panicked: {stderr}");
    assert!(stderr.is_empty(), "leanpool {args:?} should stop quietly: {stderr}");
}

fn tree_files(dir: &Path) -> (String, String) {
    let a = dir.join("a.json");
    let b = dir.join("b.json");
    std::fs::write(&a, r#"{"label":"_ - _","kind":"op","children":[{"label":"a","kind":"bound_var","scope":0},{"label":"b","kind":"bound_var","scope":1}]}"#).unwrap();
    std::fs::write(&b, r#"{"content":"_ + _","children":[{"content":"y","variable_freecost":true},{"content":"x","variable_freecost":true}]}"#).unwrap();
    (a.to_str().unwrap().to_string(), b.to_str().unwrap().to_string())
}

#[test]
fn closed_stdout_gted_score_and_doctor_stop_quietly() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = tree_files(tmp.path());
    for args in [vec!["gted", "score", &a, &b], vec!["gted", "score", "--json", &a, &b], vec!["doctor"]] {
        let out = run_with_closed_stdout(&args);
        assert_quiet_141(&args, &out);
    }
    // The same command with an open stdout succeeds and prints: the 141
    // above comes from the closed pipe, not from the command failing.
    let ok = Command::new(env!("CARGO_BIN_EXE_leanpool")).args(["gted", "score", &a, &b]).output().unwrap();
    assert_eq!(ok.status.code(), Some(0), "{}", String::from_utf8_lossy(&ok.stderr));
    assert!(!ok.stdout.is_empty());
}

/// A stand-in daemon: accepts one connection, answers its one request with
/// `result`, then closes.
fn one_shot_daemon(socket: &Path, result: serde_json::Value) -> std::thread::JoinHandle<String> {
    let listener = UnixListener::bind(socket).unwrap();
    std::thread::spawn(move || {
        let (conn, _) = listener.accept().unwrap();
        let mut line = String::new();
        BufReader::new(&conn).read_line(&mut line).unwrap();
        let req: serde_json::Value = serde_json::from_str(&line).unwrap();
        let answer = serde_json::json!({"jsonrpc": "2.0", "id": req["id"], "result": result});
        (&conn).write_all(format!("{answer}\n").as_bytes()).unwrap();
        req["method"].as_str().unwrap_or_default().to_string()
    })
}

fn check_error() -> serde_json::Value {
    serde_json::json!({"status": "error", "diagnostics": [
        {"range": {"start": {"line": 0, "character": 26}, "end": {"line": 0, "character": 29}},
         "severity": "error", "message": "type mismatch"}]})
}

#[test]
fn closed_stdout_check_normalize_opt_stop_quietly() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("T.lean");
    std::fs::write(&file, "theorem t : 1 + 1 = 3 := rfl\n").unwrap();
    let file = file.to_str().unwrap();
    // An `error` verdict: with an open stdout `check` would exit 1; a cut
    // output must not turn that into 0 either.
    let check = check_error();
    let stmt = serde_json::json!({"check": {"status": "ok", "diagnostics": []},
        "normalized": {"statement": "theorem stmt : 1 + 1 = 3", "binders": [], "conclusion": "1 + 1 = 3"}});
    let mut opt = stmt.clone();
    opt["tree"] = serde_json::json!({"label": "_ = _", "kind": "op",
        "children": [{"label": "1 + 1", "kind": "atom"}, {"label": "3", "kind": "atom"}]});
    for (method, result, json) in [
        ("check", check.clone(), false),
        ("check", check, true),
        ("normalize", stmt.clone(), false),
        ("normalize", stmt.clone(), true),
        ("opt", opt.clone(), false),
        ("opt", opt, true),
    ] {
        let socket = tmp.path().join(format!("{method}-{json}.sock"));
        let daemon = one_shot_daemon(&socket, result);
        let mut args = vec![method, "--socket", socket.to_str().unwrap(), file];
        if json {
            args.push("--json");
        }
        let out = run_with_closed_stdout(&args);
        assert_eq!(daemon.join().unwrap(), method, "the CLI asked the stand-in daemon");
        assert_quiet_141(&args, &out);
    }
    // With an open stdout the same `error` answer prints and exits 1.
    let socket = tmp.path().join("open.sock");
    let daemon = one_shot_daemon(&socket, check_error());
    let out = Command::new(env!("CARGO_BIN_EXE_leanpool"))
        .args(["check", "--socket", socket.to_str().unwrap(), file])
        .output()
        .unwrap();
    daemon.join().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("status: error"));
}

#[test]
fn help_documents_the_exit_codes() {
    let out = Command::new(env!("CARGO_BIN_EXE_leanpool")).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for code in ["  0 ", "  1 ", "  2 ", "  141 "] {
        assert!(help.contains(code), "--help lacks exit code {code:?}: {help}");
    }
}
