//! The machine-wide worker total several pools share (issue 25): a HARD
//! cap on Lean worker processes over every project of a daemon, leased
//! workers included.
//!
//! Each project has a pool of its own (its workers never serve another
//! project), sized by its own `max_workers`; with more projects than the
//! machine has room for, those shares add up to more than the machine. A
//! [`WorkerBudget`] given to each pool ([`crate::Pool::with_budget`]) is
//! what keeps the sum under the total: every worker process (a slot's, a
//! spare's, a leased one) holds one [`WorkerPermit`] from its start until
//! it is gone, and a pool starts a worker only with a permit in hand. When
//! the total is reached, a pool whose import set has waiting requests and
//! no worker (or a lease waiting for a fresh process) evicts the least
//! recently used idle worker of *any* pool sharing the budget (spares
//! first, then workers whose import set keeps its prewarm minimum, longest
//! idle first; never one whose import set has requests waiting); its
//! requests wait in their queue meanwhile (a full queue answers
//! `OVERLOADED`, as always). Nothing is preempted: a worker with requests
//! queued keeps serving them, so under load on every project a project
//! without a worker waits until another project's queue drains.

use leanpool_protocol::{WorkerLimit, WorkerTotal};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// The machine-wide worker total several pools draw from. Cheap to clone.
#[derive(Clone)]
pub struct WorkerBudget(Arc<Budget>);

struct Budget {
    total: WorkerLimit,
    /// Permits held: worker processes alive or starting, leased ones
    /// included.
    held: AtomicUsize,
    /// Of `held`, the ones leased out.
    leased: AtomicUsize,
    /// Idle workers stopped to make room for another pool or a lease.
    evictions: AtomicU64,
    /// The pools sharing the budget (woken when a permit comes back).
    pools: Mutex<Vec<Weak<dyn Member>>>,
    /// Wakes a lease waiting for a permit.
    released: Notify,
}

/// A pool sharing a budget, as the budget sees it (a pool's shared state
/// implements it): what to wake when a permit comes back, and which of its
/// workers may be stopped to make room.
pub(crate) trait Member: Send + Sync {
    /// Wakes the pool's supervisor: a permit came back.
    fn wake(&self);
    /// The pool's workers stopping now (their permits are on their way
    /// back), and its idle workers of import sets with nothing queued.
    fn evictable(&self) -> (usize, Vec<Idle<'_>>);
}

/// An idle worker of a [`Member`] that the budget may stop for room.
pub(crate) struct Idle<'a> {
    /// Not a spare.
    pub serving: bool,
    /// Serving, and its import set is at (or under) its prewarm minimum.
    pub at_min: bool,
    /// Idle since.
    pub since: Instant,
    /// Its slot's id (ties broken by it).
    pub id: u64,
    /// Stops it and counts the eviction in its pool's counters.
    pub stop: Box<dyn FnOnce() + 'a>,
}

/// One place in the total, held by one worker process (starting, serving,
/// spare or leased); given back when dropped, which wakes every pool of
/// the budget.
pub struct WorkerPermit {
    budget: Arc<Budget>,
    leased: bool,
}

impl std::fmt::Debug for WorkerPermit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerPermit")
            .field("leased", &self.leased)
            .finish()
    }
}

impl WorkerPermit {
    /// Counts this permit's process as leased out (`status`' `leased`).
    pub(crate) fn into_leased(mut self) -> WorkerPermit {
        if !self.leased {
            self.leased = true;
            self.budget.leased.fetch_add(1, Ordering::SeqCst);
        }
        self
    }

    /// Back to a pool's slot (a lease whose holder went away meanwhile).
    pub(crate) fn into_pooled(mut self) -> WorkerPermit {
        if self.leased {
            self.leased = false;
            self.budget.leased.fetch_sub(1, Ordering::SeqCst);
        }
        self
    }
}

impl Drop for WorkerPermit {
    fn drop(&mut self) {
        if self.leased {
            self.budget.leased.fetch_sub(1, Ordering::SeqCst);
        }
        self.budget.held.fetch_sub(1, Ordering::SeqCst);
        for pool in self.budget.live_pools() {
            pool.wake();
        }
        self.budget.released.notify_waiters();
    }
}

/// How often a lease waiting for a permit looks again whether its holder
/// is still there (and evicts again if nothing was freed).
const LEASE_RECHECK: Duration = Duration::from_millis(200);

impl WorkerBudget {
    /// A budget of `total.value` worker processes (at least 1); `total`'s
    /// source is what `status` reports as having bound it.
    pub fn new(total: WorkerLimit) -> WorkerBudget {
        WorkerBudget(Arc::new(Budget {
            total: WorkerLimit {
                value: total.value.max(1),
                ..total
            },
            held: AtomicUsize::new(0),
            leased: AtomicUsize::new(0),
            evictions: AtomicU64::new(0),
            pools: Mutex::new(Vec::new()),
            released: Notify::new(),
        }))
    }

