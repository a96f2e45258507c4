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
use leanpool_protocol::{CheckParams, CheckResult, CheckStatus, ErrorCode, FailureCause};
use leanpool_testkit::harness::{fake_pool_config, Ctx};
use leanpool_testkit::procs;
use leanpool_testkit::workers::{pids, roles};
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

/// Waits (up to 10 s: fake workers start in milliseconds) until `cond`.
async fn wait_until(what: &str, cond: impl FnMut() -> bool) {
    leanpool_testkit::poll::wait_until(what, Duration::from_secs(10), cond).await
}

/// A fake pool with `base_cfg()` but `timeout_grace_ms`, warmed by one
/// request: the pool and the pid of the worker that served it.
async fn warm_pool(cx: &Ctx, timeout_grace_ms: u64) -> (Pool, u32) {
    let pool = cx.fake_pool(PoolConfig {
        timeout_grace_ms,
        ..base_cfg()
    });
    warm(&pool).await;
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

/// The error `pool` answers `text` with (it must answer with one).
async fn error_of(pool: &Pool, text: impl Into<String>) -> PoolError {
    pool.call::<method::Check>(CheckParams::new(text))
        .await
        .unwrap_err()
}

/// Checks `text` on `pool` and asserts the answer is `ok`.
async fn assert_ok(pool: &Pool, text: &str) {
    assert_eq!(status_of(pool, text).await, CheckStatus::Ok, "{text}");
}

/// The next caller's check (`theorem b`) is answered `ok`: the pid of the
/// worker that served it.
async fn next_served_by(cx: &Ctx, pool: &Pool) -> u32 {
    assert_ok(pool, "theorem b : True := trivial\n").await;
    last_served(cx)
}

/// The first request of `pool` (its header's first worker starts for it).
async fn warm(pool: &Pool) {
    pool.call::<method::Check>(CheckParams::new("theorem warm : True := trivial\n"))
        .await
        .unwrap();
}

/// Warms `pool` (spares on) and waits for the header's spare: (serving
/// pids, spare pids).
async fn warm_with_a_spare(pool: &Pool) -> (Vec<u32>, Vec<u32>) {
    warm(pool).await;
    wait_until("a spare up", || roles(pool, "").1.len() == 1).await;
    roles(pool, "")
}

/// A prewarm minimum of one worker for `header`.
fn prewarm_one(header: &str) -> Vec<PrewarmEntry> {
    vec![PrewarmEntry {
        header: header.into(),
        min: 1,
    }]
}

/// The answer to `text` checked on `pool` with a `timeout_ms` limit.
async fn check_within(pool: &Pool, text: &str, timeout_ms: u64) -> CheckResult {
    let p = CheckParams::new(text).with_timeout_ms(timeout_ms);
    pool.call::<method::Check>(p).await.unwrap()
}

/// The status of `text` checked on `pool` with a `timeout_ms` limit.
async fn status_within(pool: &Pool, text: &str, timeout_ms: u64) -> CheckStatus {
    check_within(pool, text, timeout_ms).await.status
}

/// Checks `text` on `pool` with a `timeout_ms` limit and asserts it timed
/// out; the answer.
async fn assert_times_out(pool: &Pool, text: &str, timeout_ms: u64) -> CheckResult {
    let r = check_within(pool, text, timeout_ms).await;
    assert_eq!(r.status, CheckStatus::Timeout, "{r:?}");
    r
}

/// A check running in a task of its own.
type Checking = tokio::task::JoinHandle<Result<CheckResult, PoolError>>;

/// Checks `text` on `pool` in a task of its own (a caller that may go
/// away: abort the task).
fn spawn_check(pool: &Pool, text: &'static str) -> Checking {
    let pool = pool.clone();
    tokio::spawn(async move { pool.call::<method::Check>(CheckParams::new(text)).await })
}

/// A caller of `text` that goes away mid-request: its check runs, the
/// caller's task is aborted once a worker is busy with it.
async fn abort_while_busy(pool: &Pool, text: &'static str) {
    let a = spawn_check(pool, text);
    wait_busy("a busy", pool).await;
    a.abort();
    let _ = a.await;
}

/// `busy` running on the header's one worker and `queued` waiting behind
/// it: their callers' tasks.
async fn busy_and_one_queued(
    pool: &Pool,
    busy: &'static str,
    queued: &'static str,
) -> (Checking, Checking) {
    let a = spawn_check(pool, busy);
    wait_busy("a busy", pool).await;
    let b = spawn_check(pool, queued);
    wait_until("b queued", || {
        pool.status().keys.iter().any(|k| k.queue_depth == 1)
    })
    .await;
    (a, b)
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
    let e = error_of(pool, text).await;
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
        request_opening_at_shutdown_is_answered,
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
