//! Requests in the queue: recycling after `max_uses`, a full queue, dropped requests and callers that disconnect.

use super::*;

pub(crate) async fn max_uses_recycles(cx: Ctx) {
    let pool = cx.fake_pool(PoolConfig {
        max_uses: 2,
        ..base_cfg()
    });
    let mut seen = vec![];
    for i in 0..3 {
        pool.call::<method::Check>(CheckParams::new(format!(
            "theorem t{i} : True := trivial\n"
        )))
        .await
        .unwrap();
        // Log lines are "<pid> <last line>": which process served it.
        let log = cx.log_text();
        let pid: u32 = log
            .lines()
            .last()
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        seen.push(pid);
    }
    assert_eq!(seen[0], seen[1]);
    assert_ne!(seen[1], seen[2]);
    assert!(!procs::alive(seen[0]));
    assert_eq!(pool.status().counters.recycles, 1);
    finish(pool).await;
}

pub(crate) async fn full_queue_is_overloaded(cx: Ctx) {
    let pool = cx.fake_pool(PoolConfig {
        max_queue_per_key: 1,
        ..base_cfg()
    });
    let (a, b) = busy_and_one_queued(
        &pool,
        "theorem a : True := trivial\n-- FAKE sleep 800\n",
        "theorem b : True := trivial\n",
    )
    .await;
    let e = error_of(&pool, "theorem c : True := trivial\n").await;
    assert_eq!(
        e,
        PoolError::Overloaded {
            queued: 1,
            limit: 1
        }
    );
    assert_eq!(e.code(), ErrorCode::Overloaded);
    assert_eq!(a.await.unwrap().unwrap().status, CheckStatus::Ok);
    assert_eq!(b.await.unwrap().unwrap().status, CheckStatus::Ok);
    assert_eq!(pool.status().counters.overloaded, 1);
    finish(pool).await;
}

pub(crate) async fn dropped_request_is_skipped(cx: Ctx) {
    let pool = cx.fake_pool(base_cfg());
    let a = spawn_check(&pool, "theorem a : True := trivial\n-- FAKE sleep 600\n");
    wait_busy("a busy", &pool).await;
    // The caller of b goes away while b waits in the queue.
    let gone = tokio::time::timeout(
        Duration::from_millis(100),
        pool.call::<method::Check>(CheckParams::new("theorem dropped_b : True := trivial\n")),
    )
    .await;
    assert!(gone.is_err());
    let c = pool
        .call::<method::Check>(CheckParams::new("theorem c : True := trivial\n"))
        .await
        .unwrap();
    assert_eq!(c.status, CheckStatus::Ok);
    a.await.unwrap().unwrap();
    let log = cx.log_text();
    assert!(log.contains("theorem c"), "{log}");
    assert!(
        !log.contains("dropped_b"),
        "a dropped request was run:\n{log}"
    );
    assert_eq!(pool.status().counters.cancelled, 1);
    finish(pool).await;
}

/// A caller that goes away while its request runs: Lean is interrupted
/// (a header-only edit) and, once it has finished that edit and gone
/// quiet, the same worker serves the next caller (`cancel_kills` 0).
pub(crate) async fn disconnect_interrupt_keeps_a_quiet_worker(cx: Ctx) {
    let (pool, first) = warm_pool(&cx, 5_000).await;
    // The caller goes away mid-request.
    abort_while_busy(
        &pool,
        "theorem gone : True := trivial\n-- FAKE sleep 3000\n",
    )
    .await;
    assert_eq!(
        next_served_by(&cx, &pool).await,
        first,
        "a quiet interrupted worker was not kept"
    );
    let c = pool.status().counters;
    assert_eq!((c.cancelled, c.cancel_kills, c.spawns), (1, 0, 1), "{c:?}");
    finish(pool).await;
}

/// The attack: a caller sends text whose elaboration ignores Lean's
/// cancellation (the fake's spinning threads; real Lean's large `decide`
/// does the same, see `daemon_lean`), then disconnects. The worker
/// answered the interrupting edit but keeps computing: it must not be kept
/// to steal the CPU from every later caller. It is killed when the grace
/// is over and the next caller is served by a new worker.
pub(crate) async fn attack_disconnect_leaving_lean_computing_kills_the_worker(cx: Ctx) {
    let (pool, first) = warm_pool(&cx, 1_500).await;
    abort_while_busy(
        &pool,
        "theorem gone : True := trivial\n-- FAKE spin_bg\n-- FAKE sleep 400\n",
    )
    .await;
    assert_ne!(
        next_served_by(&cx, &pool).await,
        first,
        "a worker still computing a departed caller's text was kept"
    );
    wait_until("the computing worker gone", || !procs::alive(first)).await;
    let c = pool.status().counters;
    assert_eq!(
        (c.cancelled, c.cancel_kills, c.timeouts, c.timeout_kills),
        (1, 1, 0, 0),
        "{c:?}"
    );
    finish(pool).await;
}
