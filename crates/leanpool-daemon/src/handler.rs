//! [`PoolHandler`], the daemon's state: its projects and their pools, the
//! result cache, the lease slots, `gted`'s caps; what `status` reports,
//! the pool methods' one path through the cache, a lease's start. The
//! transport's `Handler` impl that routes requests to it is in
//! [`crate::methods`], the methods the daemon runs itself in `served.rs`.

use crate::cache::{self, CacheSlot};
use crate::gted::GtedLimits;
use crate::lease::{LeaseTunnel, Leases};
use crate::projects::{self, NoPool, ServedProject};
use leanpool_pool::{Pool, PoolConfig, PoolError, PoolStatus};
use leanpool_protocol::method::{self, Method};
use leanpool_protocol::{BackendInfoKind, ErrorCode, RpcError};
use leanpool_rpc::handler::{params, result, rpc_error, CallContext};
use leanpool_rpc::tunnel::Upgrade;
use serde_json::value::RawValue;
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use leanpool_protocol::{
    BackendInfo, DaemonStatus, LeaseStatus, ProjectStatus, SandboxInfo, StatusResult, VerdictInfo,
};

/// `status`' report of the verdict policy `policy` on a backend (an
/// unavailable backend reports the configured value).
pub fn verdict_info(
    policy: &leanpool_pool::VerdictPolicy,
    backend: BackendInfoKind,
) -> VerdictInfo {
    let unlisted = match backend.backend() {
        Some(b) => policy.unlisted_axioms.resolve(b),
        None => policy.unlisted_axioms,
    };
    VerdictInfo {
        allowed_axioms: policy.allowed_axioms.clone(),
        unlisted_axioms: unlisted.as_str().to_string(),
    }
}

/// Serves the daemon's methods for one or more projects
/// ([`crate::projects`]). Without a Lean backend it still serves `gted`
/// and `status` (GTED needs no Lean) and answers the Lean methods
/// `SPAWN_FAILED` with the reason.
pub struct PoolHandler {
    /// Every project served, the default first (never empty).
    projects: Vec<ServedProject>,
    socket: String,
    started: Instant,
    gted_limits: GtedLimits,
    leases: Arc<Leases>,
    cache: CacheSlot,
    /// This daemon run's nonce (cache partitions of connections).
    instance: u64,
    lease_limits: leanpool_lean::leased::LeaseLimits,
}

pub use crate::lease::DEFAULT_MAX_LEASES;

impl PoolHandler {
    /// A handler serving `pool` on `socket` (reported by `status`) as
    /// the one project [`leanpool_lean::project::DEFAULT_PROJECT`].
    pub fn new(pool: Pool, socket: &std::path::Path, backend: BackendInfo) -> Self {
        Self::with_projects(
            vec![ServedProject {
                name: leanpool_lean::project::DEFAULT_PROJECT.into(),
                root: None,
                pool: Ok(pool),
                backend,
                identity: None,
            }],
            socket,
        )
    }

    /// A handler serving `projects` (the first is the default; must not be
    /// empty) on `socket`.
    pub fn with_projects(projects: Vec<ServedProject>, socket: &std::path::Path) -> Self {
        assert!(!projects.is_empty(), "a daemon serves at least one project");
        PoolHandler {
            projects,
            socket: socket.display().to_string(),
            started: Instant::now(),
            gted_limits: GtedLimits::default(),
            leases: Leases::new(DEFAULT_MAX_LEASES),
            cache: CacheSlot::Absent,
            instance: instance_nonce(),
            lease_limits: Default::default(),
        }
    }

    /// A handler without Lean: `why` is what the Lean methods answer;
    /// `status` reports `config`'s `[pool]` and `[verdict]`.
    pub fn without_lean(
        why: String,
        config: &crate::DaemonConfig,
        socket: &std::path::Path,
        backend: BackendInfo,
    ) -> Self {
        Self::with_projects(
            vec![ServedProject {
                name: leanpool_lean::project::DEFAULT_PROJECT.into(),
                root: None,
                pool: Err(NoPool {
                    why,
                    pool: config.pool.clone(),
                    verdict: config.verdict.clone(),
                }),
                backend,
                identity: None,
            }],
            socket,
        )
    }

    /// Caps on `gted` trees (default [`GtedLimits::default`]).
    pub fn with_gted_limits(mut self, limits: GtedLimits) -> Self {
        self.gted_limits = limits;
        self
    }

    /// The daemon's result cache (or why it has none).
    pub fn cache(&self) -> &CacheSlot {
        &self.cache
    }

    /// The result cache (default [`CacheSlot::Absent`]: none).
    pub fn with_cache(mut self, cache: CacheSlot) -> Self {
        self.cache = cache;
        self
    }

    /// The caps on each lease (time per request, idle time, CPU budget:
    /// [`leanpool_lean::leased::LeaseLimits`], defaults documented in
    /// docs/protocol.md).
    pub fn with_lease_limits(mut self, limits: leanpool_lean::leased::LeaseLimits) -> Self {
        self.lease_limits = limits;
        self
    }

    /// Connections that may hold a leased worker at once (`max_leases`;
    /// 0 turns `lease` off).
    pub fn with_max_leases(mut self, max: usize) -> Self {
        self.leases = Leases::new(max);
        self
    }

    /// Caps on `gted` trees.
    pub fn gted_limits(&self) -> GtedLimits {
        self.gted_limits
    }

