//! Time-outs: the interrupting edit, its grace, and the clamped `timeout_ms`.

use super::*;

/// `timeout_grace_ms = 0`: a time-out kills the worker at once (the
/// behaviour before interrupts), and it is replaced.
pub(crate) async fn timeout_replaces_the_worker(cx: Ctx) {
    let pool = cx.fake_pool(PoolConfig {
        timeout_grace_ms: 0,
        ..base_cfg()
    });
    warm(&pool).await;
    let before = pids(&pool, "");
    let r = assert_times_out(
        &pool,
        "theorem a : True := trivial\n-- FAKE sleep 5000\n",
        200,
    )
    .await;
    assert!(r.reason.unwrap().contains("200 ms"));
    wait_until("replacement worker", || {
        let p = pids(&pool, "");
        !p.is_empty() && p != before
    })
    .await;
    assert!(!procs::alive(before[0]));
    assert_ok(&pool, "theorem b : True := trivial\n").await;
    let c = pool.status().counters;
    assert_eq!((c.timeouts, c.timeout_kills), (1, 1), "{c:?}");
    finish(pool).await;
}

/// A time-out answered at once; Lean (the fake, done with its sleep) takes
/// the interrupting edit within the grace and is kept: the next request
/// runs on the same process, with no start, and gets exactly a fresh
/// worker's answer although the timed-out version's error diagnostic
/// arrived late, after the time-out (it must not leak into the next
/// answer).
pub(crate) async fn timeout_interrupted_keeps_the_worker(cx: Ctx) {
    let (pool, first) = warm_pool(&cx, 5_000).await;
    let t = std::time::Instant::now();
    assert_times_out(
        &pool,
        "theorem a : True := trivial\n-- FAKE error\n-- FAKE sleep 1500\n",
        200,
    )
    .await;
    assert!(
        t.elapsed() < Duration::from_millis(1500),
        "the time-out waited for the interrupt: {:?}",
        t.elapsed()
    );
    let r = pool
        .call::<method::Check>(CheckParams::new("theorem b : True := trivial\n"))
        .await
        .unwrap();
    assert_eq!(r.status, CheckStatus::Ok, "{r:?}");
    assert!(
        r.diagnostics.is_empty(),
        "the timed-out version's diagnostics leaked: {r:?}"
    );
    assert_eq!(
        last_served(&cx),
        first,
        "the worker was replaced, not interrupted"
    );
    let c = pool.status().counters;
    assert_eq!(
        (c.timeouts, c.timeout_kills, c.spawns, c.compromised),
        (1, 0, 1, 0),
        "{c:?}"
    );
    // A request in line behind the interrupt: the edit holding only the
    // header is the fake's next `didChange` after the timed-out one.
    let log = cx.log_text();
    let lines: Vec<&str> = log.lines().map(|l| l.split_once(' ').unwrap().1).collect();
    let at = lines
        .iter()
        .position(|l| l.contains("FAKE sleep 1500"))
        .unwrap();
    assert_eq!(
        lines[at + 1],
        "",
        "the interrupt is a header-only edit: {lines:?}"
    );
    finish(pool).await;
}

/// While a timed-out worker is being interrupted, the ready spare serves
/// its header (nobody waits for the grace); the interrupted worker, kept,
/// becomes the spare.
pub(crate) async fn timeout_interrupt_lets_the_spare_serve(cx: Ctx) {
    let pool = cx.fake_pool(PoolConfig {
        timeout_grace_ms: 8_000,
        ..spares_cfg()
    });
    let (serving, spare) = warm_with_a_spare(&pool).await;
    let t = std::time::Instant::now();
    assert_times_out(
        &pool,
        "theorem a : True := trivial\n-- FAKE sleep 3000\n",
        200,
    )
    .await;
    assert_eq!(
        next_served_by(&cx, &pool).await,
        spare[0],
        "not served by the spare"
    );
    assert!(
        t.elapsed() < Duration::from_millis(2500),
        "waited for the interrupt: {:?}",
        t.elapsed()
    );
    wait_until("the interrupted worker kept as the spare", || {
        roles(&pool, "") == (spare.clone(), serving.clone())
    })
    .await;
    let c = pool.status().counters;
    assert_eq!(
        (c.timeouts, c.timeout_kills, c.spawns, c.spare_takeovers),
        (1, 0, 2, 1),
        "{c:?}"
    );
    finish(pool).await;
}

