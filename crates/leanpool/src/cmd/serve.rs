//! `leanpool serve --socket PATH [--config FILE]`: the daemon.
//!
//! Logs go to stderr (text, or JSON with `--log-json` / `log_format =
//! "json"`; level from `RUST_LOG`, default `info`). SIGTERM and SIGINT start
//! a graceful shutdown: stop accepting, let in-flight requests finish until
//! `shutdown_deadline_ms`, kill the Lean workers, remove the socket.

use anyhow::Context;
use leanpool_daemon::config::LogFormat;
use leanpool_daemon::{BackendInfo, DaemonConfig, PoolHandler, SandboxInfo};
use leanpool_lean::LeanCommand;
use leanpool_pool::Pool;
use leanpool_rpc::Server;
use std::path::PathBuf;
use tokio::signal::unix::{signal, SignalKind};

#[derive(clap::Args)]
pub struct Args {
    /// Unix socket to listen on (a stale one is replaced; a live one is not).
    #[arg(long, value_name = "PATH")]
    pub socket: PathBuf,
    /// Daemon config, TOML or JSON (`.json`); see docs/protocol.md.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Log one JSON object per line instead of text.
    #[arg(long)]
    pub log_json: bool,
}

pub async fn run(args: Args) -> anyhow::Result<i32> {
    let cfg = match &args.config {
        Some(p) => DaemonConfig::load(p)?,
        None => DaemonConfig::default(),
    };
    init_logs(args.log_json || cfg.log_format == LogFormat::Json);
    // Without Lean the daemon still serves `gted` and `status`; the Lean
    // methods then answer SPAWN_FAILED with the reason.
    let handler = match LeanCommand::detect() {
        Ok(cmd) => {
            let described = cmd.clone();
            let sandbox_cfg = cfg.sandbox.clone();
            let b = tokio::task::spawn_blocking(move || describe(&described, &sandbox_cfg)).await?;
            let library = b
                .library
                .as_ref()
                .and_then(|l| l.mathlib_rev.clone().or(l.oleans_sha256.clone()));
            tracing::info!(
                backend = %b.kind,
                version = b.version.as_deref().unwrap_or("?"),
                library = library.as_deref().or(b.library_error.as_deref()).unwrap_or("?"),
                "backend"
            );
            match &b.sandbox {
                Some(s) if s.available => tracing::info!(sandbox = %s.summary, "worker sandbox"),
                // Workers will not start; every Lean request answers
                // SPAWN_FAILED with this reason.
                Some(s) => tracing::error!(error = %s.summary, "worker sandbox unavailable"),
                None => {}
            }
            if !cfg.guard.enabled {
                tracing::warn!("input guard disabled by config ([guard] enabled = false): Lean runs callers' code");
            }
            PoolHandler::new(Pool::new(cmd, cfg.pool_config()), &args.socket, b)
                .with_gted_limits(cfg.gted_limits())
                .with_max_leases(cfg.max_leases)
        }
        Err(e) => {
            tracing::warn!(error = %e, "no Lean backend; serving gted and status only");
            let b = BackendInfo::unavailable(e.to_string());
            PoolHandler::without_lean(e.to_string(), cfg.pool_config(), &args.socket, b)
                .with_gted_limits(cfg.gted_limits())
                .with_max_leases(cfg.max_leases)
        }
    };
    let server = Server::bind(cfg.server_options(&args.socket), handler)
        .context("cannot start the daemon")?;
    let stop = server.shutdown_handle();
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    tokio::spawn(async move {
        loop {
            let name = tokio::select! {
                _ = term.recv() => "SIGTERM",
                _ = int.recv() => "SIGINT",
            };
            tracing::info!(signal = name, "shutting down");
            stop.shutdown();
        }
    });
    server.run().await?;
    Ok(0)
}

fn init_logs(json: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let b = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi);
    if json {
        b.json().init();
    } else {
        b.init();
    }
}

/// What `status` reports about `command` (provenance, issue 11 part 5):
/// kind, recorded version, the library's identity (hashes the olean set,
/// ~1 s for the WASM library: once, at start, off the async threads) and
/// the workers' sandbox as planned for `sandbox`.
pub fn describe(command: &LeanCommand, sandbox: &leanpool_lean::SandboxConfig) -> BackendInfo {
    let (library, library_error) = match leanpool_lean::provenance::library_identity(command) {
        Ok(l) => (Some(l), None),
        Err(e) => (None, Some(e.to_string())),
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
