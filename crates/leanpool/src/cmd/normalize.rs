//! `leanpool normalize FILE.lean`: the statement as Lean elaborated it.
//!
//! Without `--socket` it starts its own Lean worker for the file's header
//! (~25 s on the WASM backend), answers, and kills it; with `--socket` a
//! running daemon's warm pool answers.

use crate::cmd::lean_args::{answer, read_text, Via};
use leanpool_protocol::method;
use leanpool_protocol::{CheckResult, CheckStatus, NormalizeResult, StatementParams};
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    /// A Lean file whose body is one `theorem`/`lemma`/`example`.
    pub file: PathBuf,
    /// Print the result as one JSON object.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub via: Via,
}

pub async fn run(args: Args) -> anyhow::Result<i32> {
    let params = read_params(&args.file, &args.via)?;
    let result = answer::<method::Normalize>(&args.via, params).await?;
    if args.json {
        println!("{}", serde_json::to_string(&result)?);
    } else {
        print!("{}", human(&args.file, &result));
    }
    Ok(exit_code(&result.check))
}

/// The request for `file` with the command's options.
pub fn read_params(file: &Path, via: &Via) -> anyhow::Result<StatementParams> {
    let mut params = StatementParams::new(read_text(file)?);
    params.options.timeout_ms = via.timeout_ms;
    Ok(params)
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
