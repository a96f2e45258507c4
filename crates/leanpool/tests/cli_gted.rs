//! `leanpool gted` end to end, on the GTED paper's miniF2F data.

use std::path::PathBuf;
use std::process::Command;

/// The miniF2F data; fails loudly when absent instead of skipping.
fn data_dir() -> PathBuf {
    leanpool_testkit::data::minif2f_dir().unwrap_or_else(|e| panic!("{e}"))
}

fn leanpool(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_leanpool"))
        .args(args)
        .output()
        .expect("run leanpool");
    assert!(
        out.status.success(),
        "leanpool {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn eval_paper_mode_reproduces_the_paper() {
    let dir = data_dir();
    let out = leanpool(&[
        "gted",
        "eval",
        "--mode",
        "paper",
        "--threshold",
        "0.754",
        dir.to_str().unwrap(),
    ]);
    assert!(
        out.contains("equal to stored scores (1e-9): 205/205\n"),
        "{out}"
    );
    let line = out
        .lines()
        .find(|l| l.starts_with("threshold 0.754:"))
        .expect("a threshold line");
    assert!(line.contains("TP 71 TN 74 FP 9 FN 51"), "{line}");
    assert!(
        line.contains("accuracy 0.7073") && line.contains("kappa 0.438"),
        "{line}"
    );
    let best = out
        .lines()
        .find(|l| l.starts_with("best threshold"))
        .expect("a sweep line");
    assert!(best.contains(" 0.754: "), "{best}");
    // One line per pair, with the stored score beside ours.
    let rows: Vec<&str> = out.lines().skip(1).take_while(|l| !l.is_empty()).collect();
    assert_eq!(rows.len(), 205);
    assert_eq!(rows[0], "1\t0.24\t0.24\tfalse");
}

#[test]
fn score_prints_one_number_per_mode() {
    let dir = data_dir();
    let a = dir.join("label/ast/label_code_2.json");
    let b = dir.join("predict/ast/predict_code_2.json");
    let run = |mode: &str| {
        leanpool(&[
            "gted",
            "score",
            "--mode",
            mode,
            a.to_str().unwrap(),
            b.to_str().unwrap(),
        ])
    };
    // Stored score of pair 2 in gted_result.json.
    assert_eq!(run("paper"), "0.6190476190476191\n");
    let alpha: f64 = run("alpha").trim().parse().unwrap();
    assert!(
        alpha <= 0.6190476190476191,
        "alpha mode is never more lenient than paper mode"
    );
    // Default mode is alpha.
    let default = leanpool(&["gted", "score", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(default, run("alpha"));
}

#[test]
fn score_reads_leanpool_format_and_rejects_garbage() {
    let tmp = tempfile::tempdir().unwrap();
    let ours = tmp.path().join("ours.json");
    let theirs = tmp.path().join("theirs.json");
    std::fs::write(&ours, r#"{"label":"_ - _","kind":"op","children":[{"label":"a","kind":"bound_var","scope":0},{"label":"b","kind":"bound_var","scope":1}]}"#).unwrap();
    std::fs::write(&theirs, r#"{"content":"_ - _","children":[{"content":"y","variable_freecost":true},{"content":"x","variable_freecost":true}]}"#).unwrap();
    assert_eq!(
        leanpool(&[
            "gted",
            "score",
            ours.to_str().unwrap(),
            theirs.to_str().unwrap()
        ]),
        "1.0\n"
    );
    let bad = tmp.path().join("bad.json");
    std::fs::write(&bad, r#"{"name":"x"}"#).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_leanpool"))
        .args([
            "gted",
            "score",
            ours.to_str().unwrap(),
            bad.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad.json"));
}
