//! The result cache on real Lean (the WASM build installed by
//! `scripts/setup`; FAILS when it is missing). One worker start in all: the
//! first daemon answers `check`/`verify`/`normalize` on its one worker and
//! stores the answers; it is then SIGKILLed (a real crash, no clean close
//! of the store), and a second daemon on the same `[cache] dir` answers
//! every request again, byte for byte, without starting any Lean worker.
//! On that second daemon the CLI is tested as users run it: `leanpool batch`
//! prints the hits in its summary, `leanpool cache stats --socket` reports
//! them, `leanpool cache clear` on the store a running daemon holds says to
//! use `--socket`, `cache clear --socket` empties it (`cache_clear`), and
//! once the daemon has stopped `cache stats --dir` reads the empty store.

mod daemon_support;

use daemon_support::{children_of, connect_expecting_lean, status, Daemon, Lean, BIN};
use leanpool_protocol::CacheStatus;
use leanpool_rpc::Client;
use nix::sys::signal::Signal;
use serde_json::{json, Value};
use std::time::Duration;

/// The cache in the test's own dir; one worker.
fn config(dir: &std::path::Path) -> String {
    format!(
        "[pool]\nmax_workers = 1\nmax_workers_per_key = 1\nspares_per_key = 0\nstart_timeout_ms = 600000\ndefault_timeout_ms = 300000\n\n[cache]\ndir = {:?}\n",
        dir.join("results").display().to_string()
    )
}

/// Requests whose answers are deterministic verdicts of each kind.
fn requests() -> Vec<(&'static str, Value)> {
    vec![
        (
            "check",
            json!({"text": "theorem c1 (a b : Nat) (h : a < b) : a + 1 < b + 1 := by omega\n"}),
        ),
        (
            "check",
            json!({"text": "theorem c2 : 2 + 2 = 5 := by decide\n"}),
        ),
        (
            "check",
            json!({"text": "theorem c3 (n : Nat) : n * 3 = 3 * n := by sorry\n", "timings": true}),
        ),
        (
            "verify",
            json!({"statement": "theorem v1 (n : Nat) : n + 0 = n", "proof": "by simp"}),
        ),
        (
            "normalize",
            json!({"text": "theorem n1 (x : Nat) (h : 0 < x) : x ≠ 0 := by omega\n"}),
        ),
    ]
}

async fn cache_status(c: &Client) -> CacheStatus {
    let s = c.call("status", Value::Null).await.unwrap();
    serde_json::from_value(s["cache"].clone()).unwrap()
}

