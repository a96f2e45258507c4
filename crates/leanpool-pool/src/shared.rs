//! State shared by callers, worker slots and the supervisor. Everything on
//! the request path is a `DashMap` shard lookup, an atomic or a per-header
//! queue: no lock spans the pool.

use crate::config::PoolConfig;
use crate::job::Job;
use crate::latency::LatencyWindow;
use crate::plan::SlotSnap;
use crate::queue::KeyQueue;
use crate::sizing::{self, LimitSources, Machine};
use crate::status::{AtomicCounters, WorkerState};
use dashmap::DashMap;
use leanpool_lean::WorkerConfig;
use leanpool_protocol::WorkerLimits;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{watch, Notify};

pub(crate) struct Inner {
    pub cfg: PoolConfig,
    /// `[guard]` and `[verdict]` for this pool's workers
    /// (`Policies::method_policy`; screened with `Policy::screening`): what every request is screened and judged under,
    /// passed whole to each method (`PoolMethod::run`), so a method that
    /// screens again (`equiv`) uses the same guard policy.
    pub policy: leanpool_methods::Policy,
    pub worker_cfg: WorkerConfig,
    /// Canonical header -> its queue and slots.
    pub keys: DashMap<String, Arc<KeyState>>,
    /// Slots alive (any state). Only the supervisor increments it (on
    /// spawn), so the global maximum holds without a lock.
    pub total: AtomicUsize,
    pub next_slot: AtomicU64,
    /// Wakes the supervisor: a request found no idle worker, a slot
    /// retired, a spawn failed.
    pub wake: Notify,
    /// Wakes `shutdown` when a slot has exited.
    pub slot_exited: Notify,
    pub shutting_down: AtomicBool,
    /// `true` = stop now: abandon work, kill workers.
    pub hard_stop: watch::Sender<bool>,
    pub counters: AtomicCounters,
    /// Per method name: requests, end-to-end latency and time on a worker.
    pub methods: DashMap<&'static str, Arc<MethodStats>>,
    /// The machine as probed when the pool started (worker limits sized
    /// to it: `crate::sizing`).
    pub machine: Machine,
    /// Where the configured worker limits came from (`status`; given to
    /// [`crate::Pool::new`] beside the config).
    pub sources: LimitSources,
    /// The largest RSS at ready of any worker so far (0 = none measured).
    pub worker_rss: AtomicU64,
    /// The machine-wide total this pool shares with others (a daemon's
    /// projects): every worker process holds one of its permits.
    pub budget: Option<crate::budget::WorkerBudget>,
    clock: Instant,
}

impl Inner {
    pub(crate) fn new(
        cfg: PoolConfig,
        worker_cfg: WorkerConfig,
        policy: leanpool_methods::Policy,
        machine: Machine,
        sources: LimitSources,
        budget: Option<crate::budget::WorkerBudget>,
    ) -> Inner {
        Inner {
            policy,
            worker_cfg,
            keys: DashMap::new(),
            total: AtomicUsize::new(0),
            next_slot: AtomicU64::new(1),
            wake: Notify::new(),
            slot_exited: Notify::new(),
            shutting_down: AtomicBool::new(false),
            hard_stop: watch::channel(false).0,
            counters: AtomicCounters::default(),
            methods: DashMap::new(),
            machine,
            sources,
            worker_rss: AtomicU64::new(0),
            budget,
            clock: Instant::now(),
            cfg,
        }
    }

    /// `max_workers` and `max_workers_per_key` in force now: the
    /// configured ones, or sized to the machine with the worker RSS
    /// measured so far.
    pub(crate) fn limits(&self) -> WorkerLimits {
        let rss = self.worker_rss.load(Ordering::Relaxed);
        sizing::size(
            &self.cfg,
            self.sources,
            self.machine,
            (rss > 0).then_some(rss),
        )
    }

    /// Milliseconds since the pool started (the clock of idle times).
    pub(crate) fn now_ms(&self) -> u64 {
        self.clock.elapsed().as_millis() as u64
    }

    /// The instant `ms` of this pool's clock stands for (to compare idle
    /// times between pools).
    pub(crate) fn instant_at(&self, ms: u64) -> Instant {
        self.clock + Duration::from_millis(ms)
    }

    /// A place for one more worker process: `Some(None)` without a shared
    /// budget (the pool's own `max_workers` is the only bound), `None`
    /// when the shared total is reached.
    pub(crate) fn place(&self) -> Option<Option<crate::budget::WorkerPermit>> {
        match &self.budget {
            None => Some(None),
            Some(b) => b.try_take().map(Some),
        }
    }

    pub(crate) fn default_timeout(&self) -> Duration {
        Duration::from_millis(self.cfg.default_timeout_ms)
    }

