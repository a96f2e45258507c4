//! Attack: a reader that closes stdout early (`leanpool opt F | head -c 100`).
//! Every subcommand must stop quietly with status 141 (never a panic, never
//! a 0 that `set -o pipefail` would read as success). No Lean needed:
//! `gted score`/`gted eval`, `doctor` and a guard-rejected local `verify`
//! print without it; `check`/`normalize`/`opt` ask a scripted stand-in
//! daemon on a real Unix socket (it answers one canned JSON-RPC result; the
//! test is about the CLI's stdout, not Lean); `status` and `batch` ask a
//! real `leanpool serve` with Lean switched off; `lsp --socket` answers
//! `initialize` without a daemon. `serve` writes nothing to stdout. That
//! the Lean paths use the same writer is checked on the sources.

mod daemon_support;

use daemon_support::{Daemon, Lean};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

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
    assert_eq!(
        out.status.code(),
        Some(141),
        "leanpool {args:?}: status {:?}, stderr {stderr}",
        out.status
    );
    assert!(
        !stderr.contains("panicked"),
        "leanpool {args:?} panicked: {stderr}"
    );
    assert!(
        stderr.is_empty(),
        "leanpool {args:?} should stop quietly: {stderr}"
    );
}

fn tree_files(dir: &Path) -> (String, String) {
    let a = dir.join("a.json");
    let b = dir.join("b.json");
    std::fs::write(&a, r#"{"label":"_ - _","kind":"op","children":[{"label":"a","kind":"bound_var","scope":0},{"label":"b","kind":"bound_var","scope":1}]}"#).unwrap();
    std::fs::write(&b, r#"{"content":"_ + _","children":[{"content":"y","variable_freecost":true},{"content":"x","variable_freecost":true}]}"#).unwrap();
    (
        a.to_str().unwrap().to_string(),
        b.to_str().unwrap().to_string(),
    )
}

#[test]
fn closed_stdout_gted_score_and_doctor_stop_quietly() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = tree_files(tmp.path());
    for args in [
        vec!["gted", "score", &a, &b],
        vec!["gted", "score", "--json", &a, &b],
        vec!["doctor"],
    ] {
        let out = run_with_closed_stdout(&args);
        assert_quiet_141(&args, &out);
    }
    // The same command with an open stdout succeeds and prints: the 141
    // above comes from the closed pipe, not from the command failing.
    let ok = Command::new(env!("CARGO_BIN_EXE_leanpool"))
        .args(["gted", "score", &a, &b])
        .output()
        .unwrap();
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
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
        assert_eq!(
            daemon.join().unwrap(),
            method,
            "the CLI asked the stand-in daemon"
        );
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
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("status: error"));
}

#[test]
fn help_documents_the_exit_codes() {
    let out = Command::new(env!("CARGO_BIN_EXE_leanpool"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for code in ["  0 ", "  1 ", "  2 ", "  3 ", "  141 "] {
        assert!(
            help.contains(code),
            "--help lacks exit code {code:?}: {help}"
        );
    }
}

#[test]
fn closed_stdout_gted_eval_and_local_verify_stop_quietly() {
    let tmp = tempfile::tempdir().unwrap();
    // An empty data set: `gted eval` still prints its table header and summary.
    std::fs::write(tmp.path().join("human_evaluation.json"), "[]").unwrap();
    let data = tmp.path().to_str().unwrap();
    // A proof the guard refuses: `verify` answers `rejected` before any Lean.
    let stmt = tmp.path().join("s.lean");
    let proof = tmp.path().join("p.lean");
    std::fs::write(&stmt, "theorem t : 1 = 1\n").unwrap();
    std::fs::write(&proof, "import Mathlib\ntheorem t : 1 = 1 := rfl\n").unwrap();
    let (stmt, proof) = (stmt.to_str().unwrap(), proof.to_str().unwrap());
    for args in [
        vec!["gted", "eval", data],
        vec!["verify", stmt, proof],
        vec!["verify", "--json", stmt, proof],
    ] {
        let out = run_with_closed_stdout(&args);
        assert_quiet_141(&args, &out);
    }
    // With an open stdout: `gted eval` prints and exits 0, `verify` prints
    // the rejection and exits 1 (so 141 above is the pipe's doing).
    let eval = Command::new(env!("CARGO_BIN_EXE_leanpool"))
        .args(["gted", "eval", data])
        .output()
        .unwrap();
    assert_eq!(
        eval.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&eval.stderr)
    );
    assert!(String::from_utf8_lossy(&eval.stdout).contains("pairs: 0"));
    let verify = Command::new(env!("CARGO_BIN_EXE_leanpool"))
        .args(["verify", stmt, proof])
        .output()
        .unwrap();
    assert_eq!(
        verify.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&verify.stderr)
    );
    assert!(String::from_utf8_lossy(&verify.stdout).contains("status: rejected"));
}

