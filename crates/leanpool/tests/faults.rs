//! Faults on a real daemon with real Lean (the WASM build from
//! `scripts/setup`; FAILS when it is missing) and real signals:
//!
//! - a worker SIGKILLed in the middle of a request, `LEANPOOL_FAULT_KILLS`
//!   times (default 20): every request is answered (`ok`, via the pool's
//!   retry on a fresh worker), including one queued behind the victim;
//! - a statement that runs far past its limit: answered `timeout`, the
//!   worker killed and replaced, the next check answered by a new process;
//! - the daemon stays up throughout, and SIGTERM leaves no Lean process.
//!
//! One worker (a WASM worker holds 6-7 GB); each kill costs a worker
//! start (~25-90 s on 2 cores), so this test takes many minutes. Times are
//! measured by `benches` (`--bin daemon`), not asserted here.

mod daemon_support;

use daemon_support::{alive, Daemon, Lean};
use leanpool_pool::WorkerState;
use leanpool_protocol::{CheckParams, CheckStatus};
use leanpool_rpc::{Client, StatusResult};
use nix::sys::signal::Signal;
use std::time::{Duration, Instant};

const CONFIG: &str = "[pool]\nmax_workers = 1\nmax_workers_per_key = 1\nmax_queue_per_key = 16\n\
idle_timeout_ms = 0\nmax_uses = 30\nstart_timeout_ms = 600000\ndefault_timeout_ms = 600000\n\
health_interval_ms = 200\n[[pool.prewarm]]\nheader = \"\"\nmin = 1\n";

fn kills() -> usize {
    std::env::var("LEANPOOL_FAULT_KILLS").ok().and_then(|v| v.parse().ok()).unwrap_or(20)
}

/// True theorems that keep a warm worker busy for a few seconds, so a
/// signal or a time limit lands inside the request.
fn slow(tag: &str, theorems: usize) -> String {
    (0..theorems)
        .map(|i| format!("theorem {tag}_{i} (a b c : Nat) (h1 : a < b) (h2 : b < c) : a + {i} < c + {i} + 1 := by omega\n"))
        .collect()
}

fn req(text: String) -> CheckParams {
    CheckParams { text, timeout_ms: None, timings: false }
}

fn workers(st: &StatusResult) -> Vec<(Option<u32>, WorkerState)> {
    st.pool.keys.iter().flat_map(|k| k.workers.iter().map(|w| (w.pid, w.state))).collect()
}

