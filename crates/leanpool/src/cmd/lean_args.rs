//! What the one-shot commands (`check`, `verify`, `equiv`, `normalize`,
//! `opt`) share: where the answer comes from (a daemon, or a local worker
//! started for the request: [`answer`]) and the time limit.
//!
//! A local worker runs with the daemon's defaults, taken from
//! `DaemonConfig::default()` (the one source of defaults; the test below
//! fails if the two drift): `[pool]`'s start-up limit, stderr log and
//! request limit, `[sandbox]`'s mode (the `--sandbox` default), the default
//! `[guard]`/`[verdict]`.

use anyhow::Context;
use leanpool_daemon::DaemonConfig;
use leanpool_lean::{LeanCommand, SandboxConfig, SandboxMode, Worker, WorkerConfig};
use leanpool_methods::method::open;
use leanpool_methods::{Policy, PoolMethod};
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

/// `M`'s answer for `params`: a running daemon's with `--socket`, else a
/// local worker's, taking the pool's own steps (`M::prepare`, the opening
/// screen, `M::run`) on a worker started for the request's header and
/// killed after. A request refused before Lean starts none.
pub async fn answer<M: PoolMethod>(via: &Via, params: M::Params) -> anyhow::Result<M::Result> {
    if let Some(socket) = &via.socket {
        return crate::cmd::remote::request::<M>(socket, params, via.project.as_deref()).await;
    }
    let input = match M::prepare(params) {
        Ok(input) => input,
        Err(answer) => return Ok(answer),
    };
    let policy = Policy::default();
    let opened = match open::<M>(input, policy.screening()) {
        Ok(opened) => opened,
        Err(answer) => return Ok(answer),
    };
    let config = via.worker_config(via.command()?);
    let mut worker = Worker::spawn(&config, opened.header()).await?;
    let r = M::run(
        &mut worker,
        &opened.input,
        &opened.screened,
        default_timeout(),
        &policy,
    )
    .await;
    worker.kill().await;
    Ok(r?)
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
