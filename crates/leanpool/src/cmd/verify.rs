//! `leanpool verify STATEMENT.lean PROOF.lean [--context HELPERS.lean]`: a
//! proof judged against a fixed statement (locally, or through a daemon
//! with `--socket`).

use crate::cmd::lean_args::{answer, read_text, Via};
use leanpool_protocol::{method, Severity, VerifyParams, VerifyResult, VerifyStatus};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// A file holding the statement (`theorem NAME ... : TYPE`, with or
    /// without `:= sorry`), after any header lines (`import`, `open`, ...).
    pub statement: PathBuf,
    /// A file holding the proof: a term or a tactic block (`by ...`).
    pub proof: PathBuf,
    /// A file of helper declarations (`lemma`s, `def`s) placed between
    /// the header and the theorem, judged like the theorem.
    #[arg(long)]
    pub context: Option<PathBuf>,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub via: Via,
}

pub async fn run(args: Args) -> anyhow::Result<i32> {
    let text = read_text(&args.statement)?;
    let (header, statement) = leanpool_methods::verify::split_statement_file(&text)?;
    let context = match &args.context {
        Some(path) => read_text(path)?.trim_end().to_string(),
        None => String::new(),
    };
    let mut params = VerifyParams::new(statement, read_text(&args.proof)?.trim_end())
        .with_header(header)
        .with_context(context)
        .with_timings();
    params.options.timeout_ms = args.via.timeout_ms;
    let result = answer::<method::Verify>(&args.via, params).await?;
    if args.json {
        println!("{}", serde_json::to_string(&result)?);
    } else {
        print_human(&args, &result)?;
    }
    Ok(if result.status == VerifyStatus::Proved {
        0
    } else {
        1
    })
}

/// The diagnostics as `FILE:LINE:COL: severity: message`, each in the file
/// it is about, then the status line.
fn print_human(args: &Args, result: &VerifyResult) -> anyhow::Result<()> {
    let context_file = args.context.clone().unwrap_or_default();
    for (file, ds) in [
        (&args.proof, &result.diagnostics),
        (&args.statement, &result.statement_diagnostics),
        (&context_file, &result.context_diagnostics),
    ] {
        for d in ds {
            let sev = match d.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
                Severity::Information => "info",
                Severity::Hint => "hint",
            };
            println!(
                "{}:{}:{}: {sev}: {}",
                file.display(),
                d.range.start.line + 1,
                d.range.start.character + 1,
                d.message
            );
        }
    }
    let status = serde_json::to_value(result.status)?;
    print!("status: {}", status.as_str().unwrap_or_default());
    if let Some(reason) = &result.reason {
        print!(" ({reason})");
    }
    println!();
    Ok(())
}
