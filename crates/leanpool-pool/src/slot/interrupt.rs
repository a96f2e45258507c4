//! Interrupting Lean after a time-out answer or a departed caller: keep
//! the process only if it finishes a header-only edit and goes quiet
//! within `timeout_grace_ms`, else kill it.

use super::*;

/// Why a request stopped before Lean finished it: the slot then interrupts
/// Lean (or kills the worker).
#[derive(Clone, Copy)]
pub(super) enum Stopped {
    /// Answered `timeout`.
    TimedOut,
    /// Its caller went away.
    Cancelled,
}

impl Stopped {
    /// The counter of workers this kind of stop cost.
    pub(super) fn kills(self, c: &AtomicCounters) -> &AtomicU64 {
        match self {
            Stopped::TimedOut => &c.timeout_kills,
            Stopped::Cancelled => &c.cancel_kills,
        }
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Stopped::TimedOut => "timed-out",
            Stopped::Cancelled => "cancelled",
        }
    }
}

/// After an interrupting edit, the process counts as quiet when its
/// threads wanted (ran, or waited to run) at most this share of one core
/// over [`QUIET_WINDOW`]: a thread still computing wants all of it, on an
/// idle or a loaded machine alike (`proc::group_thread_demand_ns`).
const QUIET_WINDOW: Duration = Duration::from_millis(250);
const QUIET_CPU_SHARE: f64 = 0.3;

/// Why an interrupt did not leave the process fit to keep (the caller
/// kills it).
#[derive(Debug, thiserror::Error)]
enum InterruptFailed {
    #[error("no worker")]
    NoWorker,
    #[error("shutting down")]
    ShuttingDown,
    #[error("the header-only edit failed: {0}")]
    Edit(WorkerError),
    #[error("RSS {0} above the memory cap")]
    MemoryCap(u64),
    #[error("the process is gone")]
    Gone,
    #[error("the header-only edit took {edit_ms} ms but Lean kept computing (CPU wanted, ms per {window_ms} ms: {samples:?})")]
    KeptComputing {
        edit_ms: u64,
        window_ms: u64,
        samples: Vec<u64>,
    },
}

impl Slot {
    /// After a time-out answer or a departed caller: keep the process if
    /// Lean can be interrupted (its edit done *and* the process quiet)
    /// within `timeout_grace_ms`, else kill it (`timeout_kills` /
    /// `cancel_kills`). A worker still computing a departed caller's text
    /// would steal CPU from every later caller, so both paths apply the
    /// same quiet check.
    pub(super) async fn interrupt_or_kill(&mut self, why: Stopped) {
        let Some(w) = self.worker.as_mut() else {
            return;
        };
        if !w.is_alive() {
            // Killed by the driver (grace 0), or gone meanwhile:
            // `after_request` reaps it.
            bump(why.kills(&self.inner.counters));
            return;
        }
        let grace = Duration::from_millis(self.inner.cfg.timeout_grace_ms);
        if grace.is_zero() {
            bump(why.kills(&self.inner.counters));
            self.kill_worker().await;
            return;
        }
        let t = Instant::now();
        // A ready spare serves the header meanwhile (this slot then
        // becomes the spare).
        self.me.set_interrupting(true);
        self.key.spare_call.notify_waiters();
        self.inner.wake.notify_one();
        let r = self.interrupt(grace).await;
        self.me.set_interrupting(false);
        match r {
            Ok(()) => tracing::info!(
                slot = self.me.id,
                pid = self.me.pid(),
                took_ms = t.elapsed().as_millis() as u64,
                "{} request interrupted in Lean; worker kept",
                why.name()
            ),
            Err(e) => {
                tracing::warn!(
                    slot = self.me.id,
                    pid = self.me.pid(),
                    "{} request not interrupted within {grace:?}: {e}; killing the worker",
                    why.name()
                );
                bump(why.kills(&self.inner.counters));
                self.kill_worker().await;
            }
        }
    }

    /// After a cancelled or timed-out request: a new edit holding only the
    /// header makes Lean cancel the old version's elaboration. `Ok` once,
    /// within `limit`, Lean has finished that edit (its diagnostics
    /// barrier answered) and the process has gone quiet: what its threads
    /// wanted of the CPUs over [`QUIET_WINDOW`] is at most
    /// [`QUIET_CPU_SHARE`] of one core, so an
    /// elaboration that ignored the cancel (still computing beside the
    /// finished edit) is not taken for an idle worker. The memory cap and
    /// a hard stop are watched meanwhile. `Err` says why not; the caller
    /// kills the process.
    async fn interrupt(&mut self, limit: Duration) -> Result<(), InterruptFailed> {
        let deadline = tokio::time::Instant::now() + limit;
        let cap = self.rss_cap();
        let poll = Duration::from_millis(self.inner.cfg.rss_poll_ms);
        let Some(w) = self.worker.as_mut() else {
            return Err(InterruptFailed::NoWorker);
        };
        let pid = w.pid();
        let t = Instant::now();
        {
            let edit = w.elaborate_header(limit);
            tokio::pin!(edit);
            let mut rss_tick = tokio::time::interval(poll);
            rss_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    biased;
                    _ = self.hard.changed() => return Err(InterruptFailed::ShuttingDown),
                    r = &mut edit => match r {
                        Ok(_) => break,
                        Err(e) => return Err(InterruptFailed::Edit(e)),
                    },
                    _ = rss_tick.tick(), if cap.is_some() => {
                        if let Some(rss) = rss_over(pid, cap) {
                            bump(&self.inner.counters.memory_kills);
                            return Err(InterruptFailed::MemoryCap(rss));
                        }
                    }
                }
            }
        }
        let edit_ms = t.elapsed().as_millis() as u64;
        let window_ms = QUIET_WINDOW.as_millis() as u64;
        let mut samples = vec![];
        loop {
            let before = proc::group_thread_demand_ns(pid).ok_or(InterruptFailed::Gone)?;
            tokio::select! {
                biased;
                _ = self.hard.changed() => return Err(InterruptFailed::ShuttingDown),
                _ = tokio::time::sleep(QUIET_WINDOW) => {}
            }
            let after = proc::group_thread_demand_ns(pid).ok_or(InterruptFailed::Gone)?;
            let wanted_ms = proc::demand_between(&before, &after) / 1_000_000;
            samples.push(wanted_ms);
            if wanted_ms as f64 <= window_ms as f64 * QUIET_CPU_SHARE {
                tracing::info!(
                    slot = self.me.id,
                    pid,
                    edit_ms,
                    ?samples,
                    "interrupt: header-only edit done, process quiet"
                );
                return Ok(());
            }
            if tokio::time::Instant::now() + QUIET_WINDOW > deadline {
                return Err(InterruptFailed::KeptComputing {
                    edit_ms,
                    window_ms,
                    samples,
                });
            }
        }
    }
}
