//! The pool on REAL Lean (WASM build from `scripts/setup`, or native
//! `lean`): fails, never skips, when no Lean is installed.
//!
//! A WASM worker holds 3-7 GB and takes 25-200 s to start (loaded
//! machine), so this is one test walking through the phases in an order
//! that reuses workers and never has more than two alive
//! (`max_workers = 2`): prewarm; SIGKILL mid-request (answered via the
//! retry); two headers served at once, with the second header's queue
//! overloaded while its worker starts; max-uses recycling; timeout (worker
//! killed, replacement started); shutdown (no Lean process left, checked in
//! `/proc`). Before its second worker it waits (up to 10 min) until at
//! most one Lean worker runs on the machine (shared development machines
//! here allow two).
//!
//! Texts use the header `set_option maxHeartbeats 0` (as miniF2F files
//! do) so the slow statements run into the pool's limits, not Lean's.

use leanpool_lean::LeanCommand;
use leanpool_pool::{Pool, PoolConfig, PoolError, PrewarmEntry, WorkerState};
use leanpool_protocol::method;
use leanpool_protocol::{CheckParams, CheckStatus};
use leanpool_testkit::poll::wait_until;
use leanpool_testkit::procs;
use leanpool_testkit::workers::{pids, roles};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// `decide` over 10^n cases: measured on the WASM build (driver test
/// `lean_worker.rs`), 10^3 cases take ~2.6 s, 10^4 ~30 s.
fn decide_cases(n: usize) -> String {
    let vars = ["a", "b", "c", "d", "e", "f"];
    let binders: String = vars[..n].iter().map(|v| format!("∀ {v} < 10, ")).collect();
    format!(
        "theorem slow : {binders}{} < 100 := by decide\n",
        vars[..n].join(" + ")
    )
}

const H: &str = "set_option maxHeartbeats 0\n";
/// The worker key of texts starting with `H`: workers are keyed by imports
/// only, so the option travels with each text.
const K_H: &str = "";

/// Lean worker processes on the whole machine (anyone's).
fn lean_workers_on_machine() -> usize {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let cmd = String::from_utf8_lossy(&cmd);
            cmd.contains("--worker") && cmd.contains("lean") && procs::alive(*pid)
        })
        .count()
}

fn state_of(pool: &Pool, header: &str) -> Option<WorkerState> {
    pool.status()
        .keys
        .iter()
        .find(|k| k.header == header)
        .and_then(|k| k.workers.first().map(|w| w.state))
}

