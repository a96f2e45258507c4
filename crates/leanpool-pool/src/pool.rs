//! The public `Pool` handle.

use crate::config::{Policies, PoolConfig};
use crate::error::PoolError;
use crate::job::{clamp_timeout, Job, Leased, Reply, Request};
use crate::queue::PushError;
use crate::shared::Inner;
use crate::sizing::LimitSources;
use crate::status::{bump, KeyStatus, MethodLatency, PoolStatus, WorkerState, WorkerStatus};
use crate::supervisor::supervise;
use leanpool_lean::{proc, LeanCommand};
use leanpool_methods::method::open;
use leanpool_methods::{Input as _, PoolMethod};
use leanpool_screen::header_key;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A pool of warm Lean workers keyed by header. Cheap to clone (one `Arc`);
/// when the last clone is dropped every worker process is killed.
#[derive(Clone)]
pub struct Pool {
    inner: Arc<Inner>,
    _owner: Arc<OwnerGuard>,
    /// The caller tag of this handle (`as_caller`): its requests run only
    /// on workers of the same tag.
    caller: Option<Arc<str>>,
}

/// Kills every worker when the last `Pool` handle goes away, synchronously
/// (no runtime needed), so a pool can never leak Lean processes. Slot
/// tasks hold `Inner`, not this, so they do not keep it alive.
struct OwnerGuard {
    inner: Arc<Inner>,
}

impl Drop for OwnerGuard {
    fn drop(&mut self) {
        self.inner.shutting_down.store(true, Ordering::SeqCst);
        self.inner.hard_stop.send_replace(true);
        for pid in self.inner.worker_pids() {
            proc::kill_group(pid);
        }
    }
}

impl Pool {
    /// Creates the pool and starts its supervisor, which starts the
    /// prewarm workers in the background, its workers run `command` under
    /// `policies` (the daemon config's `[guard]`, `[verdict]`, `[sandbox]`).
    /// `cfg` is the `[pool]` table (as read, or as the daemon shared it out
    /// between its projects); `sources` says where its worker limits came
    /// from, for `status` (`LimitSources::default()`: the `[pool]` table).
    /// Must be called inside a tokio runtime; blocks it for no I/O (the
    /// workers' libraries are read on a blocking thread). Invalid limits are raised to
    /// 1 (see [`PoolConfig::validate`] to refuse them instead).
    pub fn new(
        command: LeanCommand,
        cfg: PoolConfig,
        sources: LimitSources,
        policies: Policies,
    ) -> Pool {
        Pool::build(command, cfg, sources, policies, None)
    }

    /// [`Pool::new`], its workers also counted against `budget`, the
    /// machine-wide total it shares with other pools (a daemon's
    /// projects, issue 25): every worker process of this pool, leased
    /// ones included, holds a place in it from its start until it is gone;
    /// when the total is reached, a header with waiting requests and no
    /// worker evicts the least recently used idle worker of any pool of
    /// the budget, and a lease waits for a place the same way.
    pub fn with_budget(
        command: LeanCommand,
        cfg: PoolConfig,
        sources: LimitSources,
        policies: Policies,
        budget: crate::WorkerBudget,
    ) -> Pool {
        Pool::build(command, cfg, sources, policies, Some(budget))
    }

