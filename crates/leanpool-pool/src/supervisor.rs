//! The supervisor task: the only place that starts or retires slots.
//!
//! It wakes when a request found no idle worker, when a slot exits, and on
//! a periodic tick (idle timeouts, forgetting unused headers), takes a
//! snapshot, asks [`crate::plan`] what to do and does it. Being a single
//! task, it never races itself, so the global maximum holds without a
//! lock; requests never wait for it except to get a first worker.

use crate::plan::{plan, KeySnap, Limits, Retire};
use crate::shared::{Inner, KeyState};
use crate::slot::start_slot;
use crate::status::bump;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

pub(crate) async fn supervise(inner: Arc<Inner>) {
    let mut hard = inner.hard_stop.subscribe();
    // The tick runs whether or not wake-ups keep coming.
    let mut tick = tokio::time::interval(Duration::from_millis(inner.cfg.health_interval_ms));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        if *hard.borrow() {
            return;
        }
        rebalance(&inner);
        tokio::select! {
            biased;
            _ = hard.changed() => return,
            _ = inner.wake.notified() => {}
            _ = tick.tick() => forget_unused_keys(&inner),
        }
    }
}

pub(crate) fn rebalance(inner: &Arc<Inner>) {
    let mut keys: Vec<Arc<KeyState>> = inner.keys.iter().map(|e| e.value().clone()).collect();
    // Deterministic tie-breaking in the plan.
    keys.sort_by(|a, b| a.header.cmp(&b.header));
    let now = inner.now_ms();
    let snaps: Vec<KeySnap> = keys
        .iter()
        .map(|k| KeySnap {
            slots: k.slot_snaps(),
            queued: k.queue.depth(),
            // A header whose worker failed to start lately is not
            // prewarmed again until the back-off has passed (requests
            // still get their attempt).
            min: if k.spawn_backoff_until_ms.load(Ordering::Relaxed) > now { 0 } else { k.min },
        })
        .collect();
    let limits = Limits {
        max_workers: inner.cfg.max_workers,
        max_per_key: inner.cfg.max_workers_per_key,
        idle_timeout_ms: inner.cfg.idle_timeout_ms,
    };
    let spawning = !inner.shutting_down.load(Ordering::SeqCst);
    let p = plan(&snaps, inner.total.load(Ordering::SeqCst), limits, now, spawning);
    for (id, why) in p.retire {
        let slot = keys.iter().find_map(|k| k.slots.lock().unwrap().get(&id).cloned());
        if let Some(s) = slot {
            bump(match why {
                Retire::IdleTimeout => &inner.counters.idle_retirements,
                Retire::Evicted => &inner.counters.evictions,
            });
            tracing::info!(slot = id, reason = ?why, "retiring idle worker");
            s.request_stop();
        }
    }
    for ki in p.spawn {
        inner.total.fetch_add(1, Ordering::SeqCst);
        start_slot(inner, &keys[ki]);
    }
}

/// Drops headers nobody uses (no slot, nothing queued, not prewarmed), so
/// a stream of distinct headers does not grow the map forever. Runs under
/// each shard's write lock, which the request path also holds while
/// queueing, so a request cannot slip into a queue being forgotten.
fn forget_unused_keys(inner: &Inner) {
    inner.keys.retain(|_, k| k.min > 0 || k.queue.depth() > 0 || !k.slots.lock().unwrap().is_empty());
}