    /// `status`' `workers`: the total, the processes counted now, the
    /// leased ones, the evictions made for room.
    pub fn status(&self) -> WorkerTotal {
        let b = &self.0;
        WorkerTotal {
            total: b.total,
            alive: b.held.load(Ordering::SeqCst),
            leased: b.leased.load(Ordering::SeqCst),
            evictions: b.evictions.load(Ordering::SeqCst),
        }
    }

    /// Places left under the total now.
    pub(crate) fn free(&self) -> usize {
        self.0
            .total
            .value
            .saturating_sub(self.0.held.load(Ordering::SeqCst))
    }

    pub(crate) fn register(&self, pool: Weak<dyn Member>) {
        let mut pools = self.0.pools.lock().unwrap();
        pools.retain(|p| p.strong_count() > 0);
        pools.push(pool);
    }

    /// A permit if the total is not reached.
    pub(crate) fn try_take(&self) -> Option<WorkerPermit> {
        let b = &self.0;
        b.held
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |h| {
                (h < b.total.value).then_some(h + 1)
            })
            .ok()
            .map(|_| WorkerPermit {
                budget: b.clone(),
                leased: false,
            })
    }

    /// A permit for a lease's fresh process: waits until one is free,
    /// evicting an idle worker of any pool to make room, or `None` once
    /// `gone()` (the leaser left, the pool is shutting down).
    pub(crate) async fn acquire(&self, gone: impl Fn() -> bool) -> Option<WorkerPermit> {
        loop {
            let released = self.0.released.notified();
            tokio::pin!(released);
            released.as_mut().enable();
            if let Some(p) = self.try_take() {
                return Some(p);
            }
            if gone() {
                return None;
            }
            self.evict_for(1);
            tokio::select! {
                _ = &mut released => {}
                _ = tokio::time::sleep(LEASE_RECHECK) => {}
            }
        }
    }

    /// Stops up to `needed` idle workers of the budget's pools, least
    /// recently used first, minus the room already on its way (slots
    /// told to stop, whose permits come back when their process is gone).
    /// Candidates: idle workers of import sets with nothing queued;
    /// spares first, then workers whose import set stays at its prewarm
    /// minimum, then any. Returns how many were stopped.
    pub(crate) fn evict_for(&self, needed: usize) -> usize {
        let pools = self.0.live_pools();
        let mut stopping = 0usize;
        let mut cand = Vec::new();
        for pool in &pools {
            let (n, idle) = pool.evictable();
            stopping += n;
            cand.extend(idle);
        }
        let needed = needed.saturating_sub(stopping);
        cand.sort_by_key(|c| (c.serving, c.at_min, c.since, c.id));
        let mut stopped = 0;
        for idle in cand.into_iter().take(needed) {
            self.0.evictions.fetch_add(1, Ordering::SeqCst);
            tracing::info!(
                slot = idle.id,
                idle_ms = Instant::now()
                    .saturating_duration_since(idle.since)
                    .as_millis() as u64,
                "evicting an idle worker: the machine-wide worker total is reached"
            );
            (idle.stop)();
            stopped += 1;
        }
        stopped
    }
}

impl Budget {
    fn live_pools(&self) -> Vec<Arc<dyn Member>> {
        self.pools
            .lock()
            .unwrap()
            .iter()
            .filter_map(Weak::upgrade)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use leanpool_protocol::LimitSource;

    fn budget(n: usize) -> WorkerBudget {
        WorkerBudget::new(WorkerLimit {
            value: n,
            source: LimitSource::Configured,
        })
    }

    #[test]
    fn permits_never_pass_the_total_and_come_back_when_dropped() {
        let b = budget(2);
        let one = b.try_take().expect("a first place");
        let two = b.try_take().expect("a second place");
        assert!(b.try_take().is_none(), "a third place out of two");
        assert_eq!((b.free(), b.status().alive), (0, 2));
        drop(one);
        assert_eq!(b.free(), 1);
        let three = b.try_take().expect("the freed place");
        drop((two, three));
        assert_eq!(b.status().alive, 0);
    }

    #[test]
    fn a_leased_permit_is_counted_as_leased_until_dropped_or_returned() {
        let b = budget(1);
        let p = b.try_take().unwrap().into_leased();
        assert_eq!((b.status().alive, b.status().leased), (1, 1));
        let p = p.into_pooled();
        assert_eq!(b.status().leased, 0);
        let p = p.into_leased();
        drop(p);
        assert_eq!((b.status().alive, b.status().leased), (0, 0));
    }

    #[test]
    fn a_total_of_zero_is_one() {
        let b = budget(0);
        assert_eq!(b.status().total.value, 1);
        assert!(b.try_take().is_some());
    }

    #[tokio::test]
    async fn acquire_waits_for_a_place_or_gives_up_when_gone() {
        let b = budget(1);
        let held = b.try_take().unwrap();
        assert!(b.acquire(|| true).await.is_none(), "gone: no place");
        let b2 = b.clone();
        let waiter = tokio::spawn(async move { b2.acquire(|| false).await.is_some() });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiter.is_finished(), "a place beyond the total");
        drop(held);
        assert!(waiter.await.unwrap(), "the freed place goes to the waiter");
    }
}