    fn build(
        command: LeanCommand,
        cfg: PoolConfig,
        sources: LimitSources,
        policies: Policies,
        budget: Option<crate::WorkerBudget>,
    ) -> Pool {
        let machine = crate::sizing::Machine::probe();
        let mut cfg = cfg.sanitized();
        let per_key = crate::sizing::size(&cfg, sources, machine, None).max_workers_per_key;
        cfg.cap_prewarm(per_key.value);
        cfg.max_uses = cfg.effective_max_uses(command.backend);
        let mut policy = policies.method_policy(command.backend);
        // The libraries' command keywords (issue 20), from the workers'
        // LEAN_PATH: read on a blocking thread, starting now, once per
        // process for one LEAN_PATH whose .oleans are unchanged (pools
        // share it); a request screened before it is done waits for it on
        // its own blocking thread. A module that cannot be read refuses
        // the texts importing it.
        policy.library = Arc::new(leanpool_screen::vocab::LibraryCommands::for_lean_path(
            command.lean_path().as_deref(),
        ));
        let library = policy.library.clone();
        tokio::task::spawn_blocking(move || library.load());
        let worker_cfg = cfg.worker_config(command, &policies.sandbox);
        let inner = Arc::new(Inner::new(
            cfg, worker_cfg, policy, machine, sources, budget,
        ));
        if let Some(b) = &inner.budget {
            let pool: std::sync::Weak<Inner> = Arc::downgrade(&inner);
            b.register(pool);
        }
        // Prewarm headers are canonicalized like request headers; entries
        // with the same canonical header keep the larger minimum.
        let mut prewarm = std::collections::BTreeMap::<String, usize>::new();
        for p in &inner.cfg.prewarm {
            let m = prewarm.entry(header_key(&p.header)).or_default();
            *m = (*m).max(p.min);
        }
        for (key, min) in prewarm {
            inner.key_state(&key, min);
        }
        tokio::spawn(supervise(inner.clone()));
        Pool {
            _owner: Arc::new(OwnerGuard {
                inner: inner.clone(),
            }),
            inner,
            caller: None,
        }
    }

    /// A handle on the same pool whose requests run only on workers of
    /// their own, shared with other handles of the same `tag` and with no
    /// one else (`[pool] isolate_by`: the daemon tags each request with its
    /// caller's uid or connection). Tagged workers count against
    /// `max_workers` like the others, are evicted when idle like them, and
    /// get no hot spares.
    pub fn as_caller(&self, tag: impl Into<String>) -> Pool {
        Pool {
            caller: Some(Arc::from(tag.into())),
            ..self.clone()
        }
    }