    pub(crate) fn key_state(&self, header: &str, min: usize) -> Arc<KeyState> {
        self.keys
            .entry(header.to_string())
            .or_insert_with(|| {
                Arc::new(KeyState::new(
                    header.to_string(),
                    min,
                    self.cfg.max_queue_per_key,
                ))
            })
            .clone()
    }

    /// The statistics of method `name`, created on its first request.
    pub(crate) fn method_stats(&self, name: &'static str) -> Arc<MethodStats> {
        if let Some(m) = self.methods.get(name) {
            return m.clone();
        }
        let w = self.cfg.latency_window;
        self.methods
            .entry(name)
            .or_insert_with(|| {
                Arc::new(MethodStats {
                    requests: AtomicU64::new(0),
                    total: LatencyWindow::new(w),
                    service: LatencyWindow::new(w),
                })
            })
            .clone()
    }

    pub(crate) fn record_latency(
        &self,
        method: &'static str,
        total: Duration,
        service: Option<Duration>,
    ) {
        let m = self.method_stats(method);
        m.total.record(total.as_micros() as u64);
        if let Some(d) = service {
            m.service.record(d.as_micros() as u64);
        }
    }

    /// Every pid of a live worker process, for the synchronous kill in
    /// `Drop`.
    pub(crate) fn worker_pids(&self) -> Vec<u32> {
        let mut pids = Vec::new();
        for k in self.keys.iter() {
            for s in k.slots.lock().unwrap().values() {
                if let Some(p) = s.pid() {
                    pids.push(p);
                }
            }
        }
        pids
    }
}

/// One method's statistics (`status`' `latency`).
pub(crate) struct MethodStats {
    /// Requests accepted.
    pub requests: AtomicU64,
    /// End-to-end latency.
    pub total: LatencyWindow,
    /// Time on a worker.
    pub service: LatencyWindow,
}

/// The map key of a header's workers for a caller tag (`[pool]
/// isolate_by`): the header itself when callers share workers. A tagged
/// key starts with NUL, which no canonical import header does.
pub(crate) fn map_key(header: &str, caller: Option<&str>) -> String {
    match caller {
        None => header.to_string(),
        Some(c) => format!("\0{c}\0{header}"),
    }
}

pub(crate) struct KeyState {
    pub header: String,
    /// The caller these workers belong to (`isolate_by`), `None` = shared.
    pub caller: Option<String>,
    /// Prewarm minimum (0 for headers first seen in a request).
    pub min: usize,
    pub queue: KeyQueue<Job>,
    pub slots: Mutex<BTreeMap<u64, Arc<SlotShared>>>,
    /// Slots currently waiting on the queue.
    pub idle: AtomicUsize,
    /// Pool-clock ms before which the prewarm minimum is not enforced
    /// (set when a worker for this header failed to start).
    pub spawn_backoff_until_ms: AtomicU64,
    /// Wakes this header's spares to look again whether a serving worker
    /// is up (one lost its process, became ready, or exited).
    pub spare_call: Notify,
    /// Largest RSS a worker of this header had when it became ready (0 =
    /// none measured yet): the memory a spare is expected to take.
    pub measured_rss: AtomicU64,
    /// Why the header has fewer spares than `spares_per_key` (for
    /// `status`), as the supervisor last saw it.
    pub spare_note: Mutex<Option<String>>,
}

impl crate::budget::Member for Inner {
    fn wake(&self) {
        self.wake.notify_one();
    }

    fn evictable(&self) -> (usize, Vec<crate::budget::Idle<'_>>) {
        let (mut stopping, mut idle) = (0, Vec::new());
        for k in self.keys.iter() {
            let queued = k.queue.depth();
            let slots = k.slots.lock().unwrap();
            let serving = slots
                .values()
                .filter(|s| !s.is_spare() && s.state() != WorkerState::Stopping)
                .count();
            for s in slots.values() {
                match s.state() {
                    WorkerState::Stopping => stopping += 1,
                    WorkerState::Idle if queued == 0 => {
                        let slot = s.clone();
                        idle.push(crate::budget::Idle {
                            serving: !s.is_spare(),
                            at_min: !s.is_spare() && serving <= k.min,
                            since: self.instant_at(s.idle_since_ms.load(Ordering::Relaxed)),
                            id: s.id,
                            stop: Box::new(move || {
                                crate::status::bump(&self.counters.evictions);
                                slot.request_stop();
                            }),
                        });
                    }
                    _ => {}
                }
            }
        }
        (stopping, idle)
    }
}

impl KeyState {
    pub(crate) fn new(header: String, min: usize, queue_limit: usize) -> Self {
        KeyState {
            header,
            caller: None,
            min,
            queue: KeyQueue::new(queue_limit),
            slots: Mutex::new(BTreeMap::new()),
            idle: AtomicUsize::new(0),
            spawn_backoff_until_ms: AtomicU64::new(0),
            spare_call: Notify::new(),
            measured_rss: AtomicU64::new(0),
            spare_note: Mutex::new(None),
        }
    }

