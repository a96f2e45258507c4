//! Worker limits sized to the machine (issue 22 part 3), on a pool of FAKE
//! Lean workers (`leanpool_testkit::fake_lean`): the test needs workers that
//! start in milliseconds and are tiny, so that the measured RSS visibly
//! replaces the 4 GiB estimate; nothing here is about Lean's behaviour.
//! The formula itself is unit-tested in `src/sizing.rs`.
//!
//! `harness = false`: this executable is also the fake worker. Run one test
//! with `cargo test -p leanpool-pool --test sizing_fake -- NAME`.

use leanpool_pool::sizing::{self, Machine};
use leanpool_pool::{Pool, PoolConfig};
use leanpool_protocol::{method, CheckParams, CheckStatus, LimitSource};
use leanpool_testkit::harness::{fake_pool_config, Ctx};
use leanpool_testkit::procs;
use std::time::Duration;

fn sized_cfg() -> PoolConfig {
    PoolConfig {
        max_workers: None,
        max_workers_per_key: None,
        health_interval_ms: 50,
        idle_timeout_ms: 0,
        ..fake_pool_config()
    }
}

async fn finish(pool: Pool) {
    pool.shutdown(Duration::from_secs(5)).await;
    procs::assert_no_workers_left().await;
}

/// Before any worker: the estimate; after the first: its measured RSS, and
/// the limits re-sized from it. `status` says which and where from.
async fn sized_limits_follow_the_measured_worker(cx: Ctx) {
    let cfg = sized_cfg();
    let pool = cx.fake_pool(cfg.clone());
    let before = pool.status().limits.expect("status reports limits");
    assert_eq!(before.worker_rss, "estimate");
    let headroom = cfg.rss_headroom_bytes.unwrap_or(0);
    assert_eq!(before.worker_bytes, sizing::ESTIMATED_WORKER_RSS + headroom);
    assert_ne!(before.max_workers.source, LimitSource::Configured);
    assert_eq!(pool.status().max_workers, before.max_workers.value);
    let r = pool
        .call::<method::Check>(CheckParams::new("theorem a : True := trivial\n"))
        .await
        .unwrap();
    assert_eq!(r.status, CheckStatus::Ok);
    let after = pool.status().limits.unwrap();
    assert_eq!(after.worker_rss, "measured");
    // The fake is a few MB: well under the estimate.
    assert!(after.worker_bytes < before.worker_bytes, "{after:?}");
    assert!(after.worker_bytes > headroom, "{after:?}");
    // What the pool reports is the pure function of what it measured.
    let machine = Machine {
        cores: after.cores,
        memory_bytes: after.memory_bytes,
    };
    let expect = sizing::size(
        &cfg,
        Default::default(),
        machine,
        Some(after.worker_bytes - headroom),
    );
    assert_eq!(after, expect);
    assert_eq!(
        after.cores,
        std::thread::available_parallelism().unwrap().get()
    );
    finish(pool).await;
}

/// A sized per-key limit lets one import set use as many workers as the
/// machine allows (here as many as `status` says; 2 on the project's
/// 2-core machine): that many concurrent requests of ONE header run on that
/// many distinct workers.
async fn one_import_set_gets_the_sized_workers(cx: Ctx) {
    let pool = cx.fake_pool(sized_cfg());
    // Measure a worker first (the limit then follows the cores here).
    pool.call::<method::Check>(CheckParams::new("theorem w : True := trivial\n"))
        .await
        .unwrap();
    let n = pool.status().limits.unwrap().max_workers_per_key.value;
    let calls = (0..n * 2).map(|i| {
        let pool = pool.clone();
        async move {
            let text = format!("theorem t{i} : True := trivial\n-- FAKE sleep 400\n");
            pool.call::<method::Check>(CheckParams::new(&text))
                .await
                .unwrap()
        }
    });
    for r in futures_join(calls).await {
        assert_eq!(r.status, CheckStatus::Ok);
    }
    let pids: std::collections::BTreeSet<String> = cx
        .log_text()
        .lines()
        .filter(|l| l.contains("FAKE sleep"))
        .map(|l| l.split(' ').next().unwrap().to_string())
        .collect();
    assert_eq!(pids.len(), n, "{}", cx.log_text());
    let st = pool.status();
    assert_eq!(st.keys.len(), 1);
    finish(pool).await;
}

/// A configured limit is used as is and reported `configured`.
async fn configured_limits_are_reported_as_configured(cx: Ctx) {
    let pool = cx.fake_pool(PoolConfig {
        max_workers: Some(3),
        max_workers_per_key: Some(1),
        ..fake_pool_config()
    });
    let l = pool.status().limits.unwrap();
    assert_eq!(
        (l.max_workers.value, l.max_workers.source),
        (3, LimitSource::Configured)
    );
    assert_eq!(
        (l.max_workers_per_key.value, l.max_workers_per_key.source),
        (1, LimitSource::Configured)
    );
    finish(pool).await;
}

async fn futures_join<F: std::future::Future + Send + 'static>(
    fs: impl Iterator<Item = F>,
) -> Vec<F::Output>
where
    F::Output: Send,
{
    let hs: Vec<_> = fs.map(tokio::spawn).collect();
    let mut out = vec![];
    for h in hs {
        out.push(h.await.unwrap());
    }
    out
}

fn main() {
    leanpool_testkit::harness::main(leanpool_testkit::tests![
        sized_limits_follow_the_measured_worker,
        one_import_set_gets_the_sized_workers,
        configured_limits_are_reported_as_configured,
    ]);
}
