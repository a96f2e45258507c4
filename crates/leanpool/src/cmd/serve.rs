//! `leanpool serve --socket PATH [--config FILE]`: the daemon.
//!
//! Logs go to stderr (text, or JSON with `--log-json` / `log_format =
//! "json"`; level from `RUST_LOG`, default `info`). SIGTERM and SIGINT start
//! a graceful shutdown: stop accepting, let in-flight requests finish until
//! `shutdown_deadline_ms`, kill the Lean workers, remove the socket.

use anyhow::Context;
use leanpool_lean::LeanCommand;
use leanpool_pool::Pool;
use leanpool_rpc::config::LogFormat;
use leanpool_rpc::{BackendInfo, DaemonConfig, PoolHandler, Server};
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
            let b = BackendInfo { kind: cmd.backend.as_str().to_string(), version: cmd.version.clone(), error: None };
            tracing::info!(backend = %b.kind, version = b.version.as_deref().unwrap_or("?"), "backend");
            match leanpool_lean::sandbox::Plan::new(&cmd, &cfg.sandbox) {
                Ok(plan) => tracing::info!(sandbox = %plan.summary(), "worker sandbox"),
                // Workers will not start; every Lean request answers
                // SPAWN_FAILED with this reason.
                Err(e) => tracing::error!(error = %e, "worker sandbox unavailable"),
            }
            if !cfg.guard.enabled {
                tracing::warn!("input guard disabled by config ([guard] enabled = false): Lean runs callers' code");
            }
            PoolHandler::new(Pool::new(cmd, cfg.pool_config()), &args.socket, b).with_gted_limits(cfg.gted_limits())
        }
        Err(e) => {
            tracing::warn!(error = %e, "no Lean backend; serving gted and status only");
            let b = BackendInfo { kind: "unavailable".into(), version: None, error: Some(e.to_string()) };
            PoolHandler::without_lean(e.to_string(), cfg.pool_config(), &args.socket, b).with_gted_limits(cfg.gted_limits())
        }
    };
    let server = Server::bind(cfg.server_options(&args.socket), handler).context("cannot start the daemon")?;
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
    let b = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi);
    if json {
        b.json().init();
    } else {
        b.init();
    }
}
