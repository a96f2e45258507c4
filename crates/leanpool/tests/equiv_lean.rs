//! `leanpool gted pairs` and `equiv` on real Lean (the WASM build
//! installed by `scripts/setup`; FAILS when it is missing). One daemon,
//! one worker for the whole file.

mod daemon_support;

use daemon_support::{connect_expecting_lean, Daemon, Lean, BIN};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

const CONFIG: &str = "[pool]\nmax_workers = 1\nmax_workers_per_key = 1\nspares_per_key = 0\nmax_queue_per_key = 64\nstart_timeout_ms = 600000\ndefault_timeout_ms = 300000\ntimeout_grace_ms = 5000\n";

fn lines(p: &Path) -> Vec<Value> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn write_lines(p: &Path, items: &[Value]) {
    std::fs::write(
        p,
        items.iter().map(|v| format!("{v}\n")).collect::<String>(),
    )
    .unwrap();
}

/// Runs `leanpool gted pairs`: exit code, stdout (the summary), stderr.
fn pairs(socket: &Path, input: &Path, output: &Path, extra: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .args(["gted", "pairs"])
        .arg(input)
        .arg(output)
        .arg("--socket")
        .arg(socket)
        .args(extra)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gted_pairs_and_equiv_on_real_lean() {
    let dir = tempfile::tempdir().unwrap();
    let d = Daemon::start(dir.path(), CONFIG, Lean::Real);
    let _c = connect_expecting_lean(&d).await;
    gted_pairs(&d, dir.path());
}

/// `gted pairs`: trees of both sides, a renamed candidate scores 1, a
/// candidate that does not elaborate scores 0, a reference that does not
/// elaborate is the line's error; resumable; the summary counts labels.
fn gted_pairs(d: &Daemon, dir: &Path) {
    let input = dir.join("pairs.jsonl");
    let output = dir.join("pairs.out.jsonl");
    write_lines(
        &input,
        &[
            json!({"id": "renamed", "reference": "theorem r (a b : Nat) (h : a < b) : a + 1 ≤ b := by sorry",
                   "candidate": "theorem c (x y : Nat) (hxy : x < y) : x + 1 ≤ y := by sorry", "label": true}),
            json!({"id": 2, "header": "open Nat", "reference": "theorem r (n : Nat) : n + 0 = n := by sorry",
                   "candidate": "theorem c (n : Nat) : n + 0 = \"x\" := by sorry", "label": false}),
            json!({"id": "bad_reference", "reference": "theorem r : (1 : Nat) = \"x\" := by sorry",
                   "candidate": "theorem c : 1 = 1 := by sorry"}),
            json!({"id": "different", "reference": "theorem r (a b : Nat) : a + b = b + a := by sorry",
                   "candidate": "theorem c (a b : Nat) (h : a ≤ b) : a * b ≤ b * b := by sorry", "label": false}),
        ],
    );
    let (code, summary, err) = pairs(&d.socket, &input, &output, &["--concurrency", "2"]);
    assert_eq!(code, 0, "{err}\n{}", d.logs());
    let out = lines(&output);
    let ids: Vec<&Value> = out.iter().map(|l| &l["id"]).collect();
    assert_eq!(
        ids,
        [
            &json!("renamed"),
            &json!(2),
            &json!("bad_reference"),
            &json!("different")
        ]
    );
    assert_eq!(out[0]["similarity"], json!(1.0), "{}", out[0]);
    assert_eq!(out[0]["same"], json!(true));
    assert_eq!(out[0]["reference"]["status"], json!("ok"), "{}", out[0]);
    assert!(out[0]["reference"]["tree"].is_object() && out[0]["candidate"]["tree"].is_object());
    assert_eq!(out[1]["similarity"], json!(0.0), "{}", out[1]);
    assert_eq!(out[1]["candidate"]["status"], json!("error"));
    assert!(out[1]["candidate"]["tree"].is_null());
    assert!(out[2]["similarity"].is_null(), "{}", out[2]);
    assert!(
        out[2]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("the reference does not elaborate"),
        "{}",
        out[2]
    );
    let s = out[3]["similarity"].as_f64().unwrap();
    assert!(s > 0.0 && s < 0.754, "{}", out[3]);
    assert!(
        summary.contains("4 lines in") && summary.contains("3 scored, 1 errors; 3 labelled"),
        "{summary}"
    );
    assert!(
        summary.contains("| GTED (alpha) >= 0.754 | 1 | 2 | 0 | 0 | 1.000 |"),
        "{summary}"
    );
    // Resume: a torn last line is cut and completed to the same bytes.
    let full = std::fs::read_to_string(&output).unwrap();
    let first: String = full.lines().take(1).map(|l| format!("{l}\n")).collect();
    std::fs::write(&output, format!("{first}{{\"id\":2,\"simil")).unwrap();
    let (code, _, err) = pairs(&d.socket, &input, &output, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("3 answered now") && err.contains("1 already"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&output).unwrap(),
        full,
        "resumed file differs"
    );
}
