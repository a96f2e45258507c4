//! Pool tests against the FAKE Lean worker (`leanpool_testkit::fake_lean`
//! says what it imitates and why a fake is needed here: crashes on demand,
//! twice in a row, memory growth, start failures, forged frames, and
//! workers that start in milliseconds so queueing/eviction can be tested at
//! all). The same pool behaviours that real Lean can show are tested on
//! real Lean in `pool_lean.rs`.
//!
//! `harness = false`: this executable is also the fake worker
//! (`leanpool_testkit::harness::main`). Run one test with
//! `cargo test -p leanpool-pool --test pool_fake -- NAME`.
//!
//! The shared set-up helpers are here; the tests live in one module per
//! theme (spares, keys, failures, timeouts, queue, lifecycle, lease).

use leanpool_pool::{Pool, PoolConfig, PoolError, PrewarmEntry, WorkerState};
use leanpool_protocol::method;
use leanpool_protocol::{CheckParams, CheckStatus, ErrorCode, FailureCause};
use leanpool_testkit::harness::{fake_pool_config, Ctx};
use leanpool_testkit::procs;
use std::time::Duration;

fn base_cfg() -> PoolConfig {
    PoolConfig {
        default_timeout_ms: 10_000,
        health_interval_ms: 50,
        rss_poll_ms: 20,
        idle_timeout_ms: 0,
        max_uses: 0,
        min_timeout_ms: 1,
        rss_headroom_bytes: None,
        ..fake_pool_config()
    }
}

fn spares_cfg() -> PoolConfig {
    PoolConfig {
        spares_per_key: 1,
        max_workers: Some(3),
        spare_memory_margin_bytes: 0,
        ..base_cfg()
    }
}

/// (serving pids, spare pids) of `header`, counting only workers with a
/// process up and idle.
fn roles(pool: &Pool, header: &str) -> (Vec<u32>, Vec<u32>) {
    let st = pool.status();
    let k = st.keys.iter().find(|k| k.header == header);
    let ws: Vec<_> = k.map(|k| k.workers.clone()).unwrap_or_default();
    let up = |spare: bool| {
        ws.iter()
            .filter(|w| w.spare == spare && w.state == WorkerState::Idle)
            .filter_map(|w| w.pid)
            .collect()
    };
    (up(false), up(true))
}

/// The pid that served the last request (the fake logs "<pid> <line>").
/// A worker's warm-up edit at its start is logged too and is no request:
/// skipped (a replacement starting beside a retry would otherwise pass for
/// the worker that served it).
fn last_served(cx: &Ctx) -> u32 {
    let warmup = leanpool_lean::DEFAULT_WARMUP
        .trim_end()
        .lines()
        .last()
        .unwrap();
    cx.log_text()
        .lines()
        .rfind(|l| !l.ends_with(warmup))
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// Pids of the workers of `header` (canonical form), in slot order.
fn pids(pool: &Pool, header: &str) -> Vec<u32> {
    pool.status()
        .keys
        .iter()
        .filter(|k| k.header == header)
        .flat_map(|k| k.workers.iter().filter_map(|w| w.pid))
        .collect()
}

async fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    for _ in 0..500 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("timed out waiting for: {what}");
}

/// A fake pool with `base_cfg()` but `timeout_grace_ms`, warmed by one
/// request: the pool and the pid of the worker that served it.
async fn warm_pool(cx: &Ctx, timeout_grace_ms: u64) -> (Pool, u32) {
    let pool = cx.fake_pool(PoolConfig {
        timeout_grace_ms,
        ..base_cfg()
    });
    pool.call::<method::Check>(CheckParams::new("theorem warm : True := trivial\n"))
        .await
        .unwrap();
    let first = last_served(cx);
    (pool, first)
}

/// The status of `text` checked on `pool` (which must answer it).
async fn status_of(pool: &Pool, text: &str) -> CheckStatus {
    pool.call::<method::Check>(CheckParams::new(text))
        .await
        .unwrap()
        .status
}

/// The status of `text` checked on `pool` with a `timeout_ms` limit.
async fn status_within(pool: &Pool, text: &str, timeout_ms: u64) -> CheckStatus {
    let p = CheckParams::new(text).with_timeout_ms(timeout_ms);
    pool.call::<method::Check>(p).await.unwrap().status
}

