//! `leanpool lsp`: a Language Server on stdin/stdout for editors, whose
//! documents are served by warm Lean workers (crate `leanpool-lsp`).
//!
//! Runs its own in-process pool (config: the `[pool]`, `[guard]` and
//! `[sandbox]` tables, the `lease_*` caps and
//! `shutdown_deadline_ms` of the daemon's config file, docs/protocol.md), or
//! with `--socket` leases each document's worker from a running daemon
//! (its `lease` method; the daemon's config and guard apply). `--project`
//! picks the Lean project: one of the daemon's by name with `--socket`,
//! else a project directory whose toolchain and library the pool's
//! workers run (issue 25). Logs go to stderr: stdout is the LSP channel.

use leanpool_daemon::DaemonConfig;
use leanpool_lsp::{BridgeConfig, Source};
use leanpool_pool::{Pool, PrewarmEntry};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Daemon-style config file (TOML, or JSON with `.json`); its `[pool]`,
    /// `[guard]` and `[sandbox]` tables, its `lease_*` caps
    /// (each document's worker is a lease) and `shutdown_deadline_ms` (how
    /// long the pool's work may finish when the editor exits) are used.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Keep a warm spare for this header (repeatable), e.g.
    /// `--prewarm 'import Mathlib'`. Without any (here or in the config),
    /// one spare for files without imports (`--prewarm ''`).
    #[arg(long, value_name = "HEADER")]
    pub prewarm: Vec<String>,
    /// Keep no spare at all: every first document of a header waits for a
    /// fresh worker.
    #[arg(long, conflicts_with = "prewarm")]
    pub no_prewarm: bool,
    /// Lease each document's worker from the daemon listening here
    /// (`leanpool serve --socket PATH`) instead of running a pool: its
    /// warm workers, config, guard and sandbox apply. `--prewarm` and
    /// `--config` are then the daemon's business.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["config", "prewarm", "no_prewarm"])]
    pub socket: Option<PathBuf>,
    /// The Lean project the documents run in. With `--socket`: the name of
    /// one of the daemon's projects (`leanpool serve --project`/`[[project]]`;
    /// default: its first). Without: a Lake project directory `[NAME=]DIR`
    /// whose toolchain and library the workers run (as `leanpool serve
    /// --project`), instead of the backend's own library.
    #[arg(long, value_name = "PROJECT")]
    pub project: Option<String>,
}

pub async fn run(args: Args) -> anyhow::Result<i32> {
    if let Some(socket) = args.socket {
        init_logs();
        tracing::info!(socket = %socket.display(), project = ?args.project, "documents lease their workers from the daemon");
        // The daemon screens every text itself (with its own `[guard]`);
        // the bridge screens with the default policy first, so a refusal
        // shows at once without a round trip.
        let source = Source::Daemon {
            socket,
            project: args.project,
        };
        let code = leanpool_lsp::serve_stdio(source, BridgeConfig::default()).await;
        return Ok(code);
    }
    let cfg = match &args.config {
        Some(p) => DaemonConfig::load(p)?,
        None => {
            // An editor's pool: the prewarm minimum is its spare (refilled
            // behind every lease); the daemon's hot spares per key would
            // hold one more idle worker per import set.
            let mut c = DaemonConfig::default();
            c.pool.spares_per_key = 0;
            c
        }
    };
    init_logs();
    // `[pool]`, and `[guard]`, `[verdict]`, `[sandbox]` as policies: the
    // same protections as the daemon's workers.
    let (mut pool_cfg, policies) = (cfg.pool.clone(), cfg.policies());
    for h in &args.prewarm {
        pool_cfg.prewarm.push(PrewarmEntry {
            header: h.clone(),
            min: 1,
        });
    }
    if args.no_prewarm {
        pool_cfg.prewarm.clear();
    } else if pool_cfg.prewarm.is_empty() {
        pool_cfg.prewarm.push(PrewarmEntry {
            header: String::new(),
            min: 1,
        });
    }
    let guard = policies.guard.clone();
    let cmd = crate::cmd::lean_args::project_command(args.project.as_deref())?;
    if let Some(p) = &args.project {
        tracing::info!(project = %p, lean_path = ?cmd.lean_path(), "documents run in the project");
    }
    match leanpool_lean::sandbox::Plan::new(&cmd, &policies.sandbox) {
        Ok(plan) => tracing::info!(sandbox = %plan.summary(), "worker sandbox"),
        // Workers will not start; every document gets this as a diagnostic.
        Err(e) => tracing::error!(error = %e, "worker sandbox unavailable"),
    }
    if !policies.guard.enabled {
        tracing::warn!("input guard disabled by config ([guard] enabled = false): Lean runs the documents' commands");
    }
    let pool = Pool::new(cmd, pool_cfg, Default::default(), policies);
    let bridge = BridgeConfig {
        guard,
        limits: cfg.lease_limits(),
    };
    let code = leanpool_lsp::serve_stdio(Source::Pool(pool.clone()), bridge).await;
    let deadline = std::time::Duration::from_millis(cfg.shutdown_deadline_ms);
    pool.shutdown(deadline).await;
    Ok(code)
}

fn init_logs() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
}
