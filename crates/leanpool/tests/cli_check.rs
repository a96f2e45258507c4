//! `leanpool check FILE --json` end to end: the built binary starts its
//! own Lean worker (the real WASM Lean here; fails when none is
//! installed), checks a file with one good and one bad theorem, and must
//! report the bad one's exact range.

use std::process::Command;

#[test]
fn check_json_reports_the_bad_theorem_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("GoodBad.lean");
    std::fs::write(
        &file,
        "theorem good : 1 + 1 = 2 := rfl\n\ntheorem bad : 1 + 1 = 3 := rfl\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_leanpool"))
        .args(["check", "--json", "--timeout-ms", "120000"])
        .arg(&file)
        .output()
        .expect("run leanpool");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "exit code; stdout {stdout}\nstderr {stderr}"
    );
    assert_eq!(stdout.lines().count(), 1, "one JSON object: {stdout}");
    let v: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(v["status"], "error", "{v}");
    assert!(v["elapsed_ms"].as_u64().is_some(), "{v}");
    let diags = v["diagnostics"].as_array().unwrap();
    let errors: Vec<_> = diags.iter().filter(|d| d["severity"] == "error").collect();
    let range = |l0: u32, c0: u32, l1: u32, c1: u32| serde_json::json!({"start": {"line": l0, "character": c0}, "end": {"line": l1, "character": c1}});
    // `theorem bad : 1 + 1 = 3 := rfl` is line 2 (0-based); Lean reports
    // the declaration and the `rfl` term.
    assert_eq!(errors.len(), 2, "{v}");
    assert_eq!(errors[0]["range"], range(2, 0, 2, 30), "{v}");
    assert_eq!(errors[1]["range"], range(2, 27, 2, 30), "{v}");
    assert!(
        diags.iter().all(|d| d["range"]["start"]["line"] == 2),
        "nothing about `good`: {v}"
    );
}

#[test]
fn missing_file_is_a_usage_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_leanpool"))
        .args(["check", "/nonexistent/file.lean"])
        .output()
        .expect("run leanpool");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/file.lean"));
}

/// `required` (the default) on a kernel without enough Landlock refuses to
/// start Lean, with a clear error, instead of running it unsandboxed. The
/// old kernel is simulated by `LEANPOOL_SANDBOX_MAX_ABI` (a test hook that
/// can only lower the ABI leanpool detects); no Lean process is started.
#[test]
fn sandbox_required_refuses_to_run_lean_on_a_kernel_without_landlock() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("T.lean");
    std::fs::write(&file, "theorem t : True := trivial\n").unwrap();
    for abi in ["0", "5"] {
        let t0 = std::time::Instant::now();
        let out = Command::new(env!("CARGO_BIN_EXE_leanpool"))
            .args(["check", "--json"])
            .arg(&file)
            .env("LEANPOOL_SANDBOX_MAX_ABI", abi)
            .output()
            .expect("run leanpool");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{stderr}");
        assert!(
            out.stdout.is_empty(),
            "no verdict without a sandbox: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(
            stderr.contains(&format!("Landlock ABI is {abi}")) && stderr.contains("refusing"),
            "{stderr}"
        );
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(20),
            "refused only after {:?}",
            t0.elapsed()
        );
    }
    // `leanpool doctor` says the same.
    let out = Command::new(env!("CARGO_BIN_EXE_leanpool"))
        .arg("doctor")
        .env("LEANPOOL_SANDBOX_MAX_ABI", "0")
        .output()
        .expect("run leanpool doctor");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("sandbox:   required (Landlock ABI 0): unavailable"),
        "{stdout}"
    );
    assert!(stdout.contains("NOT OK"), "{stdout}");
}