/// Waits until `serving` (the former spare) is the header's one idle
/// serving worker; on time-out the panic shows the pool's status.
async fn wait_serving(pool: &Pool, serving: &[u32]) {
    let end = Instant::now() + Duration::from_secs(60);
    while Instant::now() < end {
        if roles(pool, K_H).0 == serving {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!(
        "the former spare {serving:?} is not the serving worker: roles {:?}, status {:#?}",
        roles(pool, K_H),
        pool.status()
    );
}

fn log(msg: &str) {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    eprintln!(
        "[pool_lean {:>7.1}s] {msg}",
        START.get_or_init(Instant::now).elapsed().as_secs_f64()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pool_on_real_lean() {
    log("start");
    let lean = LeanCommand::detect().expect("a Lean installation is required (run scripts/setup)");
    let pool = Pool::new(
        lean,
        memory_short_config(),
        Default::default(),
        Default::default(),
    );
    let mut seen_pids = BTreeSet::new();
    prewarm_without_a_spare(&pool).await;
    note(&pool, &mut seen_pids);
    sigkill_mid_request_is_answered_from_the_retry(&pool).await;
    note(&pool, &mut seen_pids);
    let p_nat = two_headers_and_an_overload(&pool).await;
    note(&pool, &mut seen_pids);
    max_uses_recycles(&pool, &p_nat).await;
    timeout_kills_and_replaces(&pool).await;
    note(&pool, &mut seen_pids);

    // Status has what the daemon reports.
    let s = pool.status();
    assert!(s.workers <= 2);
    assert!(
        s.latency
            .iter()
            .any(|m| m.method == "check" && m.total.samples >= 5),
        "{:?}",
        s.latency
    );
    println!("{}", serde_json::to_string_pretty(&s).unwrap());

    // Shutdown: no Lean process left.
    pool.shutdown(Duration::from_secs(30)).await;
    note(&pool, &mut seen_pids);
    for pid in &seen_pids {
        assert!(
            !procs::alive(*pid),
            "worker {pid} still running after shutdown"
        );
    }
    procs::assert_no_workers_left().await;
    log(&format!(
        "shutdown ok; {} worker processes seen, none left",
        seen_pids.len()
    ));
}

/// Records the pids of every worker `pool` has now.
fn note(pool: &Pool, seen_pids: &mut BTreeSet<u32>) {
    for k in pool.status().keys {
        seen_pids.extend(k.workers.iter().filter_map(|w| w.pid));
    }
}

/// Another import set (explicit `import Init`), so another key.
const NAT: &str = "import Init\nset_option maxHeartbeats 0\nopen Nat\n";
const K_NAT: &str = "import Init\n";

/// Two workers, one per key, queue 1, recycled after 3 uses; spares on,
/// but never started for lack of memory.
fn memory_short_config() -> PoolConfig {
    PoolConfig {
        prewarm: vec![PrewarmEntry {
            header: H.to_string(),
            min: 1,
        }],
        max_workers: Some(2),
        max_workers_per_key: Some(1),
        max_queue_per_key: 1,
        max_uses: 3,
        default_timeout_ms: 300_000,
        start_timeout_ms: 400_000,
        idle_timeout_ms: 0,
        // Spares on, but more memory asked for than any machine has: memory
        // is "short" by the daemon's own reading of `MemAvailable`, so no
        // spare starts (spares themselves: `spares_on_real_lean`).
        spares_per_key: 1,
        spare_memory_margin_bytes: u64::MAX / 4,
        ..PoolConfig::default()
    }
}

/// Prewarm: the empty header's worker starts with no request; memory
/// short: no spare, and status says why.
async fn prewarm_without_a_spare(pool: &Pool) {
    wait_until("prewarm worker", Duration::from_secs(600), || {
        state_of(pool, K_H) == Some(WorkerState::Idle)
    })
    .await;
    log("prewarmed");
    wait_until("spare refused for memory", Duration::from_secs(10), || {
        pool.status().keys.iter().any(|k| {
            k.header == K_H
                && k.spare_missing
                    .as_deref()
                    .is_some_and(|m| m.contains("memory short"))
        })
    })
    .await;
    let st = pool.status();
    assert_eq!(
        (st.workers, st.keys[0].spares, st.keys[0].workers.len()),
        (1, 0, 1),
        "{st:?}"
    );
}

/// SIGKILL mid-request: `decide` over 10^3 cases keeps the worker busy
/// for seconds; it is killed 300 ms in. Answered from the retry.
async fn sigkill_mid_request_is_answered_from_the_retry(pool: &Pool) {
    let p = pool.clone();
    let k = tokio::spawn(async move {
        p.call::<method::Check>(CheckParams::new(format!("{H}{}", decide_cases(3))))
            .await
    });
    let t = Instant::now();
    while state_of(pool, K_H) != Some(WorkerState::Busy) {
        assert!(t.elapsed() < Duration::from_secs(30), "k never became busy");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let victim = pids(pool, K_H)[0];
    assert_eq!(
        state_of(pool, K_H),
        Some(WorkerState::Busy),
        "request finished before the kill"
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(victim as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    log(&format!("killed {victim} mid-request"));
    let r = k.await.unwrap().expect("answered after the retry");
    assert_eq!(r.status, CheckStatus::Ok, "{r:?}");
    let c = pool.status().counters;
    assert_eq!((c.crashes, c.retries, c.worker_failed), (1, 1, 0), "{c:?}");
    assert!(!procs::alive(victim));
    assert!(!pids(pool, K_H).contains(&victim));
    log("kill mid-request answered");
}

/// Two headers at once on two workers. The second header's worker has
/// to start first, so its first request waits in its queue (limit 1)
/// and another one is refused `Overloaded`.
/// Shared machine: wait (up to 10 min) until only this test's worker
/// runs, then go on regardless (in CI nothing else runs).
async fn two_headers_and_an_overload(pool: &Pool) -> Vec<u32> {
    let t = Instant::now();
    while lean_workers_on_machine() > 1 && t.elapsed() < Duration::from_secs(600) {
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
    log(&format!(
        "{} Lean workers on the machine before the second header",
        lean_workers_on_machine()
    ));
    let p = pool.clone();
    let b1 = tokio::spawn(async move {
        p.call::<method::Check>(CheckParams::new(format!(
            "{NAT}theorem b (n : Nat) : n + 0 = n := by simp\n"
        )))
        .await
    });
    wait_until("b1 queued", Duration::from_secs(30), || {
        pool.status()
            .keys
            .iter()
            .any(|k| k.header == K_NAT && k.queue_depth == 1)
    })
    .await;
    let same = "-- same imports\nimport Init  \n\nset_option maxHeartbeats 0\nopen Real\ntheorem b2 : 1 = 1 := rfl\n";
    let e = pool
        .call::<method::Check>(CheckParams::new(same))
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            PoolError::Overloaded {
                queued: 1,
                limit: 1
            }
        ),
        "{e:?}"
    );
    let a = pool
        .call::<method::Check>(CheckParams::new(format!(
            "{H}theorem a : 2 + 2 = 4 := rfl\n"
        )))
        .await
        .unwrap();
    assert_eq!(a.status, CheckStatus::Ok);
    assert_eq!(b1.await.unwrap().unwrap().status, CheckStatus::Ok);
    let (p_h, p_nat) = (pids(pool, K_H), pids(pool, K_NAT));
    assert_eq!((p_h.len(), p_nat.len()), (1, 1));
    assert_ne!(p_h, p_nat);
    assert_eq!(pool.status().counters.overloaded, 1);
    let rss: Vec<u64> = pool
        .status()
        .keys
        .iter()
        .flat_map(|k| k.workers.iter().filter_map(|w| w.rss_bytes))
        .collect();
    assert!(
        rss.len() == 2 && rss.iter().all(|&b| b > 100 << 20),
        "RSS in status: {rss:?}"
    );
    log("two headers served, overload refused");
    p_nat
}

/// Second and third use of the `open Nat` worker: max_uses = 3
/// recycles it.
async fn max_uses_recycles(pool: &Pool, p_nat: &[u32]) {
    let bad = pool
        .call::<method::Check>(CheckParams::new(format!(
            "{NAT}\ntheorem c : 2 + 2 = 5 := by decide\n"
        )))
        .await
        .unwrap();
    assert_eq!(bad.status, CheckStatus::Error);
    assert_eq!(
        bad.diagnostics[0].range.start.line, 4,
        "position in the caller's text (line 4: three header lines, a blank line, the theorem)"
    );
    assert_eq!(pool.status().counters.recycles, 0);
    let r = pool
        .call::<method::Check>(CheckParams::new(format!(
            "{NAT}theorem b3 : 3 = 3 := rfl\n"
        )))
        .await
        .unwrap();
    assert_eq!(r.status, CheckStatus::Ok);
    wait_until("recycled", Duration::from_secs(30), || {
        pool.status().counters.recycles == 1
    })
    .await;
    wait_until("recycled process gone", Duration::from_secs(30), || {
        !procs::alive(p_nat[0])
    })
    .await;
    assert!(!pids(pool, K_NAT).contains(&p_nat[0]));
    log("recycled after max_uses");
}

/// Timeout: `decide` over 10^4 cases (~30 s) under a 3 s limit is
/// answered `timeout`; the worker is killed and a replacement started.
/// (No spare here: memory is short.)
async fn timeout_kills_and_replaces(pool: &Pool) {
    let before = pids(pool, K_H);
    let p = CheckParams::new(format!("{H}{}", decide_cases(4))).with_timeout_ms(3000);
    let r = pool.call::<method::Check>(p).await.unwrap();
    assert_eq!(r.status, CheckStatus::Timeout);
    assert_eq!(pool.status().counters.timeouts, 1);
    wait_until("timed-out process gone", Duration::from_secs(30), || {
        !procs::alive(before[0])
    })
    .await;
    wait_until("replacement slot", Duration::from_secs(30), || {
        let k = pool
            .status()
            .keys
            .into_iter()
            .find(|k| k.header == K_H)
            .unwrap();
        k.workers.len() == 1 && k.workers[0].pid != Some(before[0])
    })
    .await;
    log("timeout answered, replacement starting");
}

/// `(serving, spare)` pids of `header` whose process is up and idle.
/// Hot spares on real Lean: a recycled worker's and a timed-out worker's
/// next request is served by the ready spare, without waiting for a start
/// (`cold_waits` stays 0), and the replacement comes up as the new spare.
/// Two workers at once (serving + spare).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spares_on_real_lean() {
    log("spares: start");
    let lean = LeanCommand::detect().expect("a Lean installation is required (run scripts/setup)");
    let pool = Pool::new(
        lean,
        spares_config(),
        Default::default(),
        Default::default(),
    );
    wait_until("serving worker and spare ready", SPARES_LIMIT, || {
        both_up(&pool)
    })
    .await;
    let (serving, spare) = roles(&pool, K_H);
    log(&format!("spares: serving {serving:?}, spare {spare:?}"));
    recycled_worker_next_request_served_by_the_spare(&pool, &serving, &spare).await;
    timed_out_worker_next_request_served_by_the_spare(&pool).await;
    pool.shutdown(Duration::from_secs(30)).await;
    procs::assert_no_workers_left().await;
    log("spares: shutdown ok");
}

/// How long a worker start may take in `spares_on_real_lean`.
const SPARES_LIMIT: Duration = Duration::from_secs(600);

/// One serving worker and one spare of the empty header, both up and idle.
fn both_up(pool: &Pool) -> bool {
    let (s, sp) = roles(pool, K_H);
    s.len() == 1 && sp.len() == 1
}

/// One key with a spare, recycled after 2 uses, time-outs killing at once.
fn spares_config() -> PoolConfig {
    PoolConfig {
        prewarm: vec![PrewarmEntry {
            header: H.to_string(),
            min: 1,
        }],
        max_workers: Some(2),
        max_workers_per_key: Some(1),
        spares_per_key: 1,
        // A shared development machine may have less than a worker's RSS
        // + 1 GiB free; the memory gate itself is tested above.
        spare_memory_margin_bytes: 0,
        max_uses: 2,
        // The kill path, whatever the machine: with a grace, a fast machine
        // interrupts the timed-out `decide` and keeps the worker (then no
        // replacement is needed), a slow one kills it. The kept path's
        // spare is covered by `pool_fake` and `faults` (real Lean).
        timeout_grace_ms: 0,
        default_timeout_ms: 300_000,
        start_timeout_ms: 400_000,
        idle_timeout_ms: 0,
        ..PoolConfig::default()
    }
}

/// Two uses: recycled (max_uses = 2). The third request goes to the
/// spare, which was ready before it was sent. The three texts carry
/// three header variants with the same (no) imports: one key, no
/// worker started for any of them (spawns stays at the two above; a
/// replacement takes far longer than these requests to be ready).
async fn recycled_worker_next_request_served_by_the_spare(
    pool: &Pool,
    serving: &[u32],
    spare: &[u32],
) {
    let variants = [
        format!("{H}theorem r0 : 0 + 1 = 1 + 0 := by omega\n"),
        "open Nat\nset_option maxHeartbeats 0\ntheorem r1 (n : Nat) : succ n = n + 1 := rfl\n"
            .to_string(),
        "set_option maxRecDepth 1000\nopen List\ntheorem r2 : 2 + 2 = 4 := rfl\n".to_string(),
    ];
    for text in variants {
        let r = pool
            .call::<method::Check>(CheckParams::new(text))
            .await
            .unwrap();
        assert_eq!(r.status, CheckStatus::Ok, "{r:?}");
    }
    let c = pool.status().counters;
    assert_eq!(
        (c.recycles, c.spare_takeovers, c.cold_waits, c.spawns),
        (1, 1, 0, 2),
        "{c:?}"
    );
    assert_eq!(
        pool.status().keys.len(),
        1,
        "one key for the three header variants"
    );
    // The answer reaches the caller before its slot marks itself idle
    // again: wait for that, not for a snapshot taken at once.
    wait_serving(pool, spare).await;
    // The spare answers in ~0.1 s; tearing down the recycled multi-GB
    // process may take the kernel longer.
    wait_until("recycled worker gone", Duration::from_secs(30), || {
        !procs::alive(serving[0])
    })
    .await;
    log("spares: recycled worker's next request served by the spare");
}

/// Timeout on the (new) serving worker, once the recycled slot's
/// replacement is up as the spare: the next request goes to that spare.
async fn timed_out_worker_next_request_served_by_the_spare(pool: &Pool) {
    wait_until("replacement spare ready", SPARES_LIMIT, || both_up(pool)).await;
    let (serving, spare) = roles(pool, K_H);
    let p = CheckParams::new(format!("{H}{}", decide_cases(4))).with_timeout_ms(2000);
    assert_eq!(
        pool.call::<method::Check>(p).await.unwrap().status,
        CheckStatus::Timeout
    );
    let r = pool
        .call::<method::Check>(CheckParams::new(format!(
            "{H}theorem after : 1 = 1 := rfl\n"
        )))
        .await
        .unwrap();
    assert_eq!(r.status, CheckStatus::Ok, "{r:?}");
    let c = pool.status().counters;
    assert_eq!(
        (c.timeouts, c.spare_takeovers, c.cold_waits),
        (1, 2, 0),
        "{c:?}"
    );
    wait_serving(pool, &spare).await;
    wait_until("timed-out process gone", Duration::from_secs(30), || {
        !procs::alive(serving[0])
    })
    .await;
    log("spares: timed-out worker's next request served by the spare; cold_waits 0");
}