#[test]
fn closed_stdout_status_stops_quietly_and_batch_is_unaffected() {
    let tmp = tempfile::tempdir().unwrap();
    // A real `leanpool serve` with Lean switched off (it serves `status`;
    // Lean methods answer SPAWN_FAILED).
    let d = Daemon::start(tmp.path(), "", Lean::Off);
    let socket = d.socket.to_str().unwrap();
    for args in [
        vec!["status", "--socket", socket],
        vec!["status", "--json", "--socket", socket],
    ] {
        let out = run_with_closed_stdout(&args);
        assert_quiet_141(&args, &out);
    }
    // `batch` writes its answers to OUT and its summary to stderr: a
    // closed stdout changes nothing, every line is answered (here with
    // the daemon's SPAWN_FAILED, Lean being off) and the status is 0.
    let input = tmp.path().join("in.jsonl");
    let output = tmp.path().join("out.jsonl");
    std::fs::write(&input, "{\"id\": 1, \"text\": \"theorem a : True := trivial\"}\n{\"id\": \"b\", \"text\": \"theorem b : 1 = 1 := rfl\"}\n").unwrap();
    let args = [
        "batch",
        input.to_str().unwrap(),
        output.to_str().unwrap(),
        "--socket",
        socket,
    ];
    let out = run_with_closed_stdout(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&output)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(
        (&lines[0]["id"], &lines[1]["id"]),
        (&serde_json::json!(1), &serde_json::json!("b"))
    );
    assert!(
        lines.iter().all(|l| l["error"]["code"].is_i64()),
        "{lines:?}"
    );
}

#[test]
fn closed_stdout_lsp_stops_quietly() {
    // `lsp --socket` answers `initialize` without asking the daemon; its
    // answer hits the closed stdout. stdin stays open (an editor that is
    // still there): the server must end by itself, with 141 and no log
    // line (RUST_LOG=error would show tower-lsp's "failed to encode").
    let tmp = tempfile::tempdir().unwrap();
    let (reader, writer) = nix::unistd::pipe().expect("pipe");
    drop(reader);
    let mut child = Command::new(env!("CARGO_BIN_EXE_leanpool"))
        .args(["lsp", "--socket"])
        .arg(tmp.path().join("no-daemon.sock"))
        .env("RUST_LOG", "error")
        .stdin(Stdio::piped())
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for msg in [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}"#,
        r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#,
    ] {
        write!(stdin, "Content-Length: {}\r\n\r\n{msg}", msg.len()).unwrap();
    }
    stdin.flush().unwrap();
    let t0 = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if t0.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("leanpool lsp still running 30 s after its stdout closed");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(stdin);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(
        status.code(),
        Some(141),
        "status {status:?}, stderr {stderr}"
    );
    assert!(
        stderr.is_empty(),
        "leanpool lsp should stop quietly: {stderr}"
    );
}

/// The Lean-backed paths cannot be driven here without Lean; what keeps
/// them safe is that nothing in the binary writes to stdout except through
/// `stdout.rs` (whose `print!`/`println!` shadow std's), and `lsp`'s
/// stdout is the bridge's watched writer. A direct use would bypass the
/// rule, so it fails this test.
#[test]
fn every_stdout_write_goes_through_the_closed_pipe_rule() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let forbidden = [
        "std::print",
        "std::println",
        "std::io::stdout",
        "io::stdout()",
        "stdout().lock",
        "tokio::io::stdout",
        "libc::write",
        "print_stdout",
    ];
    let mut files = vec![root.join("src/main.rs")];
    let mut dirs = vec![root.join("src/cmd")];
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                files.push(path);
            }
        }
    }
    assert!(files.len() > 10, "{files:?}");
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for bad in forbidden {
            assert!(
                !text.contains(bad),
                "{} writes to stdout around the closed-pipe rule: `{bad}`",
                f.display()
            );
        }
    }
    // The macros are defined before every other module (textual scope).
    let main = std::fs::read_to_string(root.join("src/main.rs")).unwrap();
    let (macros, cmd) = (
        main.find("#[macro_use]\nmod stdout;")
            .expect("stdout module with #[macro_use]"),
        main.find("mod cmd;").unwrap(),
    );
    assert!(macros < cmd, "`mod stdout` must come before `mod cmd`");
    // The LSP bridge: one stdout, wrapped.
    let lsp = std::fs::read_to_string(root.join("../leanpool-lsp/src/lib.rs")).unwrap();
    assert_eq!(
        lsp.matches("tokio::io::stdout()").count(),
        1,
        "leanpool-lsp opens stdout once"
    );
    assert!(
        lsp.contains("StdoutWatch {\n        inner: tokio::io::stdout(),"),
        "leanpool-lsp's stdout is the watched writer"
    );
}
