//! Placement decisions: which headers get a new worker, which idle workers
//! retire. Pure functions over a snapshot, so the policy (LRU eviction,
//! per-key minimum and maximum, global maximum, idle timeout, hot spares)
//! is unit tested without processes; the supervisor task applies the plan.
//!
//! A slot is either *serving* or a *spare* (ready and unused, taking
//! requests only while its header has no serving worker up). Minimums,
//! `max_per_key` and the idle timeout count serving slots; spares come on
//! top, after every serving need, and go first when room is needed.

use crate::status::WorkerState;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SlotSnap {
    pub id: u64,
    pub state: WorkerState,
    /// Pool-clock milliseconds at which the slot last became idle.
    pub idle_since_ms: u64,
    pub spare: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct KeySnap {
    pub slots: Vec<SlotSnap>,
    /// Requests waiting in the key's queue.
    pub queued: usize,
    /// Prewarm minimum.
    pub min: usize,
    /// Spares the supervisor allows this key now (0 when memory is short
    /// or no worker of the key has been measured yet).
    pub spares: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Limits {
    pub max_workers: usize,
    pub max_per_key: usize,
    /// 0 = no idle timeout.
    pub idle_timeout_ms: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Retire {
    /// Idle for longer than the idle timeout.
    IdleTimeout,
    /// Least recently used idle worker, retired so that a header with
    /// waiting requests and no worker can get one.
    Evicted,
    /// A spare whose header has no serving worker left (retired or evicted)
    /// and nothing queued, or more spares than allowed now.
    SpareUnneeded,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Key indices to start one new serving worker for (a key may appear
    /// twice).
    pub spawn: Vec<usize>,
    /// Key indices to start one new spare for.
    pub spawn_spare: Vec<usize>,
    /// Keys that wanted a spare but found no room under `max_workers`.
    pub spare_no_room: Vec<usize>,
    pub retire: Vec<(u64, Retire)>,
}

impl KeySnap {
    /// Live slots (not stopping), spares included.
    fn live(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| s.state != WorkerState::Stopping)
            .count()
    }
    /// Live serving slots.
    fn serving(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| s.state != WorkerState::Stopping && !s.spare)
            .count()
    }
    fn live_spares(&self) -> usize {
        self.live() - self.serving()
    }
    fn count(&self, st: WorkerState) -> usize {
        self.slots
            .iter()
            .filter(|s| s.state == st && !s.spare)
            .count()
    }
    /// New serving workers this key wants: up to its minimum, plus one per
    /// queued request that no idle or starting worker will pick up (an
    /// idle spare takes one only when no serving worker is up, and is then
    /// counted); within the per-key maximum.
    fn wants(&self, max_per_key: usize) -> usize {
        let serving = self.serving();
        let up = self.count(WorkerState::Idle) + self.count(WorkerState::Busy);
        let idle_spares = self
            .slots
            .iter()
            .filter(|s| s.spare && s.state == WorkerState::Idle)
            .count();
        let takers = self.count(WorkerState::Idle)
            + self.count(WorkerState::Starting)
            + if up == 0 { idle_spares } else { 0 };
        let for_min = self.min.saturating_sub(serving);
        let for_queue = self.queued.saturating_sub(takers);
        for_min
            .max(for_queue)
            .min(max_per_key.saturating_sub(serving))
    }
    /// Spares this key wants started: only while it has a serving worker.
    fn spares_wanted(&self) -> usize {
        if self.serving() == 0 {
            return 0;
        }
        self.spares.saturating_sub(self.live_spares())
    }
    /// Waiting requests and no live worker at all: it needs room even at
    /// the cost of another key's idle worker.
    fn starving(&self) -> bool {
        self.queued > 0 && self.live() == 0
    }
}

/// Decides spawns and retirements. `total` counts every slot that holds or
/// may hold a process, including stopping ones (their memory is not free
/// yet); `spawning` is false during shutdown.
pub(crate) fn plan(
    keys: &[KeySnap],
    total: usize,
    limits: Limits,
    now_ms: u64,
    spawning: bool,
) -> Plan {
    let mut out = Plan::default();
    let mut free = limits.max_workers.saturating_sub(total);
    let mut retiring: Vec<u64> = Vec::new();

    // Idle timeout first: it frees room the spawns below may use next round.
    if limits.idle_timeout_ms > 0 {
        for k in keys {
            let mut idle: Vec<&SlotSnap> = k
                .slots
                .iter()
                .filter(|s| {
                    !s.spare
                        && s.state == WorkerState::Idle
                        && now_ms.saturating_sub(s.idle_since_ms) >= limits.idle_timeout_ms
                })
                .collect();
            idle.sort_by_key(|s| (s.idle_since_ms, s.id));
            let mut live = k.serving();
            for s in idle {
                if live <= k.min || k.queued > 0 {
                    break;
                }
                out.retire.push((s.id, Retire::IdleTimeout));
                retiring.push(s.id);
                live -= 1;
            }
        }
    }
    // Spares beyond what the key may keep now (no serving worker left,
    // nothing queued and no minimum, or fewer allowed), idle ones only.
    for k in keys {
        let serving_left = k
            .slots
            .iter()
            .filter(|s| s.state != WorkerState::Stopping && !s.spare && !retiring.contains(&s.id))
            .count();
        // A prewarmed key keeps its spare: its minimum brings a serving
        // worker back (e.g. after a lease took the serving one away).
        let keep = if serving_left == 0 && k.queued == 0 && k.min == 0 {
            0
        } else {
            k.spares
        };
        let mut spares: Vec<&SlotSnap> = k
            .slots
            .iter()
            .filter(|s| s.spare && s.state != WorkerState::Stopping)
            .collect();
        spares.sort_by_key(|s| {
            (
                s.state != WorkerState::Idle,
                std::cmp::Reverse(s.idle_since_ms),
                s.id,
            )
        });
        let mut extra = spares.len().saturating_sub(keep);
        for s in spares {
            if extra == 0 {
                break;
            }
            if s.state == WorkerState::Idle {
                out.retire.push((s.id, Retire::SpareUnneeded));
                retiring.push(s.id);
                extra -= 1;
            }
        }
    }
    if !spawning {
        return out;
    }

    // Spawns, most urgent first: starving keys, then keys with a backlog,
    // then prewarm minimums. Ties by key index, so the plan is deterministic.
    let mut order: Vec<usize> = (0..keys.len())
        .filter(|&i| keys[i].wants(limits.max_per_key) > 0)
        .collect();
    order.sort_by_key(|&i| (!keys[i].starving(), keys[i].queued == 0, i));
    let mut unserved_starving = 0usize;
    for &i in &order {
        let want = keys[i].wants(limits.max_per_key);
        let grant = want.min(free);
        out.spawn.extend(std::iter::repeat_n(i, grant));
        free -= grant;
        if grant == 0 && keys[i].starving() {
            unserved_starving += 1;
        }
    }
    // Spares last: only from room no serving need took.
    for (i, k) in keys.iter().enumerate() {
        let want = k.spares_wanted();
        let grant = want.min(free);
        out.spawn_spare.extend(std::iter::repeat_n(i, grant));
        free -= grant;
        if grant < want {
            out.spare_no_room.push(i);
        }
    }

    // LRU eviction: one idle worker per starving key that got no room,
    // minus the room already on its way (stopping slots).
    let stopping = keys
        .iter()
        .map(|k| k.count(WorkerState::Stopping))
        .sum::<usize>()
        + retiring.len();
    let needed = unserved_starving.saturating_sub(stopping);
    if needed > 0 {
        // Candidates: idle workers of keys with nothing queued, spares
        // first, then longest idle first. A first pass takes only spares
        // and serving workers whose key stays at or above its minimum; a
        // second pass any (a waiting request beats a warm worker).
        let mut cand: Vec<(bool, u64, u64, usize)> = Vec::new();
        for (ki, k) in keys.iter().enumerate() {
            if k.queued > 0 {
                continue;
            }
            for s in &k.slots {
                if s.state == WorkerState::Idle && !retiring.contains(&s.id) {
                    cand.push((!s.spare, s.idle_since_ms, s.id, ki));
                }
            }
        }
        cand.sort();
        let mut live: Vec<usize> = keys.iter().map(KeySnap::serving).collect();
        let mut chosen: Vec<u64> = Vec::new();
        for allow_below_min in [false, true] {
            for &(serving, _, id, ki) in &cand {
                if chosen.len() == needed {
                    break;
                }
                if chosen.contains(&id) || (serving && !allow_below_min && live[ki] <= keys[ki].min)
                {
                    continue;
                }
                if serving {
                    live[ki] -= 1;
                }
                chosen.push(id);
            }
        }
        out.retire
            .extend(chosen.into_iter().map(|id| (id, Retire::Evicted)));
    }
    out
}

#[cfg(test)]
mod tests {
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
        assert_eq!(plan(&keys, 2, L, 1000, true), Plan::default());
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
}
