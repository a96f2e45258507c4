//! Worker lifecycle: eviction, idle time-out, memory caps, failed starts, shutdown, rlimits, guard refusals.

use super::*;

pub(crate) async fn lru_idle_worker_evicted_for_new_header(cx: Ctx) {
    let pool = cx.fake_pool(base_cfg());
    pool.call::<method::Check>(CheckParams::new("import A\ntheorem a : True := trivial\n"))
        .await
        .unwrap();
    pool.call::<method::Check>(CheckParams::new("import B\ntheorem b : True := trivial\n"))
        .await
        .unwrap();
    let pb = pids(&pool, "import B\n");
    // Global max (2) reached; A has been idle longest.
    assert_ok(&pool, "import C\ntheorem c : True := trivial\n").await;
    assert!(pids(&pool, "import A\n").is_empty());
    assert_eq!(pids(&pool, "import B\n"), pb);
    assert_eq!(pids(&pool, "import C\n").len(), 1);
    assert_eq!(pool.status().counters.evictions, 1);
    assert!(pool.status().workers <= 2);
    finish(pool).await;
}

pub(crate) async fn idle_timeout_keeps_prewarm_minimum(cx: Ctx) {
    let cfg = PoolConfig {
        idle_timeout_ms: 200,
        prewarm: prewarm_one("-- warm\n\nimport P   \n"),
        ..base_cfg()
    };
    let pool = cx.fake_pool(cfg);
    // The prewarm worker starts without any request.
    wait_idle_worker_of(&pool, "import P\n").await;
    pool.call::<method::Check>(CheckParams::new("import Q\ntheorem q : True := trivial\n"))
        .await
        .unwrap();
    wait_until("Q retired", || pids(&pool, "import Q\n").is_empty()).await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(pids(&pool, "import P\n").len(), 1);
    assert!(pool.status().counters.idle_retirements >= 1);
    finish(pool).await;
}

pub(crate) async fn memory_cap_kills_the_worker(cx: Ctx) {
    let pool = cx.fake_pool(PoolConfig {
        rss_limit_bytes: Some(150 << 20),
        ..base_cfg()
    });
    assert_memory_cap_kill(&pool, "theorem a : True := trivial\n-- FAKE alloc 400\n").await;
    assert_eq!(pool.status().counters.memory_kills, 1);
    assert_ok(&pool, "theorem b : True := trivial\n").await;
    finish(pool).await;
}

/// The cap relative to the worker's RSS at ready: the fake's baseline is
/// a few MB, so 150 MB of headroom lets a small request through and stops
/// a 400 MB one; status shows the effective cap.
pub(crate) async fn memory_headroom_is_relative_to_ready_rss(cx: Ctx) {
    let pool = cx.fake_pool(PoolConfig {
        rss_headroom_bytes: Some(150 << 20),
        ..base_cfg()
    });
    assert_ok(&pool, "theorem a : True := trivial\n").await;
    let w = pool
        .status()
        .keys
        .iter()
        .flat_map(|k| k.workers.clone())
        .find(|w| w.pid.is_some())
        .unwrap();
    let cap = w.rss_cap_bytes.expect("a cap in status");
    assert!(
        cap > 150 << 20 && cap < 300 << 20,
        "cap {cap} should be the ready RSS + 150 MB"
    );
    assert_memory_cap_kill(&pool, "theorem b : True := trivial\n-- FAKE alloc 400\n").await;
    assert_eq!(pool.status().counters.memory_kills, 1);
    assert_ok(&pool, "theorem c : True := trivial\n").await;
    finish(pool).await;
}

pub(crate) async fn failed_start_is_answered(cx: Ctx) {
    let pool = cx.fake_pool(base_cfg());
    let e = error_of(&pool, "import FakeDieOnOpen\ntheorem a : True := trivial\n").await;
    assert!(matches!(e, PoolError::SpawnFailed(_)), "{e:?}");
    assert_ok(&pool, "theorem b : True := trivial\n").await;
    assert_eq!(pool.status().counters.spawn_failures, 1);
    finish(pool).await;
}

/// Work a worker has (`a` running, `b` queued behind it) is finished by a
/// graceful shutdown; new work is refused. (It used to wait only for both
/// requests to be counted, which they are before they are screened and
/// queued: on a loaded machine the shutdown could begin before either had
/// a worker, see `request_opening_at_shutdown_is_answered`.)
pub(crate) async fn graceful_shutdown_finishes_queued_work(cx: Ctx) {
    let pool = cx.fake_pool(base_cfg());
    let (a, b) = busy_and_one_queued(
        &pool,
        "theorem a : True := trivial\n-- FAKE sleep 1500\n",
        "theorem b : True := trivial\n",
    )
    .await;
    pool.shutdown(Duration::from_secs(5)).await;
    assert_eq!(a.await.unwrap().unwrap().status, CheckStatus::Ok);
    assert_eq!(b.await.unwrap().unwrap().status, CheckStatus::Ok);
    assert_eq!(
        pool.call::<method::Check>(CheckParams::new("theorem c : True := trivial\n"))
            .await
            .unwrap_err(),
        PoolError::ShuttingDown
    );
    procs::assert_no_workers_left().await;
}

