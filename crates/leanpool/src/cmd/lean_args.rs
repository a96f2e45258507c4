//! What `check`, `normalize` and `opt` share: where the answer comes from
//! (a local worker started for the file, or a daemon) and the time limit.
//!
//! A local worker runs with the daemon's defaults, taken from
//! `DaemonConfig::default()` (the one source of defaults; the test below
//! fails if the two drift): `[pool]`'s start-up limit, stderr log and
//! request limit, `[sandbox]`'s mode (the `--sandbox` default), the default
//! `[guard]`/`[verdict]`.

use anyhow::Context;
use leanpool_daemon::DaemonConfig;
use leanpool_lean::{LeanCommand, SandboxConfig, SandboxMode, Worker, WorkerConfig};
use leanpool_screen::header_key;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Limit for the request itself when `--timeout-ms` is not given (a local
/// worker's start-up is not counted against it): the daemon's default
/// `[pool] default_timeout_ms`.
pub fn default_timeout() -> Duration {
    Duration::from_millis(DaemonConfig::default().pool.default_timeout_ms)
}

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
    #[arg(long, value_name = "MODE", default_value_t = DaemonConfig::default().sandbox.mode)]
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
        project_command(self.project.as_deref())
    }

    /// The config of a local worker for `command`: the daemon's default
    /// `[pool]` and `[sandbox]` with `--sandbox`'s mode, and no warm-up
    /// (the worker serves one request, which pays the first elaboration's
    /// cost either way).
    pub fn worker_config(&self, command: LeanCommand) -> WorkerConfig {
        let defaults = DaemonConfig::default();
        let sandbox = SandboxConfig {
            mode: self.sandbox,
            ..defaults.sandbox
        };
        WorkerConfig {
            warmup: None,
            ..defaults.pool.worker_config(command, &sandbox)
        }
    }
}

/// The Lean a local worker runs: the detected backend, or `project`'s
/// (`[NAME=]DIR`) toolchain and library resolved on it
/// ([`leanpool_lean::project::Project::resolve`]; blocking).
pub fn project_command(project: Option<&str>) -> anyhow::Result<LeanCommand> {
    let base = LeanCommand::detect()
        .context("no Lean backend (run scripts/setup, or see `leanpool doctor`)")?;
    let Some(p) = project else {
        return Ok(base);
    };
    let spec = leanpool_lean::project::ProjectSpec::parse(p)?;
    Ok(leanpool_lean::project::Project::resolve(&spec, &base)?.command)
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        via: Via,
    }

    /// The CLI's local mode and the daemon agree on every default they
    /// share: a drift (a literal here, another in the daemon) fails this.
    #[test]
    fn local_defaults_are_the_daemons() {
        let via = Cli::parse_from(["leanpool"]).via;
        let daemon = DaemonConfig::default();
        let cmd = LeanCommand {
            program: "lean".into(),
            args: vec![],
            env: vec![],
            cwd: None,
            backend: leanpool_lean::BackendKind::Native,
            version: None,
            source: "test".into(),
        };
        let local = via.worker_config(cmd.clone());
        let pooled = daemon.pool.worker_config(cmd, &daemon.sandbox);
        assert_eq!(local.start_timeout, pooled.start_timeout);
        assert_eq!(local.stderr_log_bytes, pooled.stderr_log_bytes);
        assert_eq!(local.sandbox, pooled.sandbox);
        assert_eq!(via.sandbox, daemon.sandbox.mode);
        assert_eq!(
            default_timeout(),
            Duration::from_millis(daemon.pool.default_timeout_ms)
        );
        // The library's defaults are the daemon's too (no second set).
        assert_eq!(daemon.pool, leanpool_pool::PoolConfig::default());
        assert_eq!(daemon.policies(), leanpool_pool::Policies::default());
        let w = WorkerConfig::new(local.command.clone());
        assert_eq!(
            (w.start_timeout, w.stderr_log_bytes),
            (local.start_timeout, local.stderr_log_bytes)
        );
        // The local commands' guard and verdict: the default policies.
        let m = leanpool_methods::Policy::default();
        assert_eq!(m.guard, daemon.guard);
        assert_eq!(m.verdict, daemon.verdict);
    }
}
