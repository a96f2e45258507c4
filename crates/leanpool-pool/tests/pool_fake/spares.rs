//! Spare workers: a ready spare serves retries and timed-out requests, waits for memory and yields to other headers.

use super::*;

/// A worker dying mid-request: the retry goes to the ready spare (no start
/// waited for), and the replacement comes up as the new spare.
pub(crate) async fn crash_retry_goes_to_the_ready_spare(cx: Ctx) {
    let pool = cx.fake_pool(spares_cfg());
    warm(&pool).await;
    let first = last_served(&cx);
    // The first worker marks itself idle after its answer is sent: wait
    // for both roles, not for a snapshot taken at once.
    wait_until("a spare up and the first worker idle", || {
        let (s, sp) = roles(&pool, "");
        s == vec![first] && sp.len() == 1
    })
    .await;
    let (_, spare) = roles(&pool, "");
    // Sequential requests stay on the serving worker: the spare stays unused.
    pool.call::<method::Check>(CheckParams::new("theorem again : True := trivial\n"))
        .await
        .unwrap();
    assert_eq!(last_served(&cx), first);
    let cold_before = pool.status().counters.cold_waits;
    assert_eq!(status_of(&pool, &crash_once(&cx)).await, CheckStatus::Ok);
    let c = pool.status().counters;
    assert_eq!(
        last_served(&cx),
        spare[0],
        "the retry ran on the spare; status {:#?}",
        pool.status()
    );
    assert_eq!(
        (
            c.crashes,
            c.retries,
            c.worker_failed,
            c.spare_takeovers,
            c.cold_waits
        ),
        (1, 1, 0, 1, cold_before),
        "{c:?}"
    );
    // The crashed slot's new process is the spare now.
    wait_until("replacement spare up", || {
        let (s, sp) = roles(&pool, "");
        s == spare && sp.len() == 1 && sp[0] != first
    })
    .await;
    assert!(!procs::alive(first));
    finish(pool).await;
}

/// Timed-out and recycled workers: the next request is served without
/// waiting for a start (`cold_waits` unchanged). With the fake's
/// millisecond starts the slot's replacement may be up before the next
/// request arrives, so which of the two serves it is not fixed here (it
/// is on real Lean: `pool_lean.rs`, `spares_on_real_lean`).
pub(crate) async fn timeout_and_recycle_served_by_the_spare(cx: Ctx) {
    // Grace 0: the timed-out worker is killed at once (the fake would
    // otherwise come back after its sleep and be kept).
    let pool = cx.fake_pool(PoolConfig {
        max_uses: 3,
        timeout_grace_ms: 0,
        ..spares_cfg()
    });
    warm(&pool).await;
    let cold = pool.status().counters.cold_waits;
    assert_eq!(cold, 1, "the very first request waited for the first start");
    wait_until("a spare up", || roles(&pool, "").1.len() == 1).await;
    let victim = roles(&pool, "").0[0];
    assert_times_out(
        &pool,
        "theorem a : True := trivial\n-- FAKE sleep 5000\n",
        200,
    )
    .await;
    pool.call::<method::Check>(CheckParams::new("theorem b : True := trivial\n"))
        .await
        .unwrap();
    assert_ne!(last_served(&cx), victim);
    wait_until("serving worker and spare up", || {
        let (s, sp) = roles(&pool, "");
        s.len() == 1 && sp.len() == 1
    })
    .await;
    let victim = roles(&pool, "").0[0];
    // Up to three uses of the serving worker: recycled after the third.
    for t in ["c", "d", "e", "f"] {
        pool.call::<method::Check>(CheckParams::new(format!("theorem {t} : True := trivial\n")))
            .await
            .unwrap();
    }
    assert_ne!(last_served(&cx), victim);
    let c = pool.status().counters;
    assert_eq!(
        (c.timeouts, c.timeout_kills, c.recycles, c.cold_waits),
        (1, 1, 1, cold),
        "{c:?}"
    );
    finish(pool).await;
}

/// Not enough `MemAvailable` for the measured worker plus the margin: no
/// spare, and `status` says why.
pub(crate) async fn no_spare_when_memory_is_short(cx: Ctx) {
    let pool = cx.fake_pool(PoolConfig {
        spare_memory_margin_bytes: u64::MAX / 4,
        ..spares_cfg()
    });
    warm(&pool).await;
    // The event: the supervisor has planned this key's spare and refused it.
    wait_until("the spare refused for memory", || {
        pool.status()
            .keys
            .first()
            .and_then(|k| k.spare_missing.clone())
            .is_some_and(|w| w.contains("memory short"))
    })
    .await;
    let st = pool.status();
    assert_eq!((st.workers, st.keys[0].spares), (1, 0));
    let why = st.keys[0].spare_missing.clone().unwrap_or_default();
    assert!(why.contains("memory short"), "{why}");
    finish(pool).await;
}

/// `max_workers` reached: the spare waits, and a new header's request
/// evicts the spare before any serving worker.
pub(crate) async fn spare_yields_to_another_header(cx: Ctx) {
    let pool = cx.fake_pool(PoolConfig {
        max_workers: Some(2),
        ..spares_cfg()
    });
    let (serving, _) = warm_with_a_spare(&pool).await;
    assert_ok(&pool, "import B\ntheorem b : True := trivial\n").await;
    assert_eq!(roles(&pool, "").0, serving);
    let st = pool.status();
    assert_eq!(st.counters.evictions, 1);
    assert!(st.keys.iter().all(|k| k.spares == 0));
    wait_until("no room noted", || {
        pool.status().keys.iter().any(|k| {
            k.spare_missing
                .as_deref()
                .is_some_and(|m| m.contains("max_workers"))
        })
    })
    .await;
    finish(pool).await;
}
