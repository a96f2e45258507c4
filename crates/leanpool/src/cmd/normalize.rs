//! `leanpool normalize FILE.lean`: the statement as Lean elaborated it.
//!
//! Without `--socket` it starts its own Lean worker for the file's header
//! (~25 s on the WASM backend), answers, and kills it; with `--socket` a
//! running daemon's warm pool answers.

use anyhow::Context;
use leanpool_lean::{header_key, LeanCommand, Worker, WorkerConfig};
use leanpool_protocol::{CheckResult, CheckStatus, NormalizeResult, StatementParams};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Limit for the request itself when `--timeout-ms` is not given.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

#[derive(clap::Args)]
pub struct Args {
    /// A Lean file whose body is one `theorem`/`lemma`/`example`.
    pub file: PathBuf,
    /// Print the result as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Per-request limit; past it the worker is killed and the status is `timeout`.
    #[arg(long, value_name = "N")]
    pub timeout_ms: Option<u64>,
    /// Ask the daemon listening on this Unix socket instead of starting Lean.
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
}

pub fn read_params(file: &Path, timeout_ms: Option<u64>) -> anyhow::Result<StatementParams> {
    let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    Ok(StatementParams { text, timeout_ms })
}

/// Runs `f` on a fresh local worker for `text`'s header, then kills it.
pub async fn with_local_worker<T>(
    text: &str,
    f: impl for<'w> FnOnce(&'w mut Worker) -> std::pin::Pin<Box<dyn std::future::Future<Output = anyhow::Result<T>> + 'w>>,
) -> anyhow::Result<T> {
    let command = LeanCommand::detect()?;
    let mut worker = Worker::spawn(&WorkerConfig::new(command), &header_key(text)).await?;
    let r = f(&mut worker).await;
    worker.kill().await;
    r
}

pub async fn run(args: Args) -> anyhow::Result<i32> {
    let params = read_params(&args.file, args.timeout_ms)?;
    let result = match &args.socket {
        // DAEMON CALL SITE
        Some(socket) => crate::cmd::remote::normalize(socket, params).await?,
        None => {
            let p = params.clone();
            with_local_worker(&params.text, move |w| {
                Box::pin(async move { Ok(leanpool_terms::normalize_on(w, &p, DEFAULT_TIMEOUT).await?) })
            })
            .await?
        }
    };
    if args.json {
        println!("{}", serde_json::to_string(&result)?);
    } else {
        print!("{}", human(&args.file, &result));
    }
    Ok(exit_code(&result.check))
}

/// 0 when the statement elaborated (`ok`/`sorry`), 1 otherwise.
pub fn exit_code(check: &CheckResult) -> i32 {
    match check.status {
        CheckStatus::Ok | CheckStatus::Sorry => 0,
        _ => 1,
    }
}

/// `file:line:col: severity: message` lines for the diagnostics.
pub fn human_diagnostics(file: &Path, r: &CheckResult) -> String {
    let mut out = crate::cmd::check::diagnostic_lines(file, r);
    if let Some(reason) = &r.reason {
        out.push_str(&format!("{}: {reason}\n", file.display()));
    }
    out
}

fn human(file: &Path, r: &NormalizeResult) -> String {
    let mut out = human_diagnostics(file, &r.check);
    if let Some(n) = &r.normalized {
        out.push_str(&n.statement);
        out.push('\n');
    }
    out
}
