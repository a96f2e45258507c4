//! `verify` through the daemon, its CLI, batch and the Python client.

use super::*;

/// `verify` (issue 11 part 2) through the daemon, its CLI, batch and the
/// Python client: a good proof, and proofs that try to escape their slot.
pub(crate) async fn verify_cases(d: &Daemon, c: &Client, dir: &std::path::Path) {
    let stmt = "theorem v1 (n : Nat) : n + 0 = n := by sorry";
    verify_answers_over_rpc(c, stmt).await;
    verify_escapes_are_rejected(c).await;
    verify_from_the_cli(d, dir, stmt);
    verify_in_batch(d, dir, stmt);
    verify_from_python(d, stmt);
}

/// A good proof, a wrong one (its error in the proof's own coordinates),
/// `sorry` inside a `have`, and a proof of a different statement.
async fn verify_answers_over_rpc(c: &Client, stmt: &str) {
    let r = c
        .request::<method::Verify>(&VerifyParams::new(stmt, "by\n  simp"))
        .await
        .unwrap();
    assert_eq!(r.status, VerifyStatus::Proved, "{r:?}");
    assert!(
        r.diagnostics.is_empty() && r.statement_diagnostics.is_empty(),
        "{r:?}"
    );
    // A wrong proof: the error is positioned in the proof's own text.
    // (`exact rfl` would be right: `n + 0` reduces to `n`; `0 + n` does not.)
    let r = c
        .request::<method::Verify>(&VerifyParams::new(stmt, "by\n  exact Nat.zero_add n"))
        .await
        .unwrap();
    assert_eq!(r.status, VerifyStatus::Error, "{r:?}");
    assert!(
        r.diagnostics
            .iter()
            .any(|d| d.severity == leanpool_protocol::Severity::Error && d.range.start.line == 1),
        "{r:?}"
    );
    // `sorry` inside a `have`: the warning is on the theorem's name, in
    // the statement's coordinates.
    let r = c
        .request::<method::Verify>(&VerifyParams::new(
            "theorem v2 : 1 = 1 := sorry",
            "by\n  have h : 1 = 1 := sorry\n  exact h",
        ))
        .await
        .unwrap();
    assert_eq!(r.status, VerifyStatus::Sorry, "{r:?}");
    assert_eq!(r.statement_diagnostics[0].range.start.character, 8, "{r:?}");
    // A different statement: the proof proves `2 + 2 = 4`, the statement says 5.
    let r = c
        .request::<method::Verify>(&VerifyParams::new(
            "theorem v3 : 2 + 2 = 5",
            "(by decide : 2 + 2 = 4)",
        ))
        .await
        .unwrap();
    assert_eq!(r.status, VerifyStatus::Error, "{r:?}");
    assert!(
        r.diagnostics.iter().any(|d| d.range.start.line == 0),
        "{r:?}"
    );
}

/// Escapes, refused before Lean: close the theorem early and declare
/// something, add an axiom, `#guard_msgs`, change an option, restate; and
/// a statement with a proof already attached.
async fn verify_escapes_are_rejected(c: &Client) {
    for (name, proof) in [
        ("close_and_declare", "sorry\ntheorem v3 : 2 + 2 = 4 := rfl"),
        ("add_axiom", "cheat.elim\naxiom cheat : False"),
        ("guard_msgs", "by\n  #guard_msgs in decide"),
        ("option", "by\n  set_option maxRecDepth 100000 in decide"),
        ("unbalanced", "(by decide))\ntheorem w : True := trivial"),
    ] {
        let r = c
            .request::<method::Verify>(&VerifyParams::new("theorem v3 : 2 + 2 = 5", proof))
            .await
            .unwrap();
        assert_eq!(r.status, VerifyStatus::Rejected, "{name}: {r:?}");
    }
    // A statement with a proof already attached is not a statement.
    let r = c
        .request::<method::Verify>(&VerifyParams::new(
            "theorem v4 : True := trivial",
            "trivial",
        ))
        .await
        .unwrap();
    assert_eq!(r.status, VerifyStatus::Rejected, "{r:?}");
}

/// CLI: `leanpool verify STATEMENT PROOF --socket --json`, exit 0 when proved.
fn verify_from_the_cli(d: &Daemon, dir: &std::path::Path, stmt: &str) {
    let (sf, pf) = (dir.join("stmt.lean"), dir.join("proof.lean"));
    std::fs::write(&sf, stmt).unwrap();
    std::fs::write(&pf, "by simp\n").unwrap();
    cli_via(&d.socket, &[&"verify", &sf, &pf, &"--json"], 0);
}

/// `batch --method verify`: a proof, then an escape (rejected).
fn verify_in_batch(d: &Daemon, dir: &std::path::Path, stmt: &str) {
    let (input, output) = (dir.join("vin.jsonl"), dir.join("vout.jsonl"));
    let items = [
        json!({"id": 1, "statement": stmt, "proof": "by simp"}),
        json!({"id": 2, "header": "", "statement": "theorem v5 : False", "proof": "sorry\naxiom a : False"}),
    ];
    std::fs::write(
        &input,
        items.iter().map(|v| format!("{v}\n")).collect::<String>(),
    )
    .unwrap();
    cli_via(
        &d.socket,
        &[&"batch", &input, &output, &"--method", &"verify"],
        0,
    );
    let got: Vec<Value> = lines(&output)
        .iter()
        .map(|l| l["result"]["status"].clone())
        .collect();
    assert_eq!(got, [json!("proved"), json!("rejected")]);
}

/// The Python client's `verify`.
fn verify_from_python(d: &Daemon, stmt: &str) {
    let r = clients::python_example(d, "verify", json!({"statement": stmt, "proof": "by simp"}));
    assert_eq!(r["status"], "proved", "{r}");
}
