//! A slot's process: starting it (`RLIMIT_AS`, the memory cap from its
//! resident size once ready, the start back-off of a header whose worker
//! cannot start), idle upkeep (a process that died or grew past its cap is
//! replaced before a request finds it so), and killing it.

use super::*;

/// After a failed start, the header's prewarm minimum waits this long
/// before the next attempt (a broken backend must not spin).
const SPAWN_BACKOFF_MS: u64 = 10_000;

impl Slot {
    /// Starts a fresh process for the slot. `None`: hard stop meanwhile
    /// (dropping the spawn future kills a half-started process: the
    /// driver's `Worker` kills its group on drop).
    pub(super) async fn spawn(&mut self) -> Option<Result<(), WorkerError>> {
        self.me.set_state(WorkerState::Starting);
        self.me.set_pid(None);
        self.ready_at = None;
        self.me.uses.store(0, Ordering::Relaxed);
        let r = tokio::select! {
            biased;
            _ = self.hard.changed() => return None,
            r = Worker::spawn(&self.inner.worker_cfg, &self.key.header) => r,
        };
        match r {
            Ok(mut w) => {
                // Time-outs are the slot's business: it interrupts Lean and
                // kills the process only if that fails (`interrupt_or_kill`).
                w.set_kill_on_timeout(self.inner.cfg.timeout_grace_ms == 0);
                if let Some(limit) = self.inner.cfg.rlimit_as_bytes {
                    if let Err(e) = crate::limits::set_address_space_limit(w.pid(), limit) {
                        tracing::warn!(pid = w.pid(), "could not set RLIMIT_AS: {e}");
                    }
                }
                let ready_rss = proc::worker_rss_bytes(w.pid());
                let cap = self.inner.cfg.rss_cap(ready_rss);
                self.me.rss_cap.store(cap.unwrap_or(0), Ordering::Relaxed);
                if let Some(r) = ready_rss {
                    self.key.measured_rss.fetch_max(r, Ordering::Relaxed);
                    self.inner.worker_rss.fetch_max(r, Ordering::Relaxed);
                }
                self.me.set_pid(Some(w.pid()));
                bump(&self.inner.counters.spawns);
                tracing::info!(slot = self.me.id, pid = w.pid(), spare = self.me.is_spare(), header = %self.key.header.trim_end(), "worker ready");
                self.worker = Some(w);
                self.ready_at = Some(Instant::now());
                Some(Ok(()))
            }
            Err(e) => {
                bump(&self.inner.counters.spawn_failures);
                let until = self.inner.now_ms() + SPAWN_BACKOFF_MS;
                self.key
                    .spawn_backoff_until_ms
                    .store(until, Ordering::Relaxed);
                tracing::warn!(slot = self.me.id, header = %self.key.header.trim_end(), "worker failed to start: {e}");
                Some(Err(e))
            }
        }
    }

    /// A header whose worker cannot start would otherwise keep its
    /// requests waiting: if no other slot serves the header, answer what
    /// is queued now. New requests trigger a new attempt.
    pub(super) async fn spawn_failed(&mut self, e: &WorkerError) {
        if self.key.live_slots() <= 1 {
            for job in self.key.queue.drain_now().await {
                job.fail(PoolError::SpawnFailed(e.to_string()));
            }
        }
    }

    pub(super) async fn kill_worker(&mut self) {
        if let Some(w) = self.worker.take() {
            self.me.set_pid(None);
            self.ready_at = None;
            // A spare may take over while this process goes.
            self.key.spare_call.notify_waiters();
            w.kill().await;
        }
    }

    /// Idle upkeep: replace a process that died while idle or grew past
    /// the memory cap, before a request finds it so.
    pub(super) async fn health_check(&mut self) {
        let Some(w) = self.worker.as_mut() else {
            return;
        };
        let pid = w.pid();
        if !w.is_alive() {
            if let Some(what) = w.compromised() {
                tracing::warn!(slot = self.me.id, "idle worker compromised: {what}");
                bump(&self.inner.counters.compromised);
            } else {
                tracing::warn!(slot = self.me.id, "idle worker died: {}", w.stderr_tail());
                bump(&self.inner.counters.crashes);
            }
            self.kill_worker().await;
        } else if self.over_memory_limit(pid).is_some() {
            // Recycled while idle: a ready spare serves meanwhile.
            bump(&self.inner.counters.memory_kills);
            bump(&self.inner.counters.recycles);
            self.kill_worker().await;
        }
    }

    /// The current process's memory cap (fixed when it became ready).
    pub(super) fn rss_cap(&self) -> Option<u64> {
        Some(self.me.rss_cap.load(Ordering::Relaxed)).filter(|&c| c > 0)
    }

    pub(super) fn over_memory_limit(&self, pid: u32) -> Option<u64> {
        rss_over(pid, self.rss_cap())
    }
}
