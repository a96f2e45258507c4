//! `leanpool batch --method check` through the daemon: order, statuses, resume.

use super::*;

/// Runs `leanpool batch IN OUT --socket --method check --concurrency 3`:
/// (exit code, stderr).
pub(crate) fn batch(
    socket: &std::path::Path,
    input: &std::path::Path,
    output: &std::path::Path,
) -> (i32, String) {
    let out = Command::new(BIN)
        .args(["batch"])
        .arg(input)
        .arg(output)
        .arg("--socket")
        .arg(socket)
        .args(["--method", "check", "--concurrency", "3"])
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `batch`: both input forms, order kept, statuses right; resumed with
/// nothing left to do, then a torn output file repaired and completed.
pub(crate) fn batch_keeps_order_and_resumes(d: &Daemon, dir: &std::path::Path) {
    let input = dir.join("in.jsonl");
    let output = dir.join("out.jsonl");
    let items = [
        json!({"id": "a", "text": ok(1)}),
        json!({"id": 2, "header": "", "statement": bad(2)}),
        json!({"id": "c", "text": "theorem s : 1 = 1 := sorry"}),
        json!({"id": 4, "text": ok(4)}),
    ];
    std::fs::write(
        &input,
        items.iter().map(|v| format!("{v}\n")).collect::<String>(),
    )
    .unwrap();
    let (code, err) = batch(&d.socket, &input, &output);
    assert_eq!(code, 0, "{err}\n{}", d.logs());
    let out = lines(&output);
    let got: Vec<(Value, Value)> = out
        .iter()
        .map(|l| (l["id"].clone(), l["result"]["status"].clone()))
        .collect();
    assert_eq!(
        got,
        vec![
            (json!("a"), json!("ok")),
            (json!(2), json!("error")),
            (json!("c"), json!("sorry")),
            (json!(4), json!("ok"))
        ],
        "{out:?}"
    );
    // Resume: nothing left to do; then a torn file is repaired and completed.
    let (code, err) = batch(&d.socket, &input, &output);
    assert_eq!(code, 0);
    assert!(
        err.contains("0 answered now") && err.contains("4 already"),
        "{err}"
    );
    let full = std::fs::read_to_string(&output).unwrap();
    let first_two: String = full.lines().take(2).map(|l| format!("{l}\n")).collect();
    std::fs::write(&output, format!("{first_two}{{\"id\":\"c\",\"res")).unwrap();
    let (code, err) = batch(&d.socket, &input, &output);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("2 answered now"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&output).unwrap(),
        full,
        "resumed file differs from the one-shot file"
    );
}