    /// `status`' answer: the daemon's state and every project's (the
    /// default project's backend and pool also at the top level).
    pub fn status(&self) -> Result<StatusResult, RpcError> {
        let projects = self
            .projects
            .iter()
            .map(|p| {
                Ok(ProjectStatus {
                    name: p.name.clone(),
                    root: p.root.clone(),
                    backend: p.backend.clone(),
                    pool: match &p.pool {
                        Ok(pool) => pool.status(),
                        Err(no) => idle_status(&no.pool)?,
                    },
                })
            })
            .collect::<Result<Vec<_>, RpcError>>()?;
        let first = &self.projects[0];
        Ok(StatusResult {
            daemon: DaemonStatus {
                version: env!("CARGO_PKG_VERSION").to_string(),
                pid: std::process::id(),
                uptime_ms: self.started.elapsed().as_millis() as u64,
                socket: self.socket.clone(),
                backend: first.backend.clone(),
                verdict: Some(verdict_info(
                    match &first.pool {
                        Ok(p) => p.verdict_policy(),
                        Err(no) => &no.verdict,
                    },
                    first.backend.kind,
                )),
                leases: Some(self.leases.status()),
            },
            pool: projects[0].pool.clone(),
            cache: self.cache.status(),
            projects,
            workers: self
                .projects
                .iter()
                .find_map(|p| p.pool.as_ref().ok()?.worker_total()),
        })
    }

    /// Runs pool method `M` for the caller in the project its params name
    /// (`project`, taken out before decoding), through the result cache
    /// (the one place every pool method passes: `methods::call_pool`).
    pub(crate) async fn pool_call<M>(
        &self,
        mut p: Value,
        ctx: &CallContext,
    ) -> Result<Box<RawValue>, RpcError>
    where
        M: leanpool_pool::PoolMethod,
        M::Result: leanpool_cache::Answer,
    {
        let project = self.project(&mut p)?;
        let partition = cache::partition(project.isolate_by(), ctx, self.instance);
        let identity = project.identity.as_ref();
        cache::serve::<M, _, _>(&self.cache, partition, identity, p, |p| async move {
            project
                .pool_for(ctx)?
                .call::<M>(p)
                .await
                .map_err(pool_error)
        })
        .await
    }

    /// The project `params` names (its `project` member, taken out), or
    /// the default one; `UNKNOWN_PROJECT` for a name not served.
    pub(crate) fn project(&self, params: &mut Value) -> Result<&ServedProject, RpcError> {
        let name = projects::take_project(params)?;
        projects::find(&self.projects, name.as_deref())
    }
}

/// The status of a pool that has no workers and never will. Built through
/// serde rather than a struct literal so that it keeps compiling while
/// `PoolStatus` grows fields (names it lacks are ignored).
fn idle_status(cfg: &PoolConfig) -> Result<PoolStatus, RpcError> {
    use leanpool_pool::sizing;
    // `[pool]` as read: its limits are the configured ones.
    let sources = leanpool_pool::LimitSources::default();
    let limits = sizing::size(cfg, sources, sizing::Machine::probe(), None);
    let v = serde_json::json!({
        "keys": [], "workers": 0, "max_workers": limits.max_workers.value, "limits": limits, "max_uses": cfg.max_uses, "spares_per_key": cfg.spares_per_key,
        "latency": [], "counters": leanpool_pool::Counters::default(), "shutting_down": false,
    });
    serde_json::from_value(v)
        .map_err(|e| rpc_error(ErrorCode::InternalError, format!("idle pool status: {e}")))
}

/// A pool's refusal or failure as the RPC error the caller gets.
pub(crate) fn pool_error(e: PoolError) -> RpcError {
    RpcError {
        code: e.code(),
        message: e.to_string(),
        data: e.data(),
    }
}

impl PoolHandler {
    /// Starts a `lease` (the transport's upgrade): a worker of the params'
    /// import header from the project they name, as a tunnel for `ctx`'s
    /// connection; `OVERLOADED` at `max_leases`.
    pub(crate) async fn start_lease(
        &self,
        method: &str,
        mut p: Value,
        ctx: &CallContext,
    ) -> Result<Upgrade, RpcError> {
        let project = self.project(&mut p)?;
        let p: <method::Lease as Method>::Params = params(method, p)?;
        let pool = project.pool_for(ctx)?;
        let max = self.leases.status().max;
        let slot = self.leases.reserve().ok_or_else(|| {
            rpc_error(ErrorCode::Overloaded, format!("the daemon holds its maximum of {max} leased workers (max_leases); retry later"))
        })?;
        let leased = pool.lease(&p.header).await.map_err(pool_error)?;
        let tunnel = LeaseTunnel {
            worker: leased.worker,
            rss_cap: leased.rss_cap,
            permit: leased.permit,
            imports: leanpool_screen::header_key(&p.header),
            limits: self.lease_limits.clone(),
            guard: pool.policy().guard.clone(),
            native_decide: pool.policy().screening().native_decide,
            library: pool.policy().library.clone(),
            leases: self.leases.clone(),
            slot,
            conn: ctx.conn,
        };
        let answer = result(&tunnel.result())?;
        Ok(Upgrade {
            answer,
            tunnel: Box::new(tunnel),
        })
    }

    /// Shuts every project's pool down at once, each within `deadline`.
    pub(crate) async fn shutdown_pools(&self, deadline: Duration) {
        // Every project's pool at once, each within the same deadline.
        let pools: Vec<Pool> = self
            .projects
            .iter()
            .filter_map(|p| p.pool.as_ref().ok().cloned())
            .collect();
        let tasks: Vec<_> = pools
            .into_iter()
            .map(|p| tokio::spawn(async move { p.shutdown(deadline).await }))
            .collect();
        for t in tasks {
            let _ = t.await;
        }
    }
}

/// A number that differs between daemon runs (time and pid).
fn instance_nonce() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    t ^ ((std::process::id() as u64) << 32)
}
