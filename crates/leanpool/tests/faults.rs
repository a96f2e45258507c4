//! Faults on a real daemon with real Lean (the WASM build from
//! `scripts/setup`; FAILS when it is missing) and real signals, in one
//! test (a daemon's first worker is a start: CI time), in this order:
//!
//! - a worker SIGKILLed in the middle of a request, `LEANPOOL_FAULT_KILLS`
//!   times (default 6; CI time: each kill costs a worker start): every request is answered (`ok`, via the pool's
//!   retry on a fresh worker), including one queued behind the victim;
//! - a statement that runs far past its limit: answered `timeout`, Lean
//!   interrupted and the worker kept (`timeout_grace_ms`, default): the
//!   next checks (a true and a false statement) are answered `ok` and
//!   `error` by the same process, with no start;
//! - the daemon stays up throughout; then it is SIGKILLed and restarted
//!   (with a memory cap) while three clients check, each reconnecting and
//!   answered `ok` by the new daemon, the old daemon's worker gone;
//! - on the new daemon, a statement that eats memory, stopped by the memory
//!   cap (`rss_headroom_bytes`); one on which Lean panics, answered at once
//!   and not retried; SIGTERM then leaves no Lean process of either daemon.
//!
//! One worker (a WASM worker holds 6-7 GB); each kill costs a worker
//! start (~25-90 s on 2 cores), so this test takes many minutes. Times are
//! measured by `benches` (`--bin daemon`), not asserted here.

mod daemon_support;

use daemon_support::{
    alive, call_surviving, connect_expecting_lean, counters, status, Daemon, Lean,
};
use leanpool_pool::WorkerState;
use leanpool_protocol::method::{self, NoParams};
use leanpool_protocol::{CheckParams, CheckStatus, ErrorCode, StatusResult};
use leanpool_rpc::Client;
use nix::sys::signal::Signal;
use std::time::{Duration, Instant};

const CONFIG: &str = "[pool]\nmax_workers = 1\nmax_workers_per_key = 1\nmax_queue_per_key = 16\n\
idle_timeout_ms = 0\nmax_uses = 30\nstart_timeout_ms = 600000\ndefault_timeout_ms = 600000\n\
health_interval_ms = 200\n[[pool.prewarm]]\nheader = \"\"\nmin = 1\n";

/// The restarted daemon's: 600 MiB of headroom over the worker's RSS at
/// ready (`rss_headroom_bytes`): the clients' small checks grow it by far
/// less, the memory eater by ~1 GiB or more. Not for the kill loop: 60
/// `omega` theorems grew one fresh worker by more than 600 MiB (seen). A
/// relative cap because two WASM workers' baselines differ by ~0.5 GB.
const MEM_CONFIG: &str = "[pool]\nmax_workers = 1\nmax_workers_per_key = 1\nmax_queue_per_key = 16\n\
idle_timeout_ms = 0\nmax_uses = 30\nstart_timeout_ms = 600000\ndefault_timeout_ms = 600000\n\
health_interval_ms = 200\nrss_poll_ms = 50\nrss_headroom_bytes = 629145600\n[[pool.prewarm]]\nheader = \"\"\nmin = 1\n";

