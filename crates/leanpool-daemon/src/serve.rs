//! The daemon as a library: [`serve`] (as mini-redis's `server::run`)
//! builds the pool and the handler from a [`DaemonConfig`], listens on a
//! socket and serves until `shutdown` completes (or a client's
//! `shutdown`), then drains, kills the Lean workers and removes the
//! socket. `leanpool serve` parses its arguments and calls it; the tests
//! and benches run it through `leanpool_testkit::daemon`.

use crate::cache::CacheSlot;
use crate::projects::ServedProject;
use crate::{BackendInfo, DaemonConfig, PoolHandler, SandboxInfo};
use leanpool_cache::Identity;
use leanpool_lean::project::{Project, ProjectError, ProjectSpec, DEFAULT_PROJECT};
use leanpool_lean::LeanCommand;
use leanpool_pool::Pool;
use leanpool_rpc::{BindError, Server};
use std::future::Future;
use std::path::Path;

/// Why the daemon could not serve.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The socket could not be created (a live daemon on it, a bad path).
    #[error("cannot start the daemon: {0}")]
    Bind(#[from] BindError),
    /// The listener failed while serving.
    #[error("the daemon's listener failed: {0}")]
    Io(#[from] std::io::Error),
    /// A set-up task failed (a leanpool bug), or the projects have no
    /// Lean.
    #[error("daemon set-up failed: {0}")]
    Setup(String),
    /// A configured project cannot be served (not built, toolchain
    /// missing, ...: the message says what to run).
    #[error("cannot serve {0}")]
    Project(#[from] ProjectError),
}

/// Which Lean the daemon's workers run.
#[derive(Debug, Clone)]
pub enum Lean {
    /// `LeanCommand::detect()`: the backend `scripts/setup` installed, or
    /// elan's.
    Detect,
    /// This command (e.g. the test kit's scripted fake Lean).
    Command(LeanCommand),
}

/// Serves the daemon's methods on `socket` with `config` and the detected
/// Lean until `shutdown` completes (see [`serve_with`]).
pub async fn serve(
    config: DaemonConfig,
    socket: &Path,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    serve_with(Lean::Detect, config, socket, shutdown).await
}

/// Serves the daemon's methods on `socket` with `config` and `lean` until
/// `shutdown` completes or a client calls `shutdown`: then new requests
/// are answered `SHUTTING_DOWN`, in-flight ones run until
/// `shutdown_deadline_ms`, the Lean workers are killed and the socket
/// removed. Without Lean the daemon still serves `gted` and `status`; the
/// Lean methods answer `SPAWN_FAILED` with the reason.
pub async fn serve_with(
    lean: Lean,
    config: DaemonConfig,
    socket: &Path,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let handler = handler(lean, &config, socket).await?;
    let server = Server::bind(config.server_options(socket), handler)?;
    let stop = server.shutdown_handle();
    let watcher = tokio::spawn(async move {
        shutdown.await;
        stop.shutdown();
    });
    let served = server.run().await;
    watcher.abort();
    Ok(served?)
}

/// The daemon's handler: a pool per project on `lean`, or none with the
/// reason (without projects configured; a configured project that cannot
/// be served stops the start with the error).
async fn handler(lean: Lean, cfg: &DaemonConfig, socket: &Path) -> Result<PoolHandler, ServeError> {
    let specs = cfg
        .projects
        .iter()
        .map(|e| e.spec())
        .collect::<Result<Vec<_>, _>>()?;
    leanpool_lean::project::check_unique(&specs)?;
    let command = match lean {
        Lean::Detect => LeanCommand::detect().map_err(|e| e.to_string()),
        Lean::Command(c) => Ok(c),
    };
    let handler = match command {
        Ok(cmd) => {
            let n = specs.len();
            let (projects, cache) = resolve_projects(specs, cmd, cfg).await?;
            PoolHandler::with_projects(serve_projects(projects, n, cfg), socket).with_cache(cache)
        }
        Err(e) if specs.is_empty() => {
            tracing::warn!(error = %e, "no Lean backend; serving gted and status only");
            let b = BackendInfo::unavailable(e.clone());
            PoolHandler::without_lean(e, cfg, socket, b)
                .with_cache(crate::cache::CacheSlot::Off("no Lean backend".into()))
        }
        Err(e) => {
            return Err(ServeError::Setup(format!(
                "no Lean backend for the projects: {e}"
            )))
        }
    };
    if !cfg.guard.enabled {
        tracing::warn!(
            "input guard disabled by config ([guard] enabled = false): Lean runs callers' code"
        );
    }
    Ok(handler
        .with_gted_limits(cfg.gted_limits())
        .with_max_leases(cfg.max_leases)
        .with_lease_limits(cfg.lease_limits()))
}

/// A resolved project, its backend as `status` reports it, and its cache
/// identity.
type Resolved = ((Project, BackendInfo), Option<Identity>);

/// Resolves the projects `specs` on `cmd` and opens the result cache for
/// them (on a blocking thread: both read files).
async fn resolve_projects(
    specs: Vec<ProjectSpec>,
    cmd: LeanCommand,
    cfg: &DaemonConfig,
) -> Result<(Vec<Resolved>, CacheSlot), ServeError> {
    let (sandbox_cfg, policies) = (cfg.sandbox.clone(), cfg.answer_policies());
    let cache_cfg = cfg.cache.clone();
    tokio::task::spawn_blocking(move || {
        let projects = resolve_all(&specs, cmd)?;
        let described: Vec<BackendInfo> = projects
            .iter()
            .map(|p| describe_project(p, &sandbox_cfg))
            .collect();
        let (cache, ids) = crate::cache::open_for(&cache_cfg, &described, &policies);
        Ok::<_, ServeError>((
            projects
                .into_iter()
                .zip(described)
                .zip(ids)
                .collect::<Vec<_>>(),
            cache,
        ))
    })
    .await
    .map_err(|e| ServeError::Setup(format!("resolving the projects: {e}")))?
}

/// One pool per resolved project, each sized by its share of `[pool]`
/// (`n`: the projects configured).
fn serve_projects(projects: Vec<Resolved>, n: usize, cfg: &DaemonConfig) -> Vec<ServedProject> {
    let mut limits: Vec<_> = cfg.projects.iter().map(|e| e.limits()).collect();
    limits.resize(projects.len().max(n), Default::default());
    // One machine-wide total over every project's workers (issue 25).
    let budget = crate::projects::worker_budget(&cfg.pool, projects.len());
    projects
        .into_iter()
        .enumerate()
        .map(|(i, ((p, b), identity))| {
            log_backend(&p.name, &b);
            let (pool_cfg, sources) = crate::projects::pool_config_for(&cfg.pool, &limits, i);
            ServedProject {
                root: p.root.as_ref().map(|r| r.display().to_string()),
                pool: Ok(match &budget {
                    Some(b) => {
                        Pool::with_budget(p.command, pool_cfg, sources, cfg.policies(), b.clone())
                    }
                    None => Pool::new(p.command, pool_cfg, sources, cfg.policies()),
                }),
                name: p.name,
                backend: b,
                identity,
            }
        })
        .collect()
}

/// Resolves every project on the backend `base` (none configured: the
/// backend's own library as project `default`). Blocking.
fn resolve_all(specs: &[ProjectSpec], base: LeanCommand) -> Result<Vec<Project>, ServeError> {
    if specs.is_empty() {
        return Ok(vec![Project::from_backend(DEFAULT_PROJECT, base)]);
    }
    Ok(specs
        .iter()
        .map(|s| Project::resolve(s, &base))
        .collect::<Result<Vec<_>, _>>()?)
}

fn log_backend(project: &str, b: &BackendInfo) {
    let library = b
        .library
        .as_ref()
        .and_then(|l| l.mathlib_rev.clone().or(l.oleans_sha256.clone()));
    tracing::info!(
        backend = %b.kind,
        version = b.version.as_deref().unwrap_or("?"),
        library = library.as_deref().or(b.library_error.as_deref()).unwrap_or("?"),
        project,
        "backend"
    );
    match &b.sandbox {
        Some(s) if s.available => tracing::info!(sandbox = %s.summary, "worker sandbox"),
        // Workers will not start; every Lean request answers
        // SPAWN_FAILED with this reason.
        Some(s) => tracing::error!(error = %s.summary, "worker sandbox unavailable"),
        None => {}
    }
}

/// What `status` reports about `command` (provenance, issue 11 part 5):
/// kind, recorded version, the library's identity (hashes the olean set,
/// ~1 s for the WASM library: once, at start, off the async threads) and
/// the workers' sandbox as planned for `sandbox`.
pub fn describe(command: &LeanCommand, sandbox: &leanpool_lean::SandboxConfig) -> BackendInfo {
    describe_project(
        &Project::from_backend(DEFAULT_PROJECT, command.clone()),
        sandbox,
    )
}

/// What `status` reports about a resolved project: its command's kind
/// and version, its library identity and its workers' sandbox.
pub fn describe_project(project: &Project, sandbox: &leanpool_lean::SandboxConfig) -> BackendInfo {
    let command = &project.command;
    let (library, library_error) = match &project.library {
        Ok(l) => (Some(l.clone()), None),
        Err(e) => (None, Some(e.clone())),
    };
    let sandbox = match leanpool_lean::sandbox::Plan::new(command, sandbox) {
        Ok(plan) => SandboxInfo {
            mode: sandbox.mode.as_str().into(),
            summary: plan.summary(),
            available: true,
        },
        Err(e) => SandboxInfo {
            mode: sandbox.mode.as_str().into(),
            summary: e.to_string(),
            available: false,
        },
    };
    BackendInfo {
        kind: command.backend.into(),
        version: command.version.clone(),
        error: None,
        library,
        library_error,
        sandbox: Some(sandbox),
    }
}
