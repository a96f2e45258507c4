//! Unit tests of `plan` (moved out of `plan.rs`).

use super::*;
use WorkerState::*;

fn slot(id: u64, state: WorkerState, idle_since_ms: u64) -> SlotSnap {
    SlotSnap {
        id,
        state,
        idle_since_ms,
        spare: false,
    }
}
fn spare(id: u64, state: WorkerState, idle_since_ms: u64) -> SlotSnap {
    SlotSnap {
        id,
        state,
        idle_since_ms,
        spare: true,
    }
}
fn key(slots: Vec<SlotSnap>, queued: usize, min: usize) -> KeySnap {
    KeySnap {
        slots,
        queued,
        min,
        spares: 0,
    }
}
fn keysp(slots: Vec<SlotSnap>, queued: usize, min: usize, spares: usize) -> KeySnap {
    KeySnap {
        slots,
        queued,
        min,
        spares,
    }
}
const L: Limits = Limits {
    max_workers: 2,
    max_per_key: 1,
    idle_timeout_ms: 0,
};

#[test]
fn prewarm_fills_minimums_within_global_max() {
    let keys = [key(vec![], 0, 1), key(vec![], 0, 1), key(vec![], 0, 1)];
    assert_eq!(plan(&keys, 0, L, 0, true).spawn, vec![0, 1]);
    assert!(plan(&keys, 0, L, 0, false).spawn.is_empty());
}

#[test]
fn queued_request_spawns_only_if_nothing_will_take_it() {
    let l = Limits {
        max_workers: 4,
        max_per_key: 2,
        ..L
    };
    // Busy worker + 1 queued: a second worker.
    assert_eq!(
        plan(&[key(vec![slot(1, Busy, 0)], 1, 0)], 1, l, 0, true).spawn,
        vec![0]
    );
    // A worker already starting will take it.
    assert!(plan(
        &[key(vec![slot(1, Busy, 0), slot(2, Starting, 0)], 1, 0)],
        2,
        l,
        0,
        true
    )
    .spawn
    .is_empty());
    // Per-key maximum reached.
    assert!(plan(
        &[key(vec![slot(1, Busy, 0), slot(2, Busy, 0)], 3, 0)],
        2,
        l,
        0,
        true
    )
    .spawn
    .is_empty());
}

#[test]
fn lru_idle_worker_evicted_for_starving_key() {
    // Global max reached by two idle workers of other keys; the one idle
    // longest (smaller idle_since) goes.
    let keys = [
        key(vec![slot(1, Idle, 500)], 0, 0),
        key(vec![slot(2, Idle, 100)], 0, 0),
        key(vec![], 1, 0),
    ];
    let p = plan(&keys, 2, L, 1000, true);
    assert!(p.spawn.is_empty());
    assert_eq!(p.retire, vec![(2, Retire::Evicted)]);
}

#[test]
fn eviction_prefers_keys_above_their_minimum() {
    let keys = [
        key(vec![slot(1, Idle, 100)], 0, 1),
        key(vec![slot(2, Idle, 900)], 0, 0),
        key(vec![], 1, 0),
    ];
    assert_eq!(
        plan(&keys, 2, L, 1000, true).retire,
        vec![(2, Retire::Evicted)]
    );
    // Only below-minimum candidates left: evicted anyway (a waiting
    // request beats a warm spare).
    let keys = [
        key(vec![slot(1, Idle, 100)], 0, 1),
        key(vec![slot(2, Busy, 0)], 0, 0),
        key(vec![], 1, 0),
    ];
    assert_eq!(
        plan(&keys, 2, L, 1000, true).retire,
        vec![(1, Retire::Evicted)]
    );
}

#[test]
fn no_eviction_when_room_is_already_coming_or_nothing_idle() {
    let keys = [
        key(vec![slot(1, Stopping, 0)], 0, 0),
        key(vec![slot(2, Idle, 0)], 0, 0),
        key(vec![], 1, 0),
    ];
    assert!(plan(&keys, 2, L, 1000, true).retire.is_empty());
    let keys = [
        key(vec![slot(1, Busy, 0)], 0, 0),
        key(vec![slot(2, Busy, 0)], 0, 0),
        key(vec![], 1, 0),
    ];
    // Nothing idle to evict here: the starving key is reported unplaced
    // (with a shared budget the supervisor looks in the other pools).
    assert_eq!(
        plan(&keys, 2, L, 1000, true),
        Plan {
            starving_unplaced: 1,
            ..Plan::default()
        }
    );
    // A key with queued work of its own keeps its idle worker.
    let keys = [key(vec![slot(1, Idle, 0)], 2, 0), key(vec![], 1, 0)];
    assert!(plan(&keys, 2, L, 1000, true).retire.is_empty());
}

#[test]
fn idle_timeout_respects_minimum_and_backlog() {
    let l = Limits {
        max_workers: 4,
        max_per_key: 3,
        idle_timeout_ms: 100,
    };
    let keys = [key(
        vec![slot(1, Idle, 0), slot(2, Idle, 50), slot(3, Idle, 950)],
        0,
        1,
    )];
    // Slots 1 and 2 idle >= 100 ms; both may go since slot 3 stays (min 1).
    assert_eq!(
        plan(&keys, 3, l, 1000, true).retire,
        vec![(1, Retire::IdleTimeout), (2, Retire::IdleTimeout)]
    );
    let keys = [key(vec![slot(1, Idle, 0)], 0, 1)];
    assert!(plan(&keys, 1, l, 1000, true).retire.is_empty());
    // Idle timeout also applies during shutdown (no spawns then).
    let keys = [key(vec![slot(1, Idle, 0)], 0, 0), key(vec![], 0, 1)];
    let p = plan(&keys, 1, l, 1000, false);
    assert_eq!(
        (p.retire, p.spawn),
        (vec![(1, Retire::IdleTimeout)], vec![])
    );
}

