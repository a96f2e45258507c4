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
    /// Starving keys that got no room and no idle worker of this pool to
    /// evict for it (room on its way counted): with a shared budget, the
    /// supervisor looks for one in the other pools.
    pub starving_unplaced: usize,
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
/// yet); `spawning` is false during shutdown. Four phases, in this order:
/// idle timeouts, unneeded spares, spawns (serving needs, then spares),
/// LRU eviction for starving keys that got no room.
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
        retire_idle(
            keys,
            limits.idle_timeout_ms,
            now_ms,
            &mut out,
            &mut retiring,
        );
    }
    retire_extra_spares(keys, &mut out, &mut retiring);
    if !spawning {
        return out;
    }
    let unserved_starving = spawns(keys, limits.max_per_key, &mut free, &mut out);
    // LRU eviction: one idle worker per starving key that got no room,
    // minus the room already on its way (stopping slots).
    let stopping = keys
        .iter()
        .map(|k| k.count(WorkerState::Stopping))
        .sum::<usize>()
        + retiring.len();
    let needed = unserved_starving.saturating_sub(stopping);
    if needed > 0 {
        let evicted = evictions(keys, needed, &retiring);
        out.starving_unplaced = needed - evicted.len();
        out.retire
            .extend(evicted.into_iter().map(|id| (id, Retire::Evicted)));
    }
    out
}

/// Serving workers idle for `idle_timeout_ms`, longest idle first, while
/// their key stays at its minimum and has nothing queued.
fn retire_idle(
    keys: &[KeySnap],
    idle_timeout_ms: u64,
    now_ms: u64,
    out: &mut Plan,
    retiring: &mut Vec<u64>,
) {
    for k in keys {
        let mut idle: Vec<&SlotSnap> = k
            .slots
            .iter()
            .filter(|s| {
                !s.spare
                    && s.state == WorkerState::Idle
                    && now_ms.saturating_sub(s.idle_since_ms) >= idle_timeout_ms
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

/// Spares beyond what the key may keep now (no serving worker left,
/// nothing queued and no minimum, or fewer allowed), idle ones only.
fn retire_extra_spares(keys: &[KeySnap], out: &mut Plan, retiring: &mut Vec<u64>) {
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
}

/// Spawns within `free`, most urgent first: starving keys, then keys with
/// a backlog, then prewarm minimums (ties by key index, so the plan is
/// deterministic); spares last, only from room no serving need took.
/// Returns how many starving keys got no room.
fn spawns(keys: &[KeySnap], max_per_key: usize, free: &mut usize, out: &mut Plan) -> usize {
    let mut order: Vec<usize> = (0..keys.len())
        .filter(|&i| keys[i].wants(max_per_key) > 0)
        .collect();
    order.sort_by_key(|&i| (!keys[i].starving(), keys[i].queued == 0, i));
    let mut unserved_starving = 0usize;
    for &i in &order {
        let want = keys[i].wants(max_per_key);
        let grant = want.min(*free);
        out.spawn.extend(std::iter::repeat_n(i, grant));
        *free -= grant;
        if grant == 0 && keys[i].starving() {
            unserved_starving += 1;
        }
    }
    for (i, k) in keys.iter().enumerate() {
        let want = k.spares_wanted();
        let grant = want.min(*free);
        out.spawn_spare.extend(std::iter::repeat_n(i, grant));
        *free -= grant;
        if grant < want {
            out.spare_no_room.push(i);
        }
    }
    unserved_starving
}

/// `needed` idle workers to evict, of keys with nothing queued, spares
/// first, then longest idle first. A first pass takes only spares and
/// serving workers whose key stays at or above its minimum; a second pass
/// any (a waiting request beats a warm worker).
fn evictions(keys: &[KeySnap], needed: usize, retiring: &[u64]) -> Vec<u64> {
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
            if chosen.contains(&id) || (serving && !allow_below_min && live[ki] <= keys[ki].min) {
                continue;
            }
            if serving {
                live[ki] -= 1;
            }
            chosen.push(id);
        }
    }
    chosen
}

#[cfg(test)]
mod tests;
