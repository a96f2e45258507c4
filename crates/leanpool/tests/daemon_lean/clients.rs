//! Many clients on the one warm worker: concurrency, determinism, the Python example.

use super::*;

/// 4 concurrent clients x 3 checks on the one worker, answers matched.
pub(crate) async fn concurrent_clients_share_one_worker(d: &Daemon) {
    let mut js = tokio::task::JoinSet::new();
    for k in 0..4u32 {
        let socket = d.socket.clone();
        js.spawn(async move {
            let c = Arc::new(Client::connect(&socket).await.unwrap());
            let mut mine = tokio::task::JoinSet::new();
            for j in 0..3u32 {
                let c = c.clone();
                let i = 10 + k * 3 + j;
                let (text, want) = if i % 2 == 0 {
                    (ok(i), CheckStatus::Ok)
                } else {
                    (bad(i), CheckStatus::Error)
                };
                mine.spawn(async move {
                    let r = c
                        .request::<method::Check>(&CheckParams::new(text))
                        .await
                        .unwrap();
                    assert_eq!(r.status, want, "statement {i}: {r:?}");
                    if want == CheckStatus::Error {
                        assert!(
                            r.diagnostics.iter().any(|d| d.message.contains("decide")),
                            "{r:?}"
                        );
                    }
                });
            }
            while let Some(r) = mine.join_next().await {
                r.unwrap();
            }
        });
    }
    while let Some(r) = js.join_next().await {
        r.unwrap();
    }
}

/// Determinism: the same request three times (each on its own
/// connection) gives byte-identical answers, diagnostics included: an
/// error, a sorry warning and positions after non-ASCII text.
pub(crate) async fn repeated_check_is_byte_identical(d: &Daemon) {
    let same = json!({"text": "-- ∀ 𝓝 in comments\ntheorem d1 (a : Nat) : a + 0 = a := sorry\ntheorem d2 : (2 : Int) - 5 = 3 := by decide\n"});
    let mut answers = vec![];
    for _ in 0..3 {
        let ci = Client::connect(&d.socket).await.unwrap();
        answers.push(
            ci.call_raw("check", same.clone())
                .await
                .unwrap()
                .get()
                .to_string(),
        );
    }
    assert!(
        answers.iter().all(|a| a == &answers[0]),
        "answers differ: {answers:#?}"
    );
    let r: Value = serde_json::from_str(&answers[0]).unwrap();
    assert_eq!(r["status"], "error", "{r}");
    assert_eq!(r["diagnostics"].as_array().map(Vec::len), Some(2), "{r}");
}

/// The Python example against the same daemon.
pub(crate) fn python_example_checks(d: &Daemon) {
    let r = python_example(d, "check", json!({"text": bad(3)}));
    assert_eq!(r["status"], "error");
}

/// `examples/python_client.py METHOD PARAMS` against `d`: it must exit 0;
/// its answer.
pub(crate) fn python_example(d: &Daemon, method: &str, params: Value) -> Value {
    let py = Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../examples/python_client.py"
        ))
        .arg("--socket")
        .arg(&d.socket)
        .arg(method)
        .arg(params.to_string())
        .output()
        .unwrap();
    assert!(
        py.status.success(),
        "{}",
        String::from_utf8_lossy(&py.stderr)
    );
    serde_json::from_slice(&py.stdout).unwrap()
}