async fn wait_for(c: &Client, what: &str, within: Duration, f: impl Fn(&[(Option<u32>, WorkerState)]) -> bool) -> StatusResult {
    let t = Instant::now();
    loop {
        let st = c.status().await.unwrap();
        if f(&workers(&st)) {
            return st;
        }
        assert!(t.elapsed() < within, "{what}: not within {within:?}: {:?}", workers(&st));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn idle_pid(ws: &[(Option<u32>, WorkerState)]) -> Option<u32> {
    ws.iter().find(|w| w.1 == WorkerState::Idle).and_then(|w| w.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_request_and_timeout_on_real_lean() {
    let n = kills();
    let dir = tempfile::tempdir().unwrap();
    let mut d = Daemon::start(dir.path(), CONFIG, Lean::Real);
    let c = Client::connect(&d.socket).await.unwrap();
    let st = c.status().await.unwrap();
    assert_ne!(st.daemon.backend.kind, "unavailable", "Lean is not installed (run scripts/setup): {:?}", st.daemon.backend);
    let ready = Duration::from_secs(900);
    wait_for(&c, "prewarmed worker", ready, |w| idle_pid(w).is_some()).await;
    let mut seen = vec![];

    // SIGKILL mid-request, n times. A kill that lands after the answer
    // does not count (the request was not in flight); the delay varies so
    // the signal hits different phases of elaboration.
    let (mut landed, mut attempts) = (0usize, 0usize);
    while landed < n {
        attempts += 1;
        assert!(attempts <= 2 * n + 5, "only {landed} of {attempts} kills landed mid-request");
        let i = attempts;
        let st = wait_for(&c, "idle worker before a kill", ready, |w| idle_pid(w).is_some()).await;
        let victim = idle_pid(&workers(&st)).unwrap();
        seen.push(victim);
        let (c1, c2) = (Client::connect(&d.socket).await.unwrap(), Client::connect(&d.socket).await.unwrap());
        let running = tokio::spawn(async move { c1.check(&req(slow(&format!("k{i}"), 60))).await });
        wait_for(&c, "victim busy", Duration::from_secs(120), |w| w.iter().any(|x| x.1 == WorkerState::Busy)).await;
        // Queued behind the victim's request: must be answered too.
        let queued = tokio::spawn(async move { c2.check(&req(format!("theorem q{i} : {i} + 1 = {} := rfl\n", i + 1))).await });
        tokio::time::sleep(Duration::from_millis(100 + (i as u64 * 173) % 900)).await;
        let mid = !running.is_finished();
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(victim as i32), Signal::SIGKILL).unwrap();
        let r = running.await.unwrap().unwrap_or_else(|e| panic!("kill {i}: request unanswered: {e}\n{}", d.logs()));
        assert_eq!(r.status, CheckStatus::Ok, "kill {i}: {r:?}");
        let q = queued.await.unwrap().unwrap_or_else(|e| panic!("kill {i}: queued request unanswered: {e}"));
        assert_eq!(q.status, CheckStatus::Ok, "kill {i}: {q:?}");
        if mid {
            landed += 1;
        }
        eprintln!("kill {i}: pid {victim}, mid-request {mid} ({landed}/{n})");
    }
    let counters = c.status().await.unwrap().pool.counters;
    assert!(counters.crashes >= landed as u64, "{counters:?}");
    assert_eq!(counters.worker_failed, 0, "{counters:?}");
    assert!(d.child.try_wait().unwrap().is_none(), "daemon died:\n{}", d.logs());

    // Timeout: far more work than the limit allows.
    let st = wait_for(&c, "idle worker before the timeout", ready, |w| idle_pid(w).is_some()).await;
    let before = idle_pid(&workers(&st)).unwrap();
    seen.push(before);
    let mut p = req(slow("slow", 400));
    p.timeout_ms = Some(1500);
    let r = c.check(&p).await.unwrap();
    assert_eq!(r.status, CheckStatus::Timeout, "{r:?}");
    assert!(r.reason.as_deref().unwrap_or("").contains("1500"), "{r:?}");
    // The answer comes right after SIGKILL; tearing down a multi-GB,
    // many-threaded process takes the kernel a moment, so allow it a bounded
    // grace period to be gone (it must not come back to life either).
    let gone_by = Instant::now() + Duration::from_secs(15);
    while alive(before as i32) && Instant::now() < gone_by {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(!alive(before as i32), "timed-out worker {before} still running 15 s after its timeout answer");
    let r = c.check(&req("theorem after_timeout : 2 + 2 = 4 := rfl\n".into())).await.unwrap();
    assert_eq!(r.status, CheckStatus::Ok, "{r:?}");
    let st = c.status().await.unwrap();
    let now: Vec<u32> = workers(&st).iter().filter_map(|w| w.0).collect();
    assert!(!now.is_empty() && !now.contains(&before), "worker not replaced: {now:?}");
    seen.extend(now);
    assert_eq!(st.pool.counters.timeouts, 1, "{:?}", st.pool.counters);

    // Still the same daemon; SIGTERM leaves no Lean behind.
    drop(c);
    d.signal(Signal::SIGTERM);
    assert!(d.wait_exit(Duration::from_secs(60)).success(), "{}", d.logs());
    for pid in seen {
        assert!(!alive(pid as i32), "Lean worker {pid} survived the daemon");
    }
}
