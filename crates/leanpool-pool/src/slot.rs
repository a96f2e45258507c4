//! A worker slot: one task owning at most one Lean process at a time.
//!
//! The slot takes requests from its header's queue, runs them, and keeps
//! its process healthy: a process that died (while idle or mid-request),
//! reached `max_uses` or the memory cap is killed and replaced by a fresh
//! one in the same slot. A request that runs past its time limit is
//! answered `timeout` at once; then Lean is interrupted (a new edit holding
//! only the header) and the process kept if it comes back within
//! `timeout_grace_ms` and goes quiet, else killed and replaced. A request whose worker died goes back
//! to the front of the queue to run once more (on a ready spare if there
//! is one, else on the fresh process), then is answered `WorkerFailed`.
//!
//! A *spare* slot stays out of the queue while a serving worker of its
//! header is up. When none is (the serving one lost its process), the
//! spare takes the next request and becomes serving; the slot being
//! replaced becomes the spare in its place (`KeyState::swap_roles_with`),
//! so a start is only waited for when no spare was ready. The slot
//! ends when told to stop (idle timeout, eviction, shutdown) or when it
//! cannot start a process; its exit guard always frees its place in the
//! global count, even if the task panics.

use crate::budget::WorkerPermit;
use crate::error::PoolError;
use crate::job::{Job, Leased, Queued, Ran, Reply};
use crate::shared::{Inner, KeyState, SlotShared};
use crate::status::{bump, AtomicCounters, WorkerState};
use leanpool_lean::{proc, Worker, WorkerError};
use leanpool_protocol::FailureCause;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;

mod failure;
mod interrupt;
mod lease;
mod process;

use failure::{request_failed, Keep};
use interrupt::Stopped;

/// Registers a new slot for `key` and starts its task. The caller (the
/// supervisor) has already counted it in `inner.total` and took its place
/// in the shared budget (`permit`, held by the slot until its task ends,
/// or handed to a leaser with its worker).
pub(crate) fn start_slot(
    inner: &Arc<Inner>,
    key: &Arc<KeyState>,
    spare: bool,
    permit: Option<WorkerPermit>,
) {
    let id = inner.next_slot.fetch_add(1, Ordering::Relaxed);
    let me = Arc::new(SlotShared::new(id, spare));
    key.slots.lock().unwrap().insert(id, me.clone());
    let exit = ExitGuard {
        inner: inner.clone(),
        key: key.clone(),
        me: me.clone(),
    };
    tokio::spawn(async move {
        let mut slot = Slot {
            inner: exit.inner.clone(),
            key: exit.key.clone(),
            me,
            worker: None,
            ready_at: None,
            hard: exit.inner.hard_stop.subscribe(),
            permit,
        };
        slot.run().await;
        if let Some(w) = slot.worker.take() {
            w.kill().await;
        }
        drop(exit);
    });
}

/// Frees the slot's place however its task ends.
struct ExitGuard {
    inner: Arc<Inner>,
    key: Arc<KeyState>,
    me: Arc<SlotShared>,
}

impl Drop for ExitGuard {
    fn drop(&mut self) {
        // Only reached with a live process if the task panicked or the
        // runtime is going away: kill it synchronously (the `Worker`'s own
        // Drop does the same; this covers a pid recorded without one).
        if let Some(pid) = self.me.pid() {
            proc::kill_group(pid);
        }
        self.me.set_state(WorkerState::Stopping);
        self.key.slots.lock().unwrap().remove(&self.me.id);
        self.inner.total.fetch_sub(1, Ordering::SeqCst);
        self.inner.wake.notify_one();
        self.key.spare_call.notify_waiters();
        self.inner.slot_exited.notify_waiters();
    }
}

/// Counts a slot as waiting on its header's queue while alive.
struct IdleMark<'a>(&'a AtomicUsize);
impl<'a> IdleMark<'a> {
    fn new(c: &'a AtomicUsize) -> Self {
        c.fetch_add(1, Ordering::SeqCst);
        IdleMark(c)
    }
}
impl Drop for IdleMark<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The process's RSS if it is above `cap` (none without a cap, or when
/// `/proc` has no figure). The one memory-cap test of the slot: between
/// requests, during a request and during an interrupt, where the running
/// edit holds the worker borrowed and `&self` is out of reach.
fn rss_over(pid: u32, cap: Option<u64>) -> Option<u64> {
    proc::memory_over(pid, cap)
}