    /// Runs method `M` (`check`, `verify`, `normalize`, `opt`: see
    /// [`PoolMethod`]'s impls) on a warm worker of its text's import
    /// header: screens the text (a refused one is answered `rejected`
    /// without a worker), queues it and waits for the answer. Dropping the
    /// returned future withdraws the request: a worker that takes it from
    /// the queue skips it, and a request already running is interrupted in
    /// Lean by a new edit (the warm process stays).
    ///
    /// ```no_run
    /// # async fn f(pool: leanpool_pool::Pool) -> Result<(), leanpool_pool::PoolError> {
    /// use leanpool_protocol::{method, CheckParams};
    /// let text = "theorem t : 1 + 1 = 2 := rfl".to_string();
    /// let r = pool.call::<method::Check>(CheckParams::new(text)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn call<M: PoolMethod>(&self, params: M::Params) -> Result<M::Result, PoolError> {
        let started = Instant::now();
        let input = match M::prepare(params) {
            Ok(input) => input,
            Err(answer) => return Ok(answer),
        };
        let timings = input.options().timings;
        let mut r = self.submit::<M>(input).await?;
        // `elapsed_ms` is the request's whole time in leanpool (queue
        // wait, retries), not only Lean's.
        if timings {
            M::stamp_elapsed(&mut r, started.elapsed());
        }
        Ok(r)
    }

    /// Screens, queues on the header's queue and waits for the answer.
    async fn submit<M: PoolMethod>(&self, mut input: M::Input) -> Result<M::Result, PoolError> {
        let inner = &self.inner;
        clamp_timeout(
            &mut input.options_mut().timeout_ms,
            inner.cfg.min_timeout_ms,
            inner.cfg.max_timeout_ms,
        );
        if inner.shutting_down.load(Ordering::SeqCst) {
            return Err(PoolError::ShuttingDown);
        }
        let accepted = Instant::now();
        bump(&inner.counters.requests);
        bump(&inner.method_stats(M::NAME).requests);
        // The opening step (`leanpool_methods::method::open`): rejected
        // texts are answered here, without a worker. Screening is linear
        // but a 4 MiB text still takes a while: off the async runtime's
        // threads, so it stalls no other connection.
        let policy = inner.policy.clone();
        let opened = tokio::task::spawn_blocking(move || open::<M>(input, policy.screening()))
            .await
            .map_err(|e| PoolError::Internal(format!("screening task failed: {e}")))?;
        let opened = match opened {
            Ok(o) => o,
            Err(rejected) => {
                bump(&inner.counters.rejections);
                inner.record_latency(M::NAME, accepted.elapsed(), None);
                return Ok(rejected);
            }
        };
        let header = opened.header().to_owned();
        let (reply, rx) = Reply::new();
        self.enqueue(
            header,
            Request::<M>::new(opened.input, opened.screened, reply, accepted).into(),
        )?;
        // `Reply` answers even when dropped, so the sender never vanishes
        // silently; the fallback covers a runtime torn down under us.
        rx.await.unwrap_or_else(|_| {
            Err(PoolError::Internal(
                "the request was dropped unanswered".into(),
            ))
        })
    }

    /// Takes a worker for `text`'s header out of the pool for the caller's
    /// exclusive use, e.g. an editor's open document. The worker is always
    /// *pristine* ([`leanpool_lean::Worker::pristine`]): no other caller's
    /// text or request has reached it. The lease queues on the header's
    /// queue like a request (same `max_queue_per_key`); the slot that takes
    /// it hands its worker over only if that worker is pristine (a fresh or
    /// spare process; the slot ends and the supervisor refills the header's
    /// prewarm minimum behind it), and otherwise keeps serving the header
    /// with it while a new process is started for the leaser (`status`:
    /// `leases_pristine`, `leases_fresh`). A leased worker no longer counts
    /// against `max_workers`, but, in a pool with a shared budget
    /// ([`Pool::with_budget`]), it keeps its place in the machine-wide
    /// total until it is dropped ([`Leased::permit`]); a lease that needs
    /// a fresh process waits for a place there. Dropping the future
    /// withdraws the lease. The text is not screened: the holder screens
    /// what it sends.
    pub async fn lease(&self, text: &str) -> Result<Leased, PoolError> {
        if self.inner.shutting_down.load(Ordering::SeqCst) {
            return Err(PoolError::ShuttingDown);
        }
        let (reply, rx) = Reply::new();
        self.enqueue(header_key(text), Job::Lease(reply))?;
        // The slot answers with the worker, or with why not (spawn
        // failure, shutdown).
        rx.await
            .unwrap_or_else(|_| Err(PoolError::Internal("lease dropped".into())))
    }

    /// Queues `job` on `header`'s queue and wakes the supervisor when no
    /// worker of that header is idle.
    fn enqueue(&self, header: String, job: Job) -> Result<(), PoolError> {
        let inner = &self.inner;
        let no_idle_worker = {
            // Queue while holding the map entry, so the supervisor cannot
            // forget this header between lookup and push.
            let caller = self.caller.as_deref();
            let entry = inner
                .keys
                .entry(crate::shared::map_key(&header, caller))
                .or_insert_with(|| {
                    let mut k =
                        crate::shared::KeyState::new(header, 0, inner.cfg.max_queue_per_key);
                    k.caller = caller.map(str::to_string);
                    Arc::new(k)
                });
            // Looked at under the map entry: `shutdown` raises `hard_stop`
            // before it collects the keys to drain, so a job is either
            // drained by it or refused here, never left in a queue nobody
            // serves (a request still in its opening step when the drain
            // ran used to wait forever).
            if *inner.hard_stop.borrow() {
                job.fail(PoolError::ShuttingDown);
                return Err(PoolError::ShuttingDown);
            }
            match entry.queue.try_push(job) {
                Ok(()) => entry.idle.load(Ordering::SeqCst) == 0,
                Err(PushError::Full(job, e)) => {
                    bump(&inner.counters.overloaded);
                    job.fail(e.clone());
                    return Err(e);
                }
                Err(PushError::Closed(job)) => {
                    job.fail(PoolError::ShuttingDown);
                    return Err(PoolError::ShuttingDown);
                }
            }
        };
        if no_idle_worker {
            inner.wake.notify_one();
        }
        Ok(())
    }

    /// The machine-wide total this pool shares with others and its use
    /// now (`status`' `workers`); `None` without a shared budget.
    pub fn worker_total(&self) -> Option<leanpool_protocol::WorkerTotal> {
        self.inner.budget.as_ref().map(crate::WorkerBudget::status)
    }

    /// `[pool] isolate_by`, for the daemon to apply with [`Pool::as_caller`].
    pub fn isolate_by(&self) -> crate::IsolateBy {
        self.inner.cfg.isolate_by
    }

    /// The input guard's policy (`[guard]`) and whether `native_decide`
    /// passes it on this pool's workers, for holders of leased workers to
    /// screen what they send (`Policy::screening`).
    pub fn policy(&self) -> &leanpool_methods::Policy {
        &self.inner.policy
    }

    /// The verdict policy requests are judged by (`[verdict]`).
    pub fn verdict_policy(&self) -> &crate::VerdictPolicy {
        &self.inner.policy.verdict
    }

    /// A snapshot of the pool: workers per header, queues, spares,
    /// latencies and counters (`status`' `pool` member).
    pub fn status(&self) -> PoolStatus {
        let inner = &self.inner;
        let mut keys: Vec<KeyStatus> = inner
            .keys
            .iter()
            .map(|k| {
                let workers: Vec<WorkerStatus> = k
                    .slots
                    .lock()
                    .unwrap()
                    .values()
                    .map(|s| {
                        let pid = s.pid();
                        WorkerStatus {
                            id: s.id,
                            pid,
                            state: s.state(),
                            uses: s.uses.load(Ordering::Relaxed),
                            rss_bytes: pid.and_then(proc::worker_rss_bytes),
                            rss_cap_bytes: Some(s.rss_cap.load(Ordering::Relaxed))
                                .filter(|&c| c > 0 && pid.is_some()),
                            spare: s.is_spare(),
                        }
                    })
                    .collect();
                let spares = workers
                    .iter()
                    .filter(|w| w.spare && w.state != WorkerState::Stopping)
                    .count();
                KeyStatus {
                    header: k.header.clone(),
                    caller: k.caller.clone(),
                    min: k.min,
                    queue_depth: k.queue.depth(),
                    workers,
                    spares,
                    spare_missing: if spares < inner.cfg.spares_per_key {
                        k.spare_note.lock().unwrap().clone()
                    } else {
                        None
                    },
                }
            })
            .collect();
        keys.sort_by(|a, b| a.header.cmp(&b.header));
        // Sorted by name: `status` gives the same bytes for the same state.
        let mut latency: Vec<MethodLatency> = inner
            .methods
            .iter()
            .filter_map(|m| {
                Some(MethodLatency {
                    method: m.key().to_string(),
                    requests: m.requests.load(Ordering::Relaxed),
                    total: m.total.percentiles()?,
                    service: m.service.percentiles(),
                })
            })
            .collect();
        latency.sort_by(|a, b| a.method.cmp(&b.method));
        let limits = inner.limits();
        PoolStatus {
            workers: inner.total.load(Ordering::SeqCst),
            max_workers: limits.max_workers.value,
            limits: Some(limits),
            max_uses: inner.cfg.max_uses,
            spares_per_key: inner.cfg.spares_per_key,
            keys,
            latency,
            counters: inner.counters.snapshot(),
            shutting_down: inner.shutting_down.load(Ordering::SeqCst),
        }
    }

    /// Stops taking work (new requests: `ShuttingDown`), lets queued and
    /// running requests finish until `deadline`, then answers what is left
    /// `ShuttingDown`, kills every worker and waits until they are reaped.
    /// A request accepted earlier but still in its opening step (being
    /// screened) when the queues are drained is answered `ShuttingDown`
    /// too, when it reaches its queue.
    pub async fn shutdown(&self, deadline: Duration) {
        let inner = &self.inner;
        inner.shutting_down.store(true, Ordering::SeqCst);
        inner.wake.notify_one();
        let end = tokio::time::Instant::now() + deadline;
        while !self.quiescent() && tokio::time::Instant::now() < end {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        inner.hard_stop.send_replace(true);
        let keys: Vec<_> = inner.keys.iter().map(|e| e.value().clone()).collect();
        for k in keys {
            for job in k.queue.close_and_drain().await {
                job.fail(PoolError::ShuttingDown);
            }
        }
        // Slots kill and reap their process on the way out; a slot stuck
        // beyond that bound gets its process killed from here.
        let bound = tokio::time::Instant::now() + Duration::from_secs(10);
        while inner.total.load(Ordering::SeqCst) > 0 && tokio::time::Instant::now() < bound {
            let exited = inner.slot_exited.notified();
            tokio::pin!(exited);
            exited.as_mut().enable();
            if inner.total.load(Ordering::SeqCst) == 0 {
                break;
            }
            let _ = tokio::time::timeout(Duration::from_millis(100), exited).await;
        }
        for pid in inner.worker_pids() {
            proc::kill_group(pid);
        }
    }

    /// Nothing running, and nothing queued that a live worker could take.
    fn quiescent(&self) -> bool {
        self.inner.keys.iter().all(|k| {
            let slots = k.slots.lock().unwrap();
            let busy = slots.values().any(|s| s.state() == WorkerState::Busy);
            let servable =
                k.queue.depth() > 0 && slots.values().any(|s| s.state() != WorkerState::Stopping);
            !busy && !servable
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// A Lean command that never runs (no request is made, no worker
    /// starts) with `lean_path` as its workers' `LEAN_PATH`.
    fn command(lean_path: &Path) -> LeanCommand {
        LeanCommand {
            program: "/nonexistent/lean".into(),
            args: vec![],
            env: vec![("LEAN_PATH".into(), lean_path.display().to_string())],
            cwd: None,
            backend: leanpool_lean::BackendKind::Native,
            version: None,
            source: "pool unit test (never started)".into(),
        }
    }

    /// A library directory holding one module that declares the command
    /// `grind_annotated` (the screen crate's 64-bit `.olean` fixture).
    fn library(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("leanpool-pool-{name}-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("Init/Grind")).unwrap();
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../leanpool-screen/tests/fixtures/olean64/Init/Grind/Annotated.olean");
        std::fs::copy(fixture, dir.join("Init/Grind/Annotated.olean")).unwrap();
        dir
    }

    /// Issue 20: pools whose workers have one `LEAN_PATH` share one
    /// reading of its `.olean`s (the second `Pool::new` reads nothing),
    /// a pool with another `LEAN_PATH` reads its own; each finds the
    /// library's command.
    #[tokio::test(flavor = "current_thread")]
    async fn pools_with_one_lean_path_share_one_reading_of_its_oleans() {
        let (one, other) = (library("one"), library("other"));
        let pool = |d: &Path| {
            Pool::new(
                command(d),
                PoolConfig::default(),
                LimitSources::default(),
                Policies::default(),
            )
        };
        let (a, b, c) = (pool(&one), pool(&one), pool(&other));
        let (la, lb, lc) = (
            &a.policy().library,
            &b.policy().library,
            &c.policy().library,
        );
        assert!(la.shares_reading_with(lb), "one LEAN_PATH was read twice");
        assert!(
            !lc.shares_reading_with(la),
            "another LEAN_PATH shared a reading"
        );
        for l in [la, lc] {
            let words = l.words_for(&["Init.Grind.Annotated".into()]).unwrap();
            assert!(words.contains("grind_annotated"), "{words:?}");
        }
        drop((a, b, c));
        std::fs::remove_dir_all(one).unwrap();
        std::fs::remove_dir_all(other).unwrap();
    }
}
