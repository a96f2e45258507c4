//! `leanpool check FILE.lean`: does a Lean file elaborate?
//!
//! Without `--socket` it starts its own Lean worker for the file's header
//! (slow on the WASM backend: ~25 s before the first answer), checks,
//! and kills it; with `--socket` a running daemon's warm pool answers.

use crate::cmd::lean_args::{answer, read_text, Via};
use leanpool_protocol::method;
use leanpool_protocol::{CheckParams, CheckResult, CheckStatus, Severity};
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// The Lean file to check.
    pub file: PathBuf,
    /// Print one JSON object (status, diagnostics, elapsed_ms).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub via: Via,
}

pub async fn run(args: Args) -> anyhow::Result<i32> {
    let text = read_text(&args.file)?;
    let mut params = CheckParams::new(text).with_timings();
    params.options.timeout_ms = args.via.timeout_ms;
    let started = Instant::now();
    let mut result = answer::<method::Check>(&args.via, params).await?;
    if args.via.socket.is_none() {
        // Locally the command's cost includes starting Lean; say so.
        result.elapsed_ms = Some(started.elapsed().as_millis() as u64);
    }
    if args.json {
        println!("{}", serde_json::to_string(&result)?);
    } else {
        print!("{}", human(&args.file, &result));
    }
    Ok(if result.status == CheckStatus::Ok {
        0
    } else {
        1
    })
}

/// `file:line:col: severity: message` lines (1-based, columns in UTF-16
/// units like the JSON), then a status line.
fn human(file: &Path, r: &CheckResult) -> String {
    let mut out = diagnostic_lines(file, r);
    let status = serde_json::to_value(r.status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    out.push_str(&format!("status: {status}"));
    if let Some(reason) = &r.reason {
        out.push_str(&format!(" ({reason})"));
    }
    if let Some(ms) = r.elapsed_ms {
        out.push_str(&format!(" in {ms} ms"));
    }
    out.push('\n');
    out
}

/// One `file:line:col: severity: message` line per diagnostic (1-based
/// line and column, the column in UTF-16 units like the JSON). Shared by
/// every subcommand that prints a `CheckResult` for people.
pub fn diagnostic_lines(file: &Path, r: &CheckResult) -> String {
    let mut out = String::new();
    for d in &r.diagnostics {
        let sev = match d.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Information => "info",
            Severity::Hint => "hint",
        };
        out.push_str(&format!(
            "{}:{}:{}: {sev}: {}\n",
            file.display(),
            d.range.start.line + 1,
            d.range.start.character + 1,
            d.message
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use leanpool_protocol::{Diagnostic, Position, Range};

    #[test]
    fn human_form() {
        let p = |line, character| Position { line, character };
        let r = CheckResult::from_diagnostics(vec![Diagnostic {
            severity: Severity::Error,
            range: Range {
                start: p(2, 4),
                end: p(2, 9),
            },
            message: "unknown identifier 'x'".into(),
        }]);
        assert_eq!(
            human(Path::new("a.lean"), &r),
            "a.lean:3:5: error: unknown identifier 'x'\nstatus: error\n"
        );
    }
}