fn kills() -> usize {
    std::env::var("LEANPOOL_FAULT_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6)
}

/// True theorems that keep a warm worker busy for a few seconds, so a
/// signal or a time limit lands inside the request.
fn slow(tag: &str, theorems: usize) -> String {
    (0..theorems)
        .map(|i| format!("theorem {tag}_{i} (a b c : Nat) (h1 : a < b) (h2 : b < c) : a + {i} < c + {i} + 1 := by omega\n"))
        .collect()
}

fn workers(st: &StatusResult) -> Vec<(Option<u32>, WorkerState)> {
    st.pool
        .keys
        .iter()
        .flat_map(|k| k.workers.iter().map(|w| (w.pid, w.state)))
        .collect()
}

async fn wait_for(
    c: &Client,
    what: &str,
    within: Duration,
    f: impl Fn(&[(Option<u32>, WorkerState)]) -> bool,
) -> StatusResult {
    let t = Instant::now();
    loop {
        let st = status(c).await;
        if f(&workers(&st)) {
            return st;
        }
        assert!(
            t.elapsed() < within,
            "{what}: not within {within:?}: {:?}",
            workers(&st)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn idle_pid(ws: &[(Option<u32>, WorkerState)]) -> Option<u32> {
    ws.iter()
        .find(|w| w.1 == WorkerState::Idle)
        .and_then(|w| w.0)
}

/// Statements that make the elaborator itself compute with huge numbers
/// (core Lean, no code execution: `decide` reduces `Nat.shiftLeft` with
/// the runtime's big integers). A 250 MB number: the worker's RSS grows by
/// ~1-1.3 GiB on WASM Lean (measured), within its 2 GiB heap.
const EATS_MEMORY: &str = "theorem eats : 1 <<< 2000000000 ≠ 0 := by decide\n";
/// A shift past what the runtime supports: Lean prints `INTERNAL PANIC:
/// Nat.shiftl exponent is too big` (native Lean then exits; the WASM build
/// hangs, which the driver turns into a death at once).
const PANICS: &str = "theorem boom : 1 <<< 18446744073709551616 ≠ 0 := by decide\n";

fn worker_failed(e: &leanpool_rpc::ClientError) -> &str {
    match e {
        leanpool_rpc::ClientError::Rpc(r) if r.code == ErrorCode::WorkerFailed => &r.message,
        other => panic!("expected WORKER_FAILED, got {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_timeout_daemon_restart_memory_cap_and_panic_on_real_lean() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = Daemon::start(dir.path(), CONFIG, Lean::Real);
    let c = connect_expecting_lean(&d).await;
    let mut seen = vec![];
    wait_for(&c, "prewarmed worker", READY, |w| idle_pid(w).is_some()).await;
    sigkill_mid_request(&mut d, &c, &mut seen).await;
    timeout_interrupts_lean_and_keeps_the_worker(&mut d, &c, &mut seen).await;
    let (mut d2, c2) = daemon_restart_while_clients_check(d, c, dir.path(), &mut seen).await;
    memory_cap_and_panic(&mut d2, &c2, &mut seen).await;
    // SIGTERM: graceful, and no Lean process of either daemon is left.
    drop(c2);
    d2.exits_cleanly_on(Signal::SIGTERM, Duration::from_secs(60));
    for pid in seen {
        assert!(!alive(pid as i32), "Lean worker {pid} survived the daemon");
    }
}

const READY: Duration = Duration::from_secs(900);

/// On the restarted daemon's worker (`MEM_CONFIG`; it has answered the
/// clients' small checks): the memory cap, then a panic.
async fn memory_cap_and_panic(d: &mut Daemon, c: &Client, seen: &mut Vec<u32>) {
    // The cap is the worker's own RSS at ready + the headroom.
    let st = wait_for(c, "prewarmed worker", READY, |w| idle_pid(w).is_some()).await;
    let first = idle_pid(&workers(&st)).unwrap();
    seen.push(first);
    let w = st
        .pool
        .keys
        .iter()
        .flat_map(|k| &k.workers)
        .find(|w| w.pid == Some(first))
        .unwrap();
    let cap = w.rss_cap_bytes.expect("status shows the memory cap");
    assert!(cap > 629145600 && w.rss_bytes.unwrap() < cap, "{w:?}");
    let r = c
        .request::<method::Check>(&CheckParams::new(
            "theorem small (a b : Nat) : a + b = b + a := by omega\n",
        ))
        .await
        .unwrap();
    assert_eq!(r.status, CheckStatus::Ok, "{r:?}");

    // A statement that eats memory: stopped by the cap, answered, the
    // worker replaced, the daemon up.
    let t = Instant::now();
    let e = c
        .request::<method::Check>(&CheckParams::new(EATS_MEMORY))
        .await
        .unwrap_err();
    let m = worker_failed(&e);
    assert!(m.contains("memory limit"), "{m}\n{}", d.logs());
    eprintln!("memory cap {cap} B: answered after {:?}: {m}", t.elapsed());
    let st = status(c).await;
    assert_eq!(
        (st.pool.counters.memory_kills, st.pool.counters.retries),
        (1, 0),
        "{:?}",
        st.pool.counters
    );
    assert!(d.is_running(), "daemon died:\n{}", d.logs());
    let st = wait_for(c, "replacement worker", READY, |w| {
        idle_pid(w).is_some_and(|p| p != first)
    })
    .await;
    let second = idle_pid(&workers(&st)).unwrap();
    seen.push(second);
    assert!(
        !alive(first as i32),
        "the worker over its cap is still running"
    );

    // A statement on which Lean panics: answered at once (not at the time
    // limit: the WASM worker would hang), not retried, worker replaced.
    if st.daemon.backend.kind == leanpool_protocol::BackendInfoKind::Wasm {
        let t = Instant::now();
        let e = c
            .request::<method::Check>(&CheckParams::new(PANICS))
            .await
            .unwrap_err();
        let m = worker_failed(&e);
        assert!(m.contains("INTERNAL PANIC"), "{m}");
        eprintln!("panic: answered after {:?}: {m}", t.elapsed());
        let counters = counters(c).await;
        assert_eq!((counters.crashes, counters.retries), (1, 0), "{counters:?}");
        let st = wait_for(c, "worker after the panic", READY, |w| {
            idle_pid(w).is_some_and(|p| p != second)
        })
        .await;
        seen.push(idle_pid(&workers(&st)).unwrap());
        assert!(
            !alive(second as i32),
            "the panicked worker is still running"
        );
    }
}

/// SIGKILL mid-request, `kills()` times. A kill that lands after the
/// answer does not count (the request was not in flight); the delay
/// varies so the signal hits different phases of elaboration.
async fn sigkill_mid_request(d: &mut Daemon, c: &Client, seen: &mut Vec<u32>) {
    let n = kills();
    let start = counters(c).await;
    let (mut landed, mut attempts) = (0usize, 0usize);
    while landed < n {
        attempts += 1;
        assert!(
            attempts <= 2 * n + 5,
            "only {landed} of {attempts} kills landed mid-request"
        );
        let i = attempts;
        let st = wait_for(c, "idle worker before a kill", READY, |w| {
            idle_pid(w).is_some()
        })
        .await;
        let victim = idle_pid(&workers(&st)).unwrap();
        seen.push(victim);
        let (c1, c2) = (
            Client::connect(&d.socket).await.unwrap(),
            Client::connect(&d.socket).await.unwrap(),
        );
        let running = tokio::spawn(async move {
            c1.request::<method::Check>(&CheckParams::new(slow(&format!("k{i}"), 60)))
                .await
        });
        wait_for(c, "victim busy", Duration::from_secs(120), |w| {
            w.iter().any(|x| x.1 == WorkerState::Busy)
        })
        .await;
        // Queued behind the victim's request: must be answered too.
        let queued = tokio::spawn(async move {
            c2.request::<method::Check>(&CheckParams::new(format!(
                "theorem q{i} : {i} + 1 = {} := rfl\n",
                i + 1
            )))
            .await
        });
        tokio::time::sleep(Duration::from_millis(100 + (i as u64 * 173) % 900)).await;
        let mid = !running.is_finished();
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(victim as i32), Signal::SIGKILL).unwrap();
        let r = running
            .await
            .unwrap()
            .unwrap_or_else(|e| panic!("kill {i}: request unanswered: {e}\n{}", d.logs()));
        assert_eq!(r.status, CheckStatus::Ok, "kill {i}: {r:?}");
        let q = queued
            .await
            .unwrap()
            .unwrap_or_else(|e| panic!("kill {i}: queued request unanswered: {e}"));
        assert_eq!(q.status, CheckStatus::Ok, "kill {i}: {q:?}");
        if mid {
            landed += 1;
        }
        eprintln!("kill {i}: pid {victim}, mid-request {mid} ({landed}/{n})");
    }
    let counters = counters(c).await;
    assert!(
        counters.crashes - start.crashes >= landed as u64,
        "{counters:?}"
    );
    assert_eq!(counters.worker_failed, start.worker_failed, "{counters:?}");
    eprintln!(
        "{landed} SIGKILLs mid-request ({attempts} attempts): all {} requests answered ok (crashes {}, retries {})",
        2 * attempts,
        counters.crashes - start.crashes,
        counters.retries - start.retries
    );
    assert!(d.is_running(), "daemon died:\n{}", d.logs());
}

/// Far more work than the limit allows: answered at once; Lean is
/// interrupted and the same process serves on (no start).
async fn timeout_interrupts_lean_and_keeps_the_worker(
    d: &mut Daemon,
    c: &Client,
    seen: &mut Vec<u32>,
) {
    let st = wait_for(c, "idle worker before the timeout", READY, |w| {
        idle_pid(w).is_some()
    })
    .await;
    let before = idle_pid(&workers(&st)).unwrap();
    let spawns = st.pool.counters.spawns;
    seen.push(before);
    // 250 theorems: under the 256-declaration cap (MAX_DECLARATIONS).
    let p = CheckParams::new(slow("slow", 250)).with_timeout_ms(1500);
    let t = Instant::now();
    let r = c.request::<method::Check>(&p).await.unwrap();
    assert_eq!(r.status, CheckStatus::Timeout, "{r:?}");
    eprintln!(
        "timeout: 1500 ms limit answered `timeout` after {:?}",
        t.elapsed()
    );
    assert!(r.reason.as_deref().unwrap_or("").contains("1500"), "{r:?}");
    let t = Instant::now();
    let r = c
        .request::<method::Check>(&CheckParams::new(
            "theorem after_timeout : 2 + 2 = 4 := rfl\n",
        ))
        .await
        .unwrap();
    assert_eq!(r.status, CheckStatus::Ok, "{r:?}");
    assert!(
        r.diagnostics.is_empty(),
        "diagnostics of the timed-out version leaked: {r:?}"
    );
    eprintln!(
        "timeout: next check answered {:?} after the time-out",
        t.elapsed()
    );
    let r = c
        .request::<method::Check>(&CheckParams::new(
            "theorem after_timeout_false : 2 + 2 = 5 := by decide\n",
        ))
        .await
        .unwrap();
    assert_eq!(r.status, CheckStatus::Error, "{r:?}");
    assert!(
        r.diagnostics.iter().all(|d| d.range.start.line == 0),
        "{r:?}"
    );
    let st = status(c).await;
    let now: Vec<u32> = workers(&st).iter().filter_map(|w| w.0).collect();
    assert_eq!(
        now,
        vec![before],
        "the timed-out worker was replaced, not interrupted\n{}",
        d.logs()
    );
    let k = &st.pool.counters;
    assert_eq!(
        (k.timeouts, k.timeout_kills, k.spawns, k.compromised),
        (1, 0, spawns, 0),
        "{k:?}"
    );
    for l in d.logs().lines().filter(|l| l.contains("interrupt")) {
        eprintln!("daemon: {l}");
    }
    assert!(d.is_running(), "daemon died:\n{}", d.logs());
}

/// Daemon restart (SIGKILL, then a new daemon on the same socket, with
/// `MEM_CONFIG`) while three clients keep checking: every check is answered
/// `ok`, each client reconnecting on its own; the old daemon's workers are
/// gone. Returns the new daemon.
async fn daemon_restart_while_clients_check(
    mut d: Daemon,
    c: Client,
    dir: &std::path::Path,
    seen: &mut Vec<u32>,
) -> (Daemon, Client) {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut js = tokio::task::JoinSet::new();
    for k in 0..3usize {
        let (socket, stop) = (d.socket.clone(), stop.clone());
        js.spawn(keep_checking(k, socket, stop));
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let old = workers(&status(&c).await)
        .iter()
        .filter_map(|w| w.0)
        .collect::<Vec<_>>();
    seen.extend(&old);
    drop(c);
    sigkill_and_wait_for_workers(&mut d, &old).await;
    let d2 = Daemon::start(dir, MEM_CONFIG, Lean::Real);
    let c2 = Client::connect(&d2.socket).await.unwrap();
    // Clients are answered by the new daemon's worker once it is warm.
    let t = Instant::now();
    while c2
        .request::<method::Status>(&NoParams)
        .await
        .unwrap()
        .pool
        .latency
        .iter()
        .all(|l| l.method != "check" || l.total.samples < 3)
    {
        assert!(
            t.elapsed() < READY,
            "clients were not answered by the new daemon:\n{}",
            d2.logs()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let mut total_reconnects = 0;
    while let Some(r) = js.join_next().await {
        let (answered, reconnects) = r.unwrap();
        assert!(
            answered >= 2 && reconnects >= 1,
            "answered {answered}, reconnects {reconnects}"
        );
        total_reconnects += reconnects;
    }
    eprintln!("daemon restart: {total_reconnects} reconnects over 3 clients");
    seen.extend(workers(&status(&c2).await).iter().filter_map(|w| w.0));
    (d2, c2)
}

/// Client `k` of the restart: checks until it has 2 answers and is told
/// to `stop`, riding out the restart; (answers, reconnects).
async fn keep_checking(
    k: usize,
    socket: std::path::PathBuf,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> (usize, usize) {
    let mut client = Client::connect(&socket).await.unwrap();
    let (mut answered, mut reconnects, mut i) = (0usize, 0usize, 0usize);
    // At least 2 answers, and until told to stop (after the restart).
    while answered < 2 || !stop.load(std::sync::atomic::Ordering::SeqCst) {
        i += 1;
        let p = serde_json::to_value(CheckParams::new(format!(
            "theorem c{k}_{i} : {i} + {k} = {} := rfl\n",
            i + k
        )))
        .unwrap();
        let r: leanpool_protocol::CheckResult = serde_json::from_value(
            call_surviving(&mut client, &socket, "check", p, &mut reconnects).await,
        )
        .unwrap();
        assert_eq!(r.status, CheckStatus::Ok, "client {k} check {i}: {r:?}");
        answered += 1;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    (answered, reconnects)
}

/// SIGKILL: the daemon gets no chance to clean up. Its workers read EOF
/// on stdin and exit by themselves (allow them a moment).
async fn sigkill_and_wait_for_workers(d: &mut Daemon, old: &[u32]) {
    d.signal(Signal::SIGKILL);
    assert!(!d.wait_exit(Duration::from_secs(60)).success());
    let gone_by = Instant::now() + Duration::from_secs(30);
    while old.iter().any(|p| alive(*p as i32)) && Instant::now() < gone_by {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for pid in old {
        assert!(
            !alive(*pid as i32),
            "Lean worker {pid} outlived its SIGKILLed daemon by 30 s"
        );
    }
}
