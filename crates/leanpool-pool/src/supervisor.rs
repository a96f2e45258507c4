//! The supervisor task: the only place that starts or retires slots.
//!
//! It wakes when a request found no idle worker, when a slot exits, and on
//! a periodic tick (idle timeouts, forgetting unused headers), takes a
//! snapshot, asks [`crate::plan`] what to do and does it. Being a single
//! task, it never races itself, so the global maximum holds without a
//! lock; requests never wait for it except to get a first worker.

use crate::plan::{plan, KeySnap, Limits, Retire};
use crate::shared::{Inner, KeyState};
use crate::sizing::memory_available;
use crate::slot::start_slot;
use crate::status::bump;
use crate::status::WorkerState;
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
    let mut snaps: Vec<KeySnap> = keys
        .iter()
        .map(|k| {
            let backoff = k.spawn_backoff_until_ms.load(Ordering::Relaxed) > now;
            KeySnap {
                slots: k.slot_snaps(),
                queued: k.queue.depth(),
                // A header whose worker failed to start lately is not
                // prewarmed again until the back-off has passed (requests
                // still get their attempt).
                min: if backoff { 0 } else { k.min },
                spares: 0,
            }
        })
        .collect();
    allow_spares(inner, &keys, &mut snaps, memory_available(), now);
    let sized = inner.limits();
    let own = inner.total.load(Ordering::SeqCst);
    // With a shared budget, this pool may grow only by what the
    // machine-wide total has left.
    let budget_free = inner.budget.as_ref().map(|b| b.free());
    let limits = Limits {
        max_workers: match budget_free {
            Some(free) => sized.max_workers.value.min(own + free),
            None => sized.max_workers.value,
        },
        max_per_key: sized.max_workers_per_key.value,
        idle_timeout_ms: inner.cfg.idle_timeout_ms,
    };
    let spawning = !inner.shutting_down.load(Ordering::SeqCst);
    let p = plan(&snaps, own, limits, now, spawning);
    if let (Some(b), true) = (&inner.budget, p.starving_unplaced > 0) {
        // The total, not this pool's own limit, is what keeps a starving
        // header without a worker: make room in another pool.
        if own < sized.max_workers.value {
            b.evict_for(p.starving_unplaced);
        }
    }
    for (id, why) in p.retire {
        let slot = keys
            .iter()
            .find_map(|k| k.slots.lock().unwrap().get(&id).cloned());
        if let Some(s) = slot {
            bump(match why {
                Retire::IdleTimeout | Retire::SpareUnneeded => &inner.counters.idle_retirements,
                Retire::Evicted => &inner.counters.evictions,
            });
            tracing::info!(slot = id, reason = ?why, "retiring idle worker");
            s.request_stop();
        }
    }
    for ki in p.spare_no_room {
        *keys[ki].spare_note.lock().unwrap() =
            Some(format!("max_workers ({}) reached", limits.max_workers));
    }
    // Each start takes its place in the shared budget first: another pool
    // may have taken the room seen above meanwhile; then plan again at
    // once (with the total reached, that round evicts for a starving key).
    for ki in p.spawn {
        let Some(permit) = inner.place() else {
            inner.wake.notify_one();
            break;
        };
        inner.total.fetch_add(1, Ordering::SeqCst);
        start_slot(inner, &keys[ki], false, permit);
    }
    for ki in p.spawn_spare {
        let Some(permit) = inner.place() else { break };
        inner.total.fetch_add(1, Ordering::SeqCst);
        tracing::info!(header = %keys[ki].header.trim_end(), "starting a spare");
        start_slot(inner, &keys[ki], true, permit);
    }
}

/// Sets how many spares each key may have now (`KeySnap::spares`) and
/// records why one is missing. Spares alive stay allowed (their memory is
/// already taken, so it is not counted again); a new one needs a worker of
/// its header measured at ready and `avail` covering that RSS for it and
/// for every worker still starting (not resident yet), plus the margin.
fn allow_spares(
    inner: &Inner,
    keys: &[Arc<KeyState>],
    snaps: &mut [KeySnap],
    avail: Option<u64>,
    now: u64,
) {
    let want = inner.cfg.spares_per_key;
    let margin = inner.cfg.spare_memory_margin_bytes;
    let mut starting: u64 = 0;
    for sn in snaps.iter() {
        starting += sn
            .slots
            .iter()
            .filter(|s| s.state == WorkerState::Starting)
            .count() as u64;
    }
    // What earlier keys of this round were granted is spoken for.
    let mut promised: u64 = 0;
    for (k, sn) in keys.iter().zip(snaps.iter_mut()) {
        let alive = sn
            .slots
            .iter()
            .filter(|s| s.spare && s.state != WorkerState::Stopping)
            .count();
        // A caller's own workers (`isolate_by`) get no spares.
        let want = if k.caller.is_some() { 0 } else { want };
        sn.spares = alive.min(want);
        if alive >= want {
            *k.spare_note.lock().unwrap() = None;
            continue;
        }
        let rss = k.measured_rss.load(Ordering::Relaxed);
        let note = if k.spawn_backoff_until_ms.load(Ordering::Relaxed) > now {
            Some("a worker of this header failed to start lately".to_string())
        } else if rss == 0 {
            Some(
                "no worker of this header has become ready yet (its RSS sizes a spare)".to_string(),
            )
        } else {
            let need = rss
                .saturating_mul(starting + 1)
                .saturating_add(margin)
                .saturating_add(promised);
            match avail {
                None => Some("available memory not readable (/proc/meminfo, cgroup)".to_string()),
                Some(a) if a < need => Some(format!(
                    "memory short: {} MB available, a spare needs {} MB ({} MB worker RSS{} + {} MB spare_memory_margin_bytes)",
                    a >> 20,
                    need >> 20,
                    rss >> 20,
                    if starting + promised > 0 { ", more for workers still starting" } else { "" },
                    margin >> 20
                )),
                Some(_) => {
                    let extra = want - alive;
                    promised = promised.saturating_add(rss.saturating_mul(extra as u64));
                    sn.spares = want;
                    None
                }
            }
        };
        *k.spare_note.lock().unwrap() = note;
    }
}

/// Drops headers nobody uses (no slot, nothing queued, not prewarmed), so
/// a stream of distinct headers does not grow the map forever. Runs under
/// each shard's write lock, which the request path also holds while
/// queueing, so a request cannot slip into a queue being forgotten.
fn forget_unused_keys(inner: &Inner) {
    inner
        .keys
        .retain(|_, k| k.min > 0 || k.queue.depth() > 0 || !k.slots.lock().unwrap().is_empty());
}