#[test]
fn starving_keys_served_before_prewarm() {
    let keys = [key(vec![], 0, 1), key(vec![], 3, 0)];
    assert_eq!(plan(&keys, 1, L, 0, true).spawn, vec![1]);
}

#[test]
fn spare_started_after_serving_needs_and_only_for_a_key_in_use() {
    let l = Limits {
        max_workers: 3,
        max_per_key: 1,
        idle_timeout_ms: 0,
    };
    // A key with a serving worker gets its spare.
    let p = plan(&[keysp(vec![slot(1, Idle, 0)], 0, 0, 1)], 1, l, 0, true);
    assert_eq!((p.spawn, p.spawn_spare), (vec![], vec![0]));
    // No serving worker (nothing in use): no spare.
    assert_eq!(
        plan(&[keysp(vec![], 0, 0, 1)], 0, l, 0, true),
        Plan::default()
    );
    // Already has its spare (starting counts).
    assert_eq!(
        plan(
            &[keysp(
                vec![slot(1, Busy, 0), spare(2, Starting, 0)],
                0,
                0,
                1
            )],
            2,
            l,
            0,
            true
        ),
        Plan::default()
    );
    // Not allowed now (memory short): none started, none retired.
    assert_eq!(
        plan(&[keysp(vec![slot(1, Idle, 0)], 0, 0, 0)], 1, l, 0, true),
        Plan::default()
    );
    // No spares during shutdown.
    assert!(
        plan(&[keysp(vec![slot(1, Idle, 0)], 0, 0, 1)], 1, l, 0, false)
            .spawn_spare
            .is_empty()
    );
}

#[test]
fn serving_needs_beat_spares_for_room() {
    // Room for one more: the starving key gets it, the spare reports
    // no room.
    let l = Limits {
        max_workers: 2,
        max_per_key: 1,
        idle_timeout_ms: 0,
    };
    let keys = [keysp(vec![slot(1, Busy, 0)], 0, 0, 1), key(vec![], 1, 0)];
    let p = plan(&keys, 1, l, 0, true);
    assert_eq!(
        (p.spawn, p.spawn_spare, p.spare_no_room),
        (vec![1], vec![], vec![0])
    );
}

#[test]
fn spare_evicted_before_any_serving_worker() {
    // Key 0's spare has been idle for less time than key 1's serving
    // worker, yet goes first.
    let l = Limits {
        max_workers: 3,
        max_per_key: 1,
        idle_timeout_ms: 0,
    };
    let keys = [
        keysp(vec![slot(1, Busy, 0), spare(2, Idle, 900)], 0, 0, 1),
        key(vec![slot(3, Idle, 100)], 0, 0),
        key(vec![], 1, 0),
    ];
    let p = plan(&keys, 3, l, 1000, true);
    assert_eq!(p.retire, vec![(2, Retire::Evicted)]);
    // A spare does not hold a key's minimum: taken in the first pass
    // even when its key is at its minimum.
    let keys = [
        keysp(vec![slot(1, Idle, 0), spare(2, Idle, 0)], 0, 1, 1),
        key(vec![], 1, 0),
    ];
    assert_eq!(
        plan(
            &keys,
            2,
            Limits {
                max_workers: 2,
                ..l
            },
            1000,
            true
        )
        .retire,
        vec![(2, Retire::Evicted)]
    );
}

#[test]
fn spare_of_a_key_without_serving_worker_retires() {
    let l = Limits {
        max_workers: 3,
        max_per_key: 1,
        idle_timeout_ms: 100,
    };
    // The serving worker times out idle; its spare goes with it (same
    // plan), not the other way round.
    let keys = [keysp(vec![slot(1, Idle, 0), spare(2, Idle, 950)], 0, 0, 1)];
    let p = plan(&keys, 2, l, 1000, true);
    assert_eq!(
        p.retire,
        vec![(1, Retire::IdleTimeout), (2, Retire::SpareUnneeded)]
    );
    assert!(p.spawn_spare.is_empty());
    // An idle spare is never retired by the idle timeout itself.
    let keys = [keysp(vec![slot(1, Busy, 0), spare(2, Idle, 0)], 0, 0, 1)];
    assert_eq!(plan(&keys, 2, l, 1000, true), Plan::default());
    // A spare whose serving worker is gone but with a request queued
    // stays (it takes the request).
    let keys = [keysp(vec![spare(2, Idle, 0)], 1, 0, 1)];
    assert!(plan(&keys, 1, l, 1000, true).retire.is_empty());
    // A prewarmed key keeps its spare; its minimum starts a serving
    // worker.
    let keys = [keysp(vec![spare(2, Idle, 0)], 0, 1, 1)];
    let p = plan(&keys, 1, l, 1000, true);
    assert_eq!((p.retire, p.spawn), (vec![], vec![0]));
}

#[test]
fn queued_request_counts_an_idle_spare_only_when_no_serving_worker_is_up() {
    let l = Limits {
        max_workers: 4,
        max_per_key: 2,
        idle_timeout_ms: 0,
    };
    // Serving worker busy, spare idle, one queued: the spare will not
    // take it (it stays spare), so a second serving worker starts.
    let keys = [keysp(vec![slot(1, Busy, 0), spare(2, Idle, 0)], 1, 0, 1)];
    assert_eq!(plan(&keys, 2, l, 0, true).spawn, vec![0]);
    // Serving worker restarting: the idle spare takes the request.
    let keys = [keysp(
        vec![slot(1, Starting, 0), spare(2, Idle, 0)],
        1,
        0,
        1,
    )];
    assert!(plan(&keys, 2, l, 0, true).spawn.is_empty());
}
