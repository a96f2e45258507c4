//! The daemon on real Lean (the WASM build installed by `scripts/setup`;
//! FAILS when it is missing): `batch` with resume, concurrent clients on
//! one worker, byte-identical answers to a repeated check, the Python
//! example, `opt`/`normalize` from the CLI, `status`, and SIGTERM leaving no Lean
//! process behind. One worker only (a WASM worker holds 6-7 GB).

mod attack;
mod cli;
#[path = "../daemon_support/mod.rs"]
mod daemon_support;
mod verify;

use daemon_support::{alive, children_of, connect_expecting_lean, Daemon, Lean, BIN};
use leanpool_protocol::method::{self, NoParams};
use leanpool_protocol::{CheckParams, CheckStatus, VerifyParams, VerifyStatus};
use leanpool_rpc::Client;
use nix::sys::signal::Signal;
use serde_json::{json, Value};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use attack::attack_disconnect_does_not_stall_the_next_caller;
use cli::cli_opt_and_normalize_through_the_daemon;
use verify::verify_cases;

const CONFIG: &str = "[pool]\nmax_workers = 1\nmax_workers_per_key = 1\nmax_queue_per_key = 64\nstart_timeout_ms = 600000\ndefault_timeout_ms = 300000\ntimeout_grace_ms = 5000\n";

fn ok(i: u32) -> String {
    format!("theorem ok{i} : {i} + {i} = {} := by decide", 2 * i)
}
fn bad(i: u32) -> String {
    format!("theorem bad{i} : {i} + {i} = {} := by decide", 2 * i + 1)
}

fn lines(p: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn batch(
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daemon_on_real_lean() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = Daemon::start(dir.path(), CONFIG, Lean::Real);
    let c = connect_expecting_lean(&d).await;

    // batch: both input forms, order kept, statuses right.
    let input = dir.path().join("in.jsonl");
    let output = dir.path().join("out.jsonl");
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

    // 4 concurrent clients x 3 checks on the one worker, answers matched.
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
                        .request::<method::Check>(&CheckParams {
                            text,
                            timeout_ms: None,
                            timings: false,
                        })
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

    // Determinism: the same request three times (each on its own
    // connection) gives byte-identical answers, diagnostics included: an
    // error, a sorry warning and positions after non-ASCII text.
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

    // The Python example against the same daemon.
    let py = Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../examples/python_client.py"
        ))
        .arg("--socket")
        .arg(&d.socket)
        .arg("check")
        .arg(json!({"text": bad(3)}).to_string())
        .output()
        .unwrap();
    assert!(
        py.status.success(),
        "{}",
        String::from_utf8_lossy(&py.stderr)
    );
    let r: Value = serde_json::from_slice(&py.stdout).unwrap();
    assert_eq!(r["status"], "error");

    verify_cases(&d, &c, dir.path()).await;
    attack_disconnect_does_not_stall_the_next_caller(&d, &c).await;

    // `leanpool check FILE --socket`: exit 0 for ok, 1 otherwise.
    for (name, text, code, status) in [
        ("good.lean", ok(5), 0, "ok"),
        ("bad.lean", bad(5), 1, "error"),
    ] {
        let f = dir.path().join(name);
        std::fs::write(&f, &text).unwrap();
        let out = Command::new(BIN)
            .arg("check")
            .arg(&f)
            .arg("--socket")
            .arg(&d.socket)
            .arg("--json")
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(code),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(r["status"], status);
    }

    cli_opt_and_normalize_through_the_daemon(&d, dir.path());

    // status: the one worker, with its uses counted.
    let st = c.request::<method::Status>(&NoParams).await.unwrap();
    assert_eq!(st.pool.workers, 1, "{st:?}");
    let w = &st.pool.keys[0].workers[0];
    let pid = w.pid.expect("worker pid") as i32;
    let sent = 4 + 2 + 12 + 3 + 1 + 2; // batch, resumed batch, clients, determinism, Python, CLI
    assert!(st.pool.counters.requests >= sent, "{:?}", st.pool.counters);
    assert!(alive(pid));
    let human = Command::new(BIN)
        .args(["status", "--socket"])
        .arg(&d.socket)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(
        human.status.success() && text.contains(&pid.to_string()) && text.contains("check"),
        "{text}"
    );

    // A client that goes away: its queued requests never reach Lean. They
    // queue behind the start of a worker for a new header (tens of seconds),
    // and the client disconnects while they wait.
    let before = c
        .request::<method::Status>(&NoParams)
        .await
        .unwrap()
        .pool
        .counters;
    {
        use tokio::io::AsyncWriteExt;
        let mut s = tokio::net::UnixStream::connect(&d.socket).await.unwrap();
        let mut lines = String::new();
        for i in 1..=3 {
            let text = format!("import Init\n{}", ok(20 + i));
            lines.push_str(&format!(
                "{}\n",
                json!({"jsonrpc": "2.0", "id": i, "method": "check", "params": {"text": text}})
            ));
        }
        s.write_all(lines.as_bytes()).await.unwrap();
        let t0 = std::time::Instant::now();
        loop {
            let st = c.request::<method::Status>(&NoParams).await.unwrap();
            if st
                .pool
                .keys
                .iter()
                .any(|k| k.header.contains("import Init") && k.queue_depth == 3)
            {
                break;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "requests never queued: {st:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    } // dropped: the connection closes with 3 requests queued
    let t0 = std::time::Instant::now();
    loop {
        let now = c
            .request::<method::Status>(&NoParams)
            .await
            .unwrap()
            .pool
            .counters;
        if now.cancelled >= before.cancelled + 3 {
            assert_eq!(now.requests, before.requests + 3);
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(600),
            "queued requests of a departed client were not cancelled: {now:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // SIGTERM: graceful, socket removed, no Lean process left.
    let st = c.request::<method::Status>(&NoParams).await.unwrap();
    let pids: Vec<i32> = st
        .pool
        .keys
        .iter()
        .flat_map(|k| k.workers.iter().filter_map(|w| w.pid.map(|p| p as i32)))
        .collect();
    drop(c);
    let spawned = children_of(d.pid());
    assert!(
        pids.iter().all(|p| spawned.contains(p)),
        "workers {pids:?} are not children of the daemon: {spawned:?}"
    );
    d.signal(Signal::SIGTERM);
    assert!(
        d.wait_exit(Duration::from_secs(60)).success(),
        "{}",
        d.logs()
    );
    assert!(!d.socket.exists(), "socket left behind");
    assert!(!alive(pid), "Lean worker {pid} survived the daemon");
    assert!(
        pids.iter().all(|p| !alive(*p)),
        "workers {pids:?} survived the daemon"
    );
    assert!(
        spawned.iter().all(|p| !alive(*p)),
        "children left: {spawned:?}"
    );
}