/// A time-out inside the driver's `waitForDiagnostics` barrier: Lean
/// answers that request after the driver stopped waiting for it. The late
/// answer to a request the driver really sent is ignored (not taken for a
/// forged frame), and the worker is kept.
pub(crate) async fn timeout_in_the_barrier_keeps_the_worker(cx: Ctx) {
    let (pool, first) = warm_pool(&cx, 5_000).await;
    assert_times_out(
        &pool,
        "theorem a : True := trivial\n-- FAKE slow_barrier 1500\n",
        300,
    )
    .await;
    assert_eq!(next_served_by(&cx, &pool).await, first);
    let c = pool.status().counters;
    assert_eq!(
        (c.timeouts, c.timeout_kills, c.compromised, c.spawns),
        (1, 0, 0, 1),
        "{c:?}"
    );
    finish(pool).await;
}

/// A worker that does not take the interrupting edit within the grace
/// (the fake sleeps through it; real Lean cannot be made to ignore a
/// cancel on demand): the caller already had its `timeout`, the worker is
/// killed and replaced, and the next request is answered by the new one.
pub(crate) async fn timeout_grace_expires_kills_and_replaces(cx: Ctx) {
    let (pool, first) = warm_pool(&cx, 1_000).await;
    let t = std::time::Instant::now();
    assert_times_out(
        &pool,
        "theorem a : True := trivial\n-- FAKE sleep 30000\n",
        200,
    )
    .await;
    assert!(
        t.elapsed() < Duration::from_millis(1000),
        "the time-out waited for the grace: {:?}",
        t.elapsed()
    );
    assert!(procs::alive(first), "killed before its grace was over");
    assert_ne!(next_served_by(&cx, &pool).await, first);
    assert!(!procs::alive(first));
    let c = pool.status().counters;
    assert_eq!((c.timeouts, c.timeout_kills, c.spawns), (1, 1, 2), "{c:?}");
    finish(pool).await;
}

/// A worker that answers the interrupting edit but keeps computing beside
/// it (an elaboration ignoring the cancel; the fake's spinning threads):
/// not taken for an idle worker, killed when the grace is over.
pub(crate) async fn timeout_while_lean_keeps_computing_kills(cx: Ctx) {
    let (pool, first) = warm_pool(&cx, 1_500).await;
    assert_times_out(
        &pool,
        "theorem a : True := trivial\n-- FAKE spin_bg\n-- FAKE sleep 400\n",
        200,
    )
    .await;
    assert_ne!(
        next_served_by(&cx, &pool).await,
        first,
        "a worker still computing was kept"
    );
    let c = pool.status().counters;
    assert_eq!((c.timeouts, c.timeout_kills), (1, 1), "{c:?}");
    finish(pool).await;
}

/// The attacks: `timeout_ms: 1` killed the shared warm worker on demand,
/// and `timeout_ms: 2^64-1` was accepted (a worker held forever). Both are
/// clamped to the configured range: the first request still gets its
/// answer (300 ms were enough), the second times out at the maximum.
pub(crate) async fn timeout_ms_is_clamped_to_the_configured_range(cx: Ctx) {
    let cfg = PoolConfig {
        min_timeout_ms: 1_500,
        max_timeout_ms: 2_000,
        default_timeout_ms: 2_000,
        ..base_cfg()
    };
    let pool = cx.fake_pool(cfg);
    warm(&pool).await;
    let before = pids(&pool, "");
    assert_eq!(
        status_within(&pool, "theorem a : True := trivial\n-- FAKE sleep 300\n", 1).await,
        CheckStatus::Ok
    );
    assert_eq!(pids(&pool, ""), before, "the worker was killed");
    let r = assert_times_out(
        &pool,
        "theorem b : True := trivial\n-- FAKE sleep 10000\n",
        u64::MAX,
    )
    .await;
    assert!(r.reason.as_deref().unwrap().contains("2000 ms"), "{r:?}");
    finish(pool).await;
}
