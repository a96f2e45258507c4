//! What `check`, `normalize` and `opt` share: where the answer comes from
//! (a local worker started for the file, or a daemon) and the time limit.

use anyhow::Context;
use leanpool_lean::{LeanCommand, SandboxConfig, SandboxMode, Worker, WorkerConfig};
use leanpool_screen::header_key;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Limit for the request itself when `--timeout-ms` is not given (a local
/// worker's start-up is not counted against it): the daemon's default.
pub const DEFAULT_TIMEOUT: Duration =
    Duration::from_millis(leanpool_pool::DEFAULT_REQUEST_TIMEOUT_MS);

/// `--timeout-ms` and `--socket`, flattened into each command's `Args`.
#[derive(clap::Args, Debug, Clone)]
pub struct Via {
    /// Per-request limit; past it the worker is killed and the status is `timeout`.
    #[arg(long, value_name = "N")]
    pub timeout_ms: Option<u64>,
    /// Ask the daemon listening on this Unix socket instead of starting Lean.
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// OS sandbox of a local worker: required (refuse to run Lean without
    /// it), best-effort, or off. With --socket the daemon's config decides.
    #[arg(long, value_name = "MODE", default_value = "required")]
    pub sandbox: SandboxMode,
    /// The Lean project to run in: with --socket the name of one of the
    /// daemon's projects (default: its first); without, a project
    /// directory (`[NAME=]DIR`) whose toolchain and library a local worker
    /// uses.
    #[arg(long, value_name = "PROJECT")]
    pub project: Option<String>,
}

impl Via {
    /// The Lean a local worker runs: the detected backend, or `--project`'s
    /// toolchain and library resolved on it
    /// ([`leanpool_lean::project::Project::resolve`]).
    pub fn command(&self) -> anyhow::Result<LeanCommand> {
        let base = LeanCommand::detect()?;
        let Some(p) = &self.project else {
            return Ok(base);
        };
        let spec = leanpool_lean::project::ProjectSpec::parse(p)?;
        Ok(leanpool_lean::project::Project::resolve(&spec, &base)?.command)
    }

    /// The config of a local worker for `command`.
    pub fn worker_config(&self, command: LeanCommand) -> WorkerConfig {
        let mut cfg = WorkerConfig::new(command);
        cfg.sandbox = SandboxConfig {
            mode: self.sandbox,
            ..SandboxConfig::default()
        };
        cfg
    }
}

pub fn read_text(file: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))
}

/// Runs `f` on a fresh local worker for `text`'s header, then kills it.
pub async fn with_local_worker<T>(
    via: &Via,
    text: &str,
    f: impl for<'w> FnOnce(
        &'w mut Worker,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = anyhow::Result<T>> + 'w>,
    >,
) -> anyhow::Result<T> {
    let command = via.command()?;
    let mut worker = Worker::spawn(&via.worker_config(command), &header_key(text)).await?;
    let r = f(&mut worker).await;
    worker.kill().await;
    r
}
