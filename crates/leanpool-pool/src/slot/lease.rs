//! Workers for leasers (issue 26): a slot's pristine process handed
//! over, or a fresh one started outside every slot.

use super::*;

/// Starts a process for a leaser, outside every slot (it never serves the
/// pool's traffic and never comes back): the fresh worker a lease gets
/// when no pristine one was at hand. Same start as a slot's (sandbox,
/// `RLIMIT_AS`, memory cap from its resident size once ready). With a
/// shared budget it first waits for a place in the machine-wide total
/// (evicting an idle worker of any pool of the budget), until `gone()`.
pub(crate) async fn start_for_lease(
    inner: &Inner,
    header: &str,
    gone: impl Fn() -> bool,
) -> Result<Leased, PoolError> {
    let stopping = || inner.shutting_down.load(Ordering::SeqCst);
    if stopping() {
        return Err(PoolError::ShuttingDown);
    }
    let permit = match &inner.budget {
        None => None,
        Some(b) => match b.acquire(|| gone() || stopping()).await {
            Some(p) => Some(p.into_leased()),
            None if stopping() => return Err(PoolError::ShuttingDown),
            None => return Err(PoolError::Internal("the leaser went away".into())),
        },
    };
    let mut w = match Worker::spawn(&inner.worker_cfg, header).await {
        Ok(w) => w,
        Err(e) => {
            bump(&inner.counters.spawn_failures);
            return Err(PoolError::SpawnFailed(e.to_string()));
        }
    };
    bump(&inner.counters.spawns);
    w.set_kill_on_timeout(true);
    if let Some(limit) = inner.cfg.rlimit_as_bytes {
        if let Err(e) = crate::limits::set_address_space_limit(w.pid(), limit) {
            tracing::warn!(pid = w.pid(), "could not set RLIMIT_AS: {e}");
        }
    }
    let rss_cap = inner.cfg.rss_cap(proc::worker_rss_bytes(w.pid()));
    tracing::info!(pid = w.pid(), header = %header.trim_end(), "fresh worker started for a lease");
    Ok(Leased {
        worker: w,
        rss_cap,
        permit,
    })
}

impl Slot {
    /// Answers a lease (issue 26: a lease starts clean and does not cost
    /// the pool its warmth). A worker no caller's text or request has
    /// reached ([`Worker::pristine`]: a fresh or spare process) is handed
    /// over and the slot ends (the supervisor refills the header's
    /// prewarm minimum and spares behind it). A worker that has served
    /// anything stays with the slot, serving its header's traffic, and a
    /// new process is started for the leaser in the background. If the
    /// leaser has gone meanwhile, the worker stays and the slot goes on.
    pub(super) async fn hand_over(&mut self, reply: Reply<Leased>) -> Flow {
        let pristine = self
            .worker
            .as_mut()
            .is_some_and(|w| w.is_alive() && w.pristine());
        if !pristine {
            bump(&self.inner.counters.leases_fresh);
            let (inner, header) = (self.inner.clone(), self.key.header.clone());
            tokio::spawn(async move {
                if reply.is_cancelled() {
                    return;
                }
                match start_for_lease(&inner, &header, || reply.is_cancelled()).await {
                    // A leaser gone meanwhile drops the worker: killed.
                    Ok(leased) => drop(reply.try_send(leased)),
                    Err(e) => reply.send(Err(e)),
                }
            });
            return Flow::Continue;
        }
        let mut worker = self.worker.take().expect("a live worker");
        let pid = worker.pid();
        self.me.set_pid(None);
        // The leaser gets the driver's default: killed on a time-out.
        worker.set_kill_on_timeout(true);
        // The place in the shared budget goes with the process.
        let permit = self.permit.take().map(WorkerPermit::into_leased);
        match reply.try_send(Leased {
            worker,
            rss_cap: self.rss_cap(),
            permit,
        }) {
            Ok(()) => {
                bump(&self.inner.counters.leases_pristine);
                tracing::info!(slot = self.me.id, pid, "pristine worker leased out");
                Flow::Exit
            }
            Err(mut back) => {
                self.permit = back.permit.take().map(WorkerPermit::into_pooled);
                self.me.set_pid(Some(pid));
                back.worker
                    .set_kill_on_timeout(self.inner.cfg.timeout_grace_ms == 0);
                self.worker = Some(back.worker);
                Flow::Continue
            }
        }
    }
}
