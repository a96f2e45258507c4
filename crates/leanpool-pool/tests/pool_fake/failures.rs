//! Workers that crash, forge frames or answer what leanpool cannot read.

use super::*;

pub(crate) async fn crash_once_is_retried_on_a_fresh_worker(cx: Ctx) {
    let pool = cx.fake_pool(base_cfg());
    warm(&pool).await;
    let before = pids(&pool, "");
    assert_eq!(status_of(&pool, &crash_once(&cx)).await, CheckStatus::Ok);
    let c = pool.status().counters;
    assert_eq!(
        (c.crashes, c.retries, c.worker_failed, c.spawns),
        (1, 1, 0, 2)
    );
    assert_ne!(pids(&pool, ""), before);
    finish(pool).await;
}

pub(crate) async fn crash_twice_is_worker_failed(cx: Ctx) {
    let pool = cx.fake_pool(base_cfg());
    let e = error_of(&pool, "theorem a : True := trivial\n-- FAKE crash\n").await;
    assert!(
        matches!(e, PoolError::WorkerFailed { cause: FailureCause::DiedTwice, ref message } if message.contains("twice")),
        "{e:?}"
    );
    assert_eq!(e.code(), ErrorCode::WorkerFailed);
    let c = pool.status().counters;
    assert_eq!((c.crashes, c.retries, c.worker_failed), (2, 1, 1));
    // The header is still served.
    assert_ok(&pool, "theorem b : True := trivial\n").await;
    finish(pool).await;
}

/// The issue-10 attack at the pool: a worker writes a frame the driver
/// never asked for (a forged `publishDiagnostics` for a version never sent,
/// then an answer to a request never made). Each request is answered
/// WORKER_FAILED / protocol_violation without a retry, the worker is killed
/// and never reused, `compromised` counts it, and the next check runs on a
/// fresh worker with a correct verdict.
pub(crate) async fn forged_frame_kills_the_worker_without_retry(cx: Ctx) {
    let pool = cx.fake_pool(base_cfg());
    warm(&pool).await;
    for (n, verb) in [(1, "forge_version"), (2, "forge_answer")] {
        let before = pids(&pool, "");
        let e = error_of(
            &pool,
            format!("theorem a : True := trivial\n-- FAKE {verb}\n"),
        )
        .await;
        assert_eq!(
            e.cause(),
            Some(FailureCause::ProtocolViolation),
            "{verb}: {e:?}"
        );
        assert_eq!(
            e.data(),
            Some(serde_json::json!({"cause": "protocol_violation"}))
        );
        let c = pool.status().counters;
        assert_eq!(
            (c.compromised, c.retries, c.crashes, c.worker_failed),
            (n, 0, 0, n),
            "{verb}"
        );
        wait_until("compromised worker gone", || !procs::alive(before[0])).await;
        // The next caller gets a fresh worker and the true verdict.
        let r = pool
            .call::<method::Check>(CheckParams::new(
                "theorem bad : True := trivial\n-- FAKE error\n",
            ))
            .await
            .unwrap();
        assert_eq!(r.status, CheckStatus::Error, "{verb}");
        assert_ne!(pids(&pool, ""), before, "{verb}");
    }
    finish(pool).await;
}

/// An answer leanpool cannot read (the fake echoes `$/lean/rpc/call`
/// where Lean sends the goals): `WORKER_FAILED` / `unexpected_answer`, not
/// a crash (no retry) and not leanpool's bug; the worker's state is
/// suspect, so it is replaced, and the next check gets a fresh one.
pub(crate) async fn unreadable_answer_is_unexpected_answer(cx: Ctx) {
    let pool = cx.fake_pool(base_cfg());
    warm(&pool).await;
    let before = pids(&pool, "");
    let p = leanpool_protocol::StatementParams::new("theorem a : True := sorry\n");
    let e = pool.call::<method::Normalize>(p).await.unwrap_err();
    assert_eq!(
        (e.code(), e.cause()),
        (
            ErrorCode::WorkerFailed,
            Some(FailureCause::UnexpectedAnswer)
        ),
        "{e:?}"
    );
    let c = pool.status().counters;
    assert_eq!((c.crashes, c.retries, c.worker_failed), (0, 0, 1));
    wait_until("the worker replaced", || !procs::alive(before[0])).await;
    assert_ok(&pool, "theorem b : True := trivial\n").await;
    assert_ne!(pids(&pool, ""), before);
    finish(pool).await;
}
