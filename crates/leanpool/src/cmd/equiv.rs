//! `leanpool equiv A.lean B.lean`: are two statements equivalent, as Lean
//! can show? (locally, or through a daemon with `--socket`). Each file
//! holds header lines (`import`, `open`, ...) and one `theorem`; the two
//! headers must be the same.

use crate::cmd::lean_args::{answer, read_text, Via};
use anyhow::bail;
use leanpool_methods::verify::split_statement_file;
use leanpool_protocol::{method, EquivParams, EquivResult, EquivStatus};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// The first statement (the reference): header lines, then `theorem NAME ... : TYPE`.
    pub a: PathBuf,
    /// The second statement (the candidate), under the same header.
    pub b: PathBuf,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub via: Via,
}

pub async fn run(args: Args) -> anyhow::Result<i32> {
    let (header, a) = split_statement_file(&read_text(&args.a)?)?;
    let (header_b, b) = split_statement_file(&read_text(&args.b)?)?;
    if header.trim() != header_b.trim() {
        bail!(
            "{} and {} have different headers; equiv reads both statements under one header: make them the same",
            args.a.display(),
            args.b.display()
        );
    }
    let mut params = EquivParams::new(header, a, b).with_timings();
    params.options.timeout_ms = args.via.timeout_ms;
    let result = answer::<method::Equiv>(&args.via, params).await?;
    if args.json {
        println!("{}", serde_json::to_string(&result)?);
    } else {
        print!("{}", human(&result));
    }
    Ok(match result.status {
        EquivStatus::Equivalent => 0,
        EquivStatus::NotEquivalent => 1,
        _ => 2,
    })
}

/// A status enum's wire name.
fn wire_name<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The verdict, the evidence, and the attempts, for people.
fn human(r: &EquivResult) -> String {
    let mut s = String::new();
    if let Some(e) = &r.evidence {
        s.push_str(&format!(
            "{}\n  := {}\n(found by `{}`)\n",
            e.statement, e.proof, e.attempt
        ));
    }
    if let Some(st) = &r.statement {
        s.push_str(&format!("{st}\n"));
    }
    for d in &r.diagnostics {
        s.push_str(&format!(
            "{}:{}: {}\n",
            d.range.start.line + 1,
            d.range.start.character + 1,
            d.message
        ));
    }
    let tried: Vec<String> = r
        .attempts
        .iter()
        .map(|a| format!("{} {}", a.attempt, wire_name(&a.status)))
        .collect();
    if !tried.is_empty() {
        s.push_str(&format!("attempts: {}\n", tried.join(", ")));
    }
    s.push_str(&format!("status: {}", wire_name(&r.status)));
    if let Some(reason) = &r.reason {
        s.push_str(&format!(" ({reason})"));
    }
    s.push('\n');
    s
}
