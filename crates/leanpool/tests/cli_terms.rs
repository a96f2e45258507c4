//! `leanpool normalize` / `leanpool opt` as a user runs them. The Lean
//! test starts a local worker through the CLI (the real WASM or native
//! Lean; fails without it): `opt`'s tree as printed. The same file through
//! `opt --gted` and `normalize --json` is checked against a daemon
//! (`--socket`) in `daemon_lean`, on that binary's warm worker: each local
//! run costs a worker start (CI time), and the local path
//! (`cmd::lean_args::answer`) is the same for every command (`check` here
//! and in `cli_check`).

use std::process::Command;

fn leanpool() -> Command {
    Command::new(env!("CARGO_BIN_EXE_leanpool"))
}

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn missing_file_and_daemon_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let out = leanpool()
        .args(["opt", "/nonexistent/x.lean"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("reading"));
    let f = write(&dir, "t.lean", "theorem t : True := trivial\n");
    let sock = dir.path().join("no-daemon.sock");
    let out = leanpool()
        .arg("normalize")
        .arg(&f)
        .arg("--socket")
        .arg(&sock)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn opt_on_a_local_worker() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(
        &dir,
        "t.lean",
        "theorem t (a b : Nat) (h : a < b) : ∀ c, a + c < b + c := by\n  omega\n",
    );
    let out = leanpool().arg("opt").arg(&f).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "theorem");
    // The root's children: three binders and the conclusion.
    let top: Vec<&str> = lines
        .iter()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .copied()
        .collect();
    assert_eq!(
        top,
        [
            "  (_ : _)  [explicit]",
            "  (_ : _)  [explicit]",
            "  (_ : _)  [explicit]",
            "  ∀ _, _"
        ]
    );
    assert!(stdout.contains("    _ < _\n"));
    assert!(stdout.contains("      _ + _\n"));
    assert!(stdout.contains("lean requests: "));
}