struct Slot {
    inner: Arc<Inner>,
    key: Arc<KeyState>,
    me: Arc<SlotShared>,
    worker: Option<Worker>,
    /// When the current process became ready.
    ready_at: Option<Instant>,
    hard: watch::Receiver<bool>,
    /// The slot's place in the shared budget (after `worker`: dropped
    /// after it).
    permit: Option<WorkerPermit>,
}

enum Wait {
    Job(Job),
    Tick,
    /// A spare's header changed (a serving worker went or came): look again.
    Recheck,
    Stop,
}

/// How one attempt at a request ended.
enum Outcome<T> {
    Done(Result<T, WorkerError>),
    /// RSS above the cap (bytes seen).
    Memory(u64),
    HardStop,
    /// The caller went away while Lean was elaborating its request.
    Cancelled,
}

/// How often a running request checks that its caller is still there.
const CANCEL_POLL: Duration = Duration::from_millis(200);

/// Whether the slot goes on after a request.
enum Flow {
    Continue,
    Exit,
}

impl Slot {
    fn stopping(&self) -> bool {
        self.me.stop_requested() || *self.hard.borrow()
    }

    async fn run(&mut self) {
        loop {
            if self.stopping() {
                return;
            }
            if self.worker.is_none() {
                // No replacement processes once shutdown has begun.
                if self.inner.shutting_down.load(Ordering::SeqCst) {
                    return;
                }
                match self.spawn().await {
                    Some(Ok(())) => {}
                    Some(Err(e)) => {
                        self.spawn_failed(&e).await;
                        return;
                    }
                    None => return,
                }
            }
            self.mark_idle();
            match self.wait().await {
                Wait::Stop => return,
                Wait::Tick => self.health_check().await,
                Wait::Recheck => {}
                Wait::Job(job) => {
                    if self.me.is_spare() {
                        // No serving worker was up: this spare takes over.
                        self.key.swap_roles_with(&self.me);
                        bump(&self.inner.counters.spare_takeovers);
                        tracing::info!(slot = self.me.id, "spare takes over serving its header");
                        self.inner.wake.notify_one();
                    }
                    if let Flow::Exit = self.serve(job).await {
                        return;
                    }
                }
            }
        }
    }

    /// Idle since the end of the last request (or the start), not since
    /// the last health tick.
    fn mark_idle(&self) {
        if self.me.state() == WorkerState::Idle {
            return;
        }
        self.me
            .idle_since_ms
            .store(self.inner.now_ms(), Ordering::Relaxed);
        self.me.set_state(WorkerState::Idle);
        // A header with waiting requests and no room may now evict this
        // worker; a spare waiting on the queue because no serving worker
        // was up may step back.
        self.inner.wake.notify_one();
        self.key.spare_call.notify_waiters();
    }

    /// Waits for the slot's next event: a job from the queue (a spare only
    /// while no serving worker of its header is up), a health tick, a
    /// spare's recheck, or a stop.
    async fn wait(&mut self) -> Wait {
        let tick = Duration::from_millis(self.inner.cfg.health_interval_ms);
        // Registered before looking, so a change right after the look
        // still wakes this slot; the registration ends with this function,
        // before a job is served.
        let key = self.key.clone();
        let call = key.spare_call.notified();
        tokio::pin!(call);
        call.as_mut().enable();
        let spare = self.me.is_spare();
        if spare && key.serving_up() {
            tokio::select! {
                biased;
                _ = self.hard.changed() => Wait::Stop,
                _ = self.me.stop.notified() => Wait::Stop,
                _ = &mut call => Wait::Recheck,
                _ = tokio::time::sleep(tick) => Wait::Tick,
            }
        } else {
            let _idle = IdleMark::new(&self.key.idle);
            tokio::select! {
                biased;
                _ = self.hard.changed() => Wait::Stop,
                _ = self.me.stop.notified() => Wait::Stop,
                j = self.key.queue.pop() => j.map_or(Wait::Stop, Wait::Job),
                _ = &mut call, if spare => Wait::Recheck,
                _ = tokio::time::sleep(tick) => Wait::Tick,
            }
        }
    }

    /// Puts a request whose worker died back at the front of the queue
    /// (a ready spare, or this slot's next process, takes it).
    fn requeue(&self, job: Job) {
        if let Err(job) = self.key.queue.push_retry(job) {
            job.fail(PoolError::ShuttingDown);
        }
        self.inner.wake.notify_one();
    }