    /// A serving (not spare) worker of this header has a process up, idle
    /// or busy: spares stay out of the queue.
    pub(crate) fn serving_up(&self) -> bool {
        self.slots
            .lock()
            .unwrap()
            .values()
            .any(|s| !s.is_spare() && s.up())
    }

    /// A spare (`me`) took over serving: one serving slot that is not up
    /// (being replaced, or still finishing its start) becomes the spare in
    /// its place, so the header keeps its count of serving workers and
    /// spares.
    pub(crate) fn swap_roles_with(&self, me: &SlotShared) {
        me.set_spare(false);
        let slots = self.slots.lock().unwrap();
        if let Some(s) = slots.values().find(|s| {
            s.id != me.id && !s.is_spare() && !s.up() && s.state() != WorkerState::Stopping
        }) {
            s.set_spare(true);
        }
    }

    pub(crate) fn slot_snaps(&self) -> Vec<SlotSnap> {
        self.slots
            .lock()
            .unwrap()
            .values()
            .map(|s| SlotSnap {
                id: s.id,
                state: s.state(),
                idle_since_ms: s.idle_since_ms.load(Ordering::Relaxed),
                spare: s.is_spare(),
            })
            .collect()
    }

    /// Slots not told to stop.
    pub(crate) fn live_slots(&self) -> usize {
        self.slots
            .lock()
            .unwrap()
            .values()
            .filter(|s| s.state() != WorkerState::Stopping)
            .count()
    }
}

/// The public face of one worker slot (the task owning the `Worker` keeps
/// the process itself).
pub(crate) struct SlotShared {
    pub id: u64,
    state: AtomicU8,
    /// 0 = no process.
    pid: AtomicU32,
    pub uses: AtomicU64,
    /// Memory cap of the current process (0 = none); see
    /// `PoolConfig::rss_cap`.
    pub rss_cap: AtomicU64,
    pub idle_since_ms: AtomicU64,
    stop_flag: AtomicBool,
    pub stop: Notify,
    /// A spare: ready (or starting) and unused, taking requests only while
    /// no serving worker of its header is up.
    spare: AtomicBool,
    /// Interrupting Lean after a time-out: busy, but not up for its
    /// header, so a ready spare takes the queue meanwhile (and this slot
    /// becomes the spare in its place).
    interrupting: AtomicBool,
}

impl SlotShared {
    pub(crate) fn new(id: u64, spare: bool) -> Self {
        SlotShared {
            spare: AtomicBool::new(spare),
            id,
            state: AtomicU8::new(crate::status::state_to_u8(WorkerState::Starting)),
            pid: AtomicU32::new(0),
            uses: AtomicU64::new(0),
            rss_cap: AtomicU64::new(0),
            idle_since_ms: AtomicU64::new(0),
            stop_flag: AtomicBool::new(false),
            stop: Notify::new(),
            interrupting: AtomicBool::new(false),
        }
    }

    pub(crate) fn set_interrupting(&self, v: bool) {
        self.interrupting.store(v, Ordering::SeqCst);
    }

    /// A slot told to stop reports `Stopping` whatever it is doing, so the
    /// planner counts its room as already on the way.
    pub(crate) fn state(&self) -> WorkerState {
        if self.stop_requested() {
            WorkerState::Stopping
        } else {
            crate::status::state_from_u8(self.state.load(Ordering::Relaxed))
        }
    }

    pub(crate) fn set_state(&self, s: WorkerState) {
        self.state
            .store(crate::status::state_to_u8(s), Ordering::Relaxed);
    }

    pub(crate) fn pid(&self) -> Option<u32> {
        match self.pid.load(Ordering::Relaxed) {
            0 => None,
            p => Some(p),
        }
    }

    pub(crate) fn set_pid(&self, pid: Option<u32>) {
        self.pid.store(pid.unwrap_or(0), Ordering::Relaxed);
    }

    /// A process is up and the slot idle or busy with it (not interrupting
    /// a timed-out request).
    pub(crate) fn up(&self) -> bool {
        self.pid().is_some()
            && matches!(self.state(), WorkerState::Idle | WorkerState::Busy)
            && !self.interrupting.load(Ordering::SeqCst)
    }

    pub(crate) fn is_spare(&self) -> bool {
        self.spare.load(Ordering::SeqCst)
    }

    pub(crate) fn set_spare(&self, v: bool) {
        self.spare.store(v, Ordering::SeqCst);
    }

    pub(crate) fn request_stop(&self) {
        self.stop_flag.store(true, Ordering::Relaxed);
        // `notify_one` keeps a permit if the slot is not waiting right now.
        self.stop.notify_one();
    }

    pub(crate) fn stop_requested(&self) -> bool {
        self.stop_flag.load(Ordering::Relaxed)
    }
}
