//! Leases: which worker a lease takes and what the pool keeps.

use super::*;

/// A lease takes the warm spare (no new start for the leaser), the pool
/// refills the prewarm minimum behind it, the leased worker is no longer
/// the pool's (requests go to the refill), and killing it leaves nothing.
pub(crate) async fn lease_takes_the_spare_and_the_pool_refills(cx: Ctx) {
    let cfg = PoolConfig {
        prewarm: prewarm_one("import P\n"),
        ..base_cfg()
    };
    let pool = cx.fake_pool(cfg);
    wait_idle_worker_of(&pool, "import P\n").await;
    let spare = pids(&pool, "import P\n");
    // Header equal up to comments and blank lines: same key.
    let leased = pool
        .lease("-- mine\nimport P\n\ntheorem x : True := trivial\n")
        .await
        .unwrap();
    assert_eq!(
        vec![leased.worker.pid()],
        spare,
        "the lease must take the ready spare"
    );
    wait_until("refilled", || {
        pids(&pool, "import P\n").len() == 1 && pids(&pool, "import P\n") != spare
    })
    .await;
    assert_ok(&pool, "import P\ntheorem t : True := trivial\n").await;
    assert_eq!(
        pool.status().workers,
        1,
        "a leased worker does not count as the pool's"
    );
    let mut w = leased.worker;
    assert!(w.is_alive());
    w.kill().await;
    // A lease for a header with no worker waits for a fresh start.
    let other = pool.lease("import Q\n").await.unwrap();
    assert!(other.worker.pid() > 0);
    drop(other);
    finish(pool).await;
}

/// Issue 26 (a lease starts clean and leaves the pool its warmth): after
/// the header's worker served a caller's text, a lease gets a process
/// started for it (never that worker), while the used worker stays and
/// keeps serving the header with no cold wait. Fake Lean: the claim here
/// is which process the pool hands out (the leak itself is tested on real
/// Lean in `crates/leanpool/tests/lease_lean/`).
pub(crate) async fn lease_never_takes_a_used_worker(cx: Ctx) {
    let pool = cx.fake_pool(PoolConfig {
        spares_per_key: 0,
        ..base_cfg()
    });
    let secret = "import P\ndef victimPassword : String := \"hunter2\"\n";
    assert_eq!(status_of(&pool, secret).await, CheckStatus::Ok);
    let serving = pids(&pool, "import P\n");
    assert_eq!(serving.len(), 1);
    let leased = pool.lease("import P\n").await.unwrap();
    assert!(
        !serving.contains(&leased.worker.pid()),
        "the lease took the worker that served another caller's text"
    );
    assert!(leased.worker.pristine());
    assert_eq!(
        pids(&pool, "import P\n"),
        serving,
        "the serving worker stays"
    );
    let cold = pool.status().counters.cold_waits;
    assert_ok(&pool, "import P\ntheorem t : True := trivial\n").await;
    let c = pool.status().counters;
    assert_eq!(c.cold_waits, cold, "the next check waited for a start");
    assert_eq!((c.leases_fresh, c.leases_pristine), (1, 0));
    drop(leased);
    finish(pool).await;
}

/// A lease whose caller gave up before a worker was ready takes nothing:
/// the worker stays in the pool.
pub(crate) async fn dropped_lease_leaves_the_worker_in_the_pool(cx: Ctx) {
    let pool = cx.fake_pool(base_cfg());
    let r = tokio::time::timeout(Duration::from_millis(1), pool.lease("import R\n")).await;
    assert!(r.is_err(), "a fake worker cannot start within 1 ms");
    wait_until("worker idle", || {
        pool.status().keys.iter().any(|k| {
            k.header == "import R\n" && k.workers.iter().any(|w| w.state == WorkerState::Idle)
        })
    })
    .await;
    assert_ok(&pool, "import R\ntheorem t : True := trivial\n").await;
    assert_eq!(pool.status().counters.spawns, 1);
    finish(pool).await;
}