    async fn serve(&mut self, job: Job) -> Flow {
        if job.is_cancelled() {
            bump(&self.inner.counters.cancelled);
            return Flow::Continue;
        }
        match job {
            Job::Request(r) => self.serve_request(r).await,
            Job::Lease(reply) => self.hand_over(reply).await,
        }
    }

    /// Runs one request; its reply takes only its own method's result.
    async fn serve_request(&mut self, mut job: Box<dyn Queued>) -> Flow {
        if !self.worker.as_mut().is_some_and(|w| w.is_alive()) {
            self.requeue_from_dead_worker(job).await;
            return Flow::Continue;
        }
        if self.ready_at.is_some_and(|r| r > job.accepted()) {
            bump(&self.inner.counters.cold_waits);
        }
        self.me.set_state(WorkerState::Busy);
        let started = Instant::now();
        let mut timed_out = false;
        let answer = match self.attempt(job.as_ref()).await {
            Outcome::Done(Ok(ran)) => {
                if ran == Ran::TimedOut {
                    bump(&self.inner.counters.timeouts);
                    timed_out = true;
                }
                Ok(())
            }
            Outcome::Done(Err(e)) => match self.worker_failed(e, job.as_ref()).await {
                Some(error) => Err(error),
                None => {
                    // The retry goes to the front of the queue: to a ready
                    // spare at once, or to this slot's next process.
                    job.note_retry(started.elapsed());
                    bump(&self.inner.counters.retries);
                    self.requeue(Job::Request(job));
                    return Flow::Continue;
                }
            },
            Outcome::Memory(rss) => Err(self.memory_kill(rss).await),
            Outcome::HardStop => {
                job.answer(Err(PoolError::ShuttingDown));
                return Flow::Exit;
            }
            Outcome::Cancelled => {
                self.cancelled(job, started).await;
                return Flow::Continue;
            }
        };
        self.finish(job, answer, started, timed_out).await;
        Flow::Continue
    }

    /// The process died since its last request: the request goes back to
    /// the front of the queue (to a ready spare, or to this slot's next
    /// process) without counting as a retry.
    async fn requeue_from_dead_worker(&mut self, job: Box<dyn Queued>) {
        if let Some(w) = self.worker.as_mut() {
            tracing::warn!(
                slot = self.me.id,
                "worker found dead before a request: {}",
                w.stderr_tail()
            );
        }
        self.kill_worker().await;
        self.requeue(Job::Request(job));
    }

    /// Counts and logs a request's worker error, retires the process when
    /// the error leaves it unusable, and gives the caller's error; `None`
    /// when the process died and the request is to run once more (its
    /// first death, caller still there).
    async fn worker_failed(&mut self, e: WorkerError, job: &dyn Queued) -> Option<PoolError> {
        match &e {
            WorkerError::Died { .. } | WorkerError::Io(_) => {
                bump(&self.inner.counters.crashes);
                tracing::warn!(
                    slot = self.me.id,
                    retried = job.retried(),
                    "worker died during a request: {e}"
                );
                self.kill_worker().await;
                if !job.retried() && !job.is_cancelled() {
                    return None;
                }
            }
            WorkerError::Panicked {
                message,
                stderr_tail,
            } => {
                bump(&self.inner.counters.crashes);
                tracing::warn!(
                    slot = self.me.id,
                    "worker panicked on a request: {message}; stderr:\n{stderr_tail}"
                );
            }
            WorkerError::Compromised(what) => {
                bump(&self.inner.counters.compromised);
                tracing::warn!(slot = self.me.id, "worker compromised on a request: {what}");
            }
            _ => tracing::warn!(slot = self.me.id, "request failed: {e}"),
        }
        let (error, keep) = request_failed(e);
        if keep == Keep::No {
            self.kill_worker().await;
        }
        Some(error)
    }

    /// Kills a process whose RSS went over its cap during a request; the
    /// request's error.
    async fn memory_kill(&mut self, rss: u64) -> PoolError {
        bump(&self.inner.counters.memory_kills);
        let limit = self.rss_cap().unwrap_or(0);
        self.kill_worker().await;
        PoolError::worker_failed(
            FailureCause::MemoryCap,
            format!("the worker exceeded the memory limit ({rss} > {limit} bytes resident) and was killed"),
        )
    }