/// The answer's bytes without the cache's mark and timing fields.
fn comparable(raw: &str) -> String {
    let mut v: serde_json::Map<String, Value> = serde_json::from_str(raw).unwrap();
    v.remove("cached");
    v.remove("elapsed_ms");
    v.remove("worker_us");
    serde_json::to_string(&v).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarted_daemon_answers_from_the_cache_without_lean() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path());
    let mut first = vec![];
    {
        let mut d = Daemon::start(dir.path(), &cfg, Lean::Real);
        let c = connect_expecting_lean(&d).await;
        for (m, p) in requests() {
            let a = c.call_raw(m, p.clone()).await.unwrap().get().to_string();
            assert!(!a.contains("\"cached\""), "{m} {p}: {a}");
            first.push(a);
        }
        let statuses: Vec<String> = first
            .iter()
            .map(|a| {
                let v: Value = serde_json::from_str(a).unwrap();
                v.get("status").unwrap_or(&v["check"]["status"]).to_string()
            })
            .collect();
        assert_eq!(
            statuses,
            ["\"ok\"", "\"error\"", "\"sorry\"", "\"proved\"", "\"ok\""],
            "{first:#?}"
        );
        // Repeats on the same daemon: the first answer's bytes plus the mark.
        for ((m, p), a) in requests().into_iter().zip(&first) {
            let again = c.call_raw(m, p).await.unwrap().get().to_string();
            if a.contains("elapsed_ms") {
                assert_eq!(comparable(&again), comparable(a));
            } else {
                assert_eq!(again, format!("{},\"cached\":true}}", &a[..a.len() - 1]));
            }
        }
        let s = cache_status(&c).await;
        assert_eq!((s.hits, s.misses, s.entries), (5, 5, 5), "{s:?}");
        // A real crash: no graceful shutdown, no clean close of the store.
        d.signal(Signal::SIGKILL);
        d.wait_exit(Duration::from_secs(20));
    }
    let d = Daemon::start(dir.path(), &cfg, Lean::Real);
    let c = connect_expecting_lean(&d).await;
    for ((m, p), a) in requests().into_iter().zip(&first) {
        let again = c.call_raw(m, p.clone()).await.unwrap().get().to_string();
        assert!(again.ends_with(",\"cached\":true}"), "{m} {p}: {again}");
        assert_eq!(comparable(&again), comparable(a), "{m} {p}");
    }
    let st = status(&c).await;
    let s = st.cache.clone().unwrap();
    assert_eq!((s.hits, s.misses, s.entries), (5, 0, 5), "{s:?}");
    assert_eq!(st.pool.counters.spawns, 0, "a worker was started: {st:?}");
    assert_eq!(st.pool.workers, 0);
    assert!(
        children_of(d.pid()).is_empty(),
        "{:?}",
        children_of(d.pid())
    );
    eprintln!(
        "restarted daemon: store opened {:?}, {} hits, 0 worker starts",
        s.opened, s.hits
    );
    cli_on_a_running_daemon(dir.path(), &d);
    drop(c);
    drop(d);
    // The store as the stopped daemon left it: empty.
    let (code, out, err) = cli(&["cache", "stats", "--dir"], &dir.path().join("results"));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("entries 0  bytes 0"), "{out}");
}

/// `leanpool ARGS PATH`: (exit code, stdout, stderr).
fn cli(args: &[&str], path: &std::path::Path) -> (i32, String, String) {
    let out = std::process::Command::new(BIN)
        .args(args)
        .arg(path)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The cache CLI and the batch summary against a daemon whose store holds
/// the five answers of `requests()` (and none of its own worker).
fn cli_on_a_running_daemon(dir: &std::path::Path, d: &Daemon) {
    // `leanpool batch` of the three checks: all three from the cache, and
    // its summary says so.
    let input = dir.join("in.jsonl");
    let lines: Vec<String> = requests()
        .into_iter()
        .filter(|(m, _)| *m == "check")
        .enumerate()
        .map(|(i, (_, mut p))| {
            p["id"] = json!(i);
            p.to_string()
        })
        .collect();
    std::fs::write(&input, lines.join("\n") + "\n").unwrap();
    let out = std::process::Command::new(BIN)
        .arg("batch")
        .arg(&input)
        .arg(dir.join("out.jsonl"))
        .arg("--socket")
        .arg(&d.socket)
        .args(["--method", "check"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("3 answered now (0 errors, 3 from the result cache)"),
        "{err}"
    );
    // stats: the daemon's counters (5 hits of the restart check + 3).
    let (code, out, err) = cli(&["cache", "stats", "--socket"], &d.socket);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("cache on") && out.contains("entries 5  bytes"),
        "{out}"
    );
    assert!(out.contains("hits 8  misses 0  in_flight_joins 0"), "{out}");
    // The store a running daemon holds cannot be opened: the error says
    // what to do.
    let (code, _, err) = cli(&["cache", "clear", "--dir"], &dir.join("results"));
    assert_ne!(code, 0);
    assert!(
        err.contains("held by a running daemon") && err.contains("cache stats|clear --socket"),
        "{err}"
    );
    // clear through the daemon.
    let (code, out, err) = cli(&["cache", "clear", "--socket"], &d.socket);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("removed 5 entries"), "{out}");
    let (_, out, _) = cli(&["cache", "stats", "--socket"], &d.socket);
    assert!(out.contains("entries 0  bytes 0"), "{out}");
}
