//! `leanpool serve --socket PATH [--config FILE] [--project [NAME=]DIR]...`:
//! the daemon
//! (`leanpool_daemon::serve`).
//!
//! Logs go to stderr (text, or JSON with `--log-json` / `log_format =
//! "json"`; level from `RUST_LOG`, default `info`). SIGTERM and SIGINT start
//! a graceful shutdown: stop accepting, let in-flight requests finish until
//! `shutdown_deadline_ms`, kill the Lean workers, remove the socket.

use leanpool_daemon::config::LogFormat;
use leanpool_daemon::DaemonConfig;
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
    /// Serve this Lean project (a Lake package directory): `DIR`,
    /// `NAME=DIR`, or `NAME=` for the backend's own library. Repeatable;
    /// added after the config's `[[project]]` entries; requests name one
    /// with `project`, the first is the default.
    #[arg(long, value_name = "[NAME=]DIR")]
    pub project: Vec<String>,
}

pub async fn run(args: Args) -> anyhow::Result<i32> {
    let mut cfg = match &args.config {
        Some(p) => DaemonConfig::load(p)?,
        None => DaemonConfig::default(),
    };
    for p in &args.project {
        let spec = leanpool_lean::project::ProjectSpec::parse(p)?;
        cfg.projects
            .push(leanpool_daemon::projects::ProjectEntry::new(
                Some(spec.name),
                spec.root,
            ));
    }
    init_logs(args.log_json || cfg.log_format == LogFormat::Json);
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let signalled = async move {
        let name = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        };
        tracing::info!(signal = name, "shutting down");
        // Later signals change nothing (tokio's handlers stay installed
        // for the process): the shutdown under way ends within its
        // deadline.
    };
    leanpool_daemon::serve(cfg, &args.socket, signalled).await?;
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