    /// The caller went away while Lean was elaborating its request.
    /// Nobody waits for this answer: interrupt Lean with a new edit (the
    /// bare header; Lean cancels the elaboration of the older version)
    /// instead of letting the request run to its limit ahead of everyone
    /// queued behind it.
    async fn cancelled(&mut self, job: Box<dyn Queued>, started: Instant) {
        bump(&self.inner.counters.cancelled);
        self.inner.record_latency(
            job.method(),
            job.accepted().elapsed(),
            Some(job.spent() + started.elapsed()),
        );
        job.answer(Err(PoolError::Internal("the caller went away".into())));
        self.interrupt_or_kill(Stopped::Cancelled).await;
        self.after_request().await;
    }

    /// Answers a request that ran (or failed) on this slot's process,
    /// then readies the process for the next one: a timed-out request's
    /// Lean is interrupted, a used-up or dead process retired.
    async fn finish(
        &mut self,
        job: Box<dyn Queued>,
        answer: Result<(), PoolError>,
        started: Instant,
        timed_out: bool,
    ) {
        if matches!(answer, Err(PoolError::WorkerFailed { .. })) {
            bump(&self.inner.counters.worker_failed);
        }
        self.inner.record_latency(
            job.method(),
            job.accepted().elapsed(),
            Some(job.spent() + started.elapsed()),
        );
        // The caller has its answer (`timeout` at once); the worker takes
        // nothing else until the interrupt is over.
        job.answer(answer);
        if timed_out {
            self.interrupt_or_kill(Stopped::TimedOut).await;
        }
        self.after_request().await;
    }

    /// One run of the request on the current process, watched for the
    /// memory cap and for a hard stop.
    async fn attempt(&mut self, job: &dyn Queued) -> Outcome<Ran> {
        let default = self.inner.default_timeout();
        let limit = self.rss_cap();
        let poll = Duration::from_millis(self.inner.cfg.rss_poll_ms);
        let w = self.worker.as_mut().expect("a live worker");
        let pid = w.pid();
        let run = job.run(w, default, &self.inner.policy);
        tokio::pin!(run);
        // Intervals, not sleeps re-armed per turn: one arm firing must not
        // reset the other's clock. The first memory look is one period in:
        // the RSS was measured when the worker became ready and after its
        // last request, and a scan of the process group at every request's
        // start was a large share of the pool's cost per request (issue 22).
        let mut rss_tick = tokio::time::interval_at(tokio::time::Instant::now() + poll, poll);
        let mut cancel_tick = tokio::time::interval(CANCEL_POLL);
        for t in [&mut rss_tick, &mut cancel_tick] {
            t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        }
        loop {
            tokio::select! {
                biased;
                _ = self.hard.changed() => return Outcome::HardStop,
                r = &mut run => {
                    self.me.uses.fetch_add(1, Ordering::Relaxed);
                    return Outcome::Done(r);
                }
                _ = rss_tick.tick(), if limit.is_some() => {
                    if let Some(rss) = rss_over(pid, limit) {
                        return Outcome::Memory(rss);
                    }
                }
                _ = cancel_tick.tick() => {
                    if job.is_cancelled() {
                        return Outcome::Cancelled;
                    }
                }
            }
        }
    }

    /// Retire the process if a request left it dead (time-out with no grace,
    /// compromised) or used up.
    async fn after_request(&mut self) {
        let Some(w) = self.worker.as_mut() else {
            return;
        };
        let pid = w.pid();
        if !w.is_alive() {
            // Killed by the driver at its time limit (grace 0), or compromised right
            // after its answer): just reap it.
            if let Some(what) = w.compromised() {
                tracing::warn!(
                    slot = self.me.id,
                    "worker compromised after a request: {what}"
                );
                bump(&self.inner.counters.compromised);
            }
            self.kill_worker().await;
        } else if self.inner.cfg.max_uses > 0
            && self.me.uses.load(Ordering::Relaxed) >= self.inner.cfg.max_uses
        {
            bump(&self.inner.counters.recycles);
            tracing::info!(
                slot = self.me.id,
                pid,
                "recycling worker after max_uses requests"
            );
            self.kill_worker().await;
        } else if let Some(rss) = self.over_memory_limit(pid) {
            // Recycling by measurement: the next request goes to a spare
            // if one is ready.
            bump(&self.inner.counters.memory_kills);
            bump(&self.inner.counters.recycles);
            tracing::info!(
                slot = self.me.id,
                pid,
                rss,
                "recycling worker: RSS above its cap"
            );
            self.kill_worker().await;
        }
    }
}