/// Checks `text` on `pool` in a task of its own (a caller that may go
/// away: abort the task).
fn spawn_check(
    pool: &Pool,
    text: &'static str,
) -> tokio::task::JoinHandle<Result<leanpool_protocol::CheckResult, PoolError>> {
    let pool = pool.clone();
    tokio::spawn(async move { pool.call::<method::Check>(CheckParams::new(text)).await })
}

/// Waits until some worker of `pool` is busy.
async fn wait_busy(what: &str, pool: &Pool) {
    wait_until(what, || {
        pool.status()
            .keys
            .iter()
            .any(|k| k.workers.iter().any(|w| w.state == WorkerState::Busy))
    })
    .await;
}

/// Checks `text` (which allocates past the cap) on `pool`: the worker is
/// killed for its memory and the caller is told so.
async fn assert_memory_cap_kill(pool: &Pool, text: &str) {
    let e = pool
        .call::<method::Check>(CheckParams::new(text))
        .await
        .unwrap_err();
    assert!(
        matches!(e, PoolError::WorkerFailed { cause: FailureCause::MemoryCap, ref message } if message.contains("memory limit")),
        "{e:?}"
    );
}

/// A text whose worker crashes the first time it sees it (a flag file in
/// the test's directory remembers), and elaborates the second time.
fn crash_once(cx: &Ctx) -> String {
    format!(
        "theorem a : True := trivial\n-- FAKE crash_once {}\n",
        cx.path("flag")
    )
}

/// Waits until `header` (canonical form) has an idle worker.
async fn wait_idle_worker_of(pool: &Pool, header: &str) {
    wait_until("prewarm worker idle", || {
        pool.status()
            .keys
            .iter()
            .any(|k| k.header == header && k.workers.iter().any(|w| w.state == WorkerState::Idle))
    })
    .await;
}

/// Shuts the pool down and checks that no worker process is left.
async fn finish(pool: Pool) {
    pool.shutdown(Duration::from_secs(5)).await;
    assert_eq!(pool.status().workers, 0);
    procs::assert_no_workers_left().await;
}

// ---------------------------------------------------------------- tests

mod failures;
mod keys;
mod lease;
mod lifecycle;
mod queue;
mod spares;
mod timeouts;
use failures::*;
use keys::*;
use lease::*;
use lifecycle::*;
use queue::*;
use spares::*;
use timeouts::*;

// ---------------------------------------------------------------- runner

fn main() {
    leanpool_testkit::harness::main(leanpool_testkit::tests![
        crash_retry_goes_to_the_ready_spare,
        timeout_and_recycle_served_by_the_spare,
        no_spare_when_memory_is_short,
        spare_yields_to_another_header,
        two_headers_two_workers,
        attack_isolated_callers_never_share_a_worker,
        crash_once_is_retried_on_a_fresh_worker,
        crash_twice_is_worker_failed,
        forged_frame_kills_the_worker_without_retry,
        unreadable_answer_is_unexpected_answer,
        timeout_replaces_the_worker,
        timeout_interrupted_keeps_the_worker,
        timeout_in_the_barrier_keeps_the_worker,
        timeout_interrupt_lets_the_spare_serve,
        timeout_grace_expires_kills_and_replaces,
        timeout_while_lean_keeps_computing_kills,
        timeout_ms_is_clamped_to_the_configured_range,
        max_uses_recycles,
        full_queue_is_overloaded,
        dropped_request_is_skipped,
        disconnect_interrupt_keeps_a_quiet_worker,
        attack_disconnect_leaving_lean_computing_kills_the_worker,
        lru_idle_worker_evicted_for_new_header,
        idle_timeout_keeps_prewarm_minimum,
        memory_cap_kills_the_worker,
        memory_headroom_is_relative_to_ready_rss,
        failed_start_is_answered,
        graceful_shutdown_finishes_queued_work,
        shutdown_deadline_answers_in_flight,
        dropping_the_pool_kills_workers,
        rlimit_as_is_applied,
        guard_rejection_touches_no_worker,
        concurrent_mix_every_request_answered,
        lease_takes_the_spare_and_the_pool_refills,
        dropped_lease_leaves_the_worker_in_the_pool,
        lease_never_takes_a_used_worker,
    ]);
}