pub(crate) async fn shutdown_deadline_answers_in_flight(cx: Ctx) {
    let pool = cx.fake_pool(base_cfg());
    let (a, b) = busy_and_one_queued(
        &pool,
        "theorem a : True := trivial\n-- FAKE sleep 5000\n",
        "theorem b : True := trivial\n",
    )
    .await;
    pool.shutdown(Duration::from_millis(100)).await;
    assert_eq!(a.await.unwrap().unwrap_err(), PoolError::ShuttingDown);
    assert_eq!(b.await.unwrap().unwrap_err(), PoolError::ShuttingDown);
    procs::assert_no_workers_left().await;
}

pub(crate) async fn dropping_the_pool_kills_workers(cx: Ctx) {
    let pool = cx.fake_pool(PoolConfig {
        prewarm: vec![PrewarmEntry {
            header: String::new(),
            min: 1,
        }],
        ..base_cfg()
    });
    wait_until("prewarm", || !pids(&pool, "").is_empty()).await;
    let pid = pids(&pool, "")[0];
    let clone = pool.clone();
    drop(pool);
    assert!(procs::alive(pid), "a clone still holds the pool");
    drop(clone);
    procs::assert_no_workers_left().await;
}

pub(crate) async fn rlimit_as_is_applied(cx: Ctx) {
    let pool = cx.fake_pool(PoolConfig {
        rlimit_as_bytes: Some(64 << 30),
        ..base_cfg()
    });
    pool.call::<method::Check>(CheckParams::new("theorem a : True := trivial\n"))
        .await
        .unwrap();
    let pid = pids(&pool, "")[0];
    assert_eq!(procs::address_space_limit(pid), Some(64 << 30));
    finish(pool).await;
}

pub(crate) async fn guard_rejection_touches_no_worker(cx: Ctx) {
    let pool = cx.fake_pool(base_cfg());
    for text in ["#eval 1 + 1\n", "open Bad\nrun_cmd pure ()\n"] {
        let r = pool
            .call::<method::Check>(CheckParams::new(text))
            .await
            .unwrap();
        assert_eq!(r.status, CheckStatus::Rejected, "{text}");
        assert!(r.reason.is_some_and(|m| !m.is_empty()));
    }
    // With `timings`, `opt` carries its time in `check.elapsed_ms` as
    // every Lean method does (the refused answer too).
    let p = leanpool_protocol::StatementParams::new("#eval 1\ntheorem t : True := trivial\n")
        .with_timings();
    let opt = pool.call::<method::Opt>(p).await.unwrap();
    assert_eq!(opt.check.status, CheckStatus::Rejected);
    assert!(opt.check.elapsed_ms.is_some(), "{opt:?}");
    let s = pool.status();
    assert_eq!(
        (s.counters.rejections, s.counters.spawns, s.workers),
        (3, 0, 0)
    );
    assert!(
        s.keys.is_empty(),
        "a rejected request created a header entry"
    );
    assert_eq!(cx.log_text(), "");
    finish(pool).await;
}

/// A request accepted just before shutdown begins, still in its opening
/// step (screening, off the runtime's threads) while shutdown drains the
/// queues, gets its one answer. It used to reach a queue after the drain
/// and wait there forever (`graceful_shutdown_finishes_queued_work` hung
/// about once in 200 runs on a loaded machine). A large text makes the
/// screening outlast the start of the shutdown.
pub(crate) async fn request_opening_at_shutdown_is_answered(cx: Ctx) {
    let pool = cx.fake_pool(base_cfg());
    let padding = "-- padding padding padding padding\n".repeat(1 << 20);
    let text = format!("theorem a : True := trivial\n{padding}");
    let p = pool.clone();
    let a = tokio::spawn(async move { p.call::<method::Check>(CheckParams::new(text)).await });
    while pool.status().counters.requests == 0 {
        tokio::task::yield_now().await;
    }
    pool.shutdown(Duration::from_secs(5)).await;
    let r = tokio::time::timeout(Duration::from_secs(30), a)
        .await
        .expect("a request accepted before the shutdown was never answered")
        .unwrap();
    assert_eq!(r.unwrap_err(), PoolError::ShuttingDown);
    procs::assert_no_workers_left().await;
}
