//! `lexdiff` bench: the whole differential test of leanpool's lexer against
//! Lean (issue 10 part 2; the CI test in `crates/leanpool-methods/tests/
//! terms_lean.rs` runs a sample). Every generated case (see
//! `crates/leanpool-methods/tests/lexdiff/mod.rs`) is screened; the accepted
//! ones are sent, in batches, on one warm worker, as `check` and
//! `normalize`/`opt` would send them, and every payload's guard belief is
//! compared with what Lean printed.
//!
//! Run: `cargo run --release -p leanpool-benches --bin lexdiff [-- --per-batch 60]`
//! (needs Lean). Prints a markdown table; exits 1 on any hole (a payload
//! believed dead that Lean printed) or a batch whose sync payload the
//! guard believed live and Lean did not print. A sync payload believed
//! dead and not printed (guard and Lean agree that the document ends
//! inside a comment or literal) is counted, not failed. Payloads believed
//! live that Lean did not print (the safe direction) are counted, not
//! failed.

#[path = "../../crates/leanpool-methods/tests/lexdiff/mod.rs"]
mod lexdiff;

use clap::Parser;
use leanpool_lean::{LeanCommand, Worker, WorkerConfig};
use std::time::{Duration, Instant};

#[derive(Parser)]
struct Args {
    /// Cases per document.
    #[arg(long, default_value_t = 60)]
    per_batch: usize,
    /// Only every Nth case (1 = all).
    #[arg(long, default_value_t = 1)]
    step: usize,
    /// Start at this case (with `--step N`, `--start 0..N` shard the run
    /// over N workers, e.g. two Lean slots).
    #[arg(long, default_value_t = 0)]
    start: usize,
    /// Only screen and build (no Lean): print the plan's figures.
    #[arg(long)]
    dry: bool,
    /// Write every disagreement (holes and safe-direction payloads, with
    /// the case text that holds the payload) and every document whose
    /// sync payload Lean did not print (the whole document and Lean's
    /// messages) to this file, for triage.
    #[arg(long)]
    report: Option<std::path::PathBuf>,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let all = lexdiff::cases(500_000);
    let cases: Vec<lexdiff::Case> = all
        .iter()
        .skip(args.start)
        .step_by(args.step.max(1))
        .cloned()
        .collect();
    let t = Instant::now();
    let plan = lexdiff::plan(&cases, args.per_batch.max(1), 2_000_000);
    let screen_s = t.elapsed().as_secs_f64();
    if args.dry {
        print_dry(&plan, screen_s);
        return Ok(());
    }
    let lean = LeanCommand::detect()?;
    let t = Instant::now();
    let mut w = Worker::spawn(&WorkerConfig::new(lean), "").await?;
    let spawn_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut tally = Tally::default();
    for (i, b) in plan.batches.iter().enumerate() {
        if i % 100 == 0 {
            let holes = tally
                .bad
                .iter()
                .filter(|((_, believed, _), _)| !believed)
                .count();
            eprintln!(
                "[lexdiff] document {i}/{}: {} live, {} dead so far, {holes} holes, {:.0} s",
                plan.batches.len(),
                tally.live,
                tally.dead,
                t.elapsed().as_secs_f64()
            );
        }
        let diags = w.elaborate(&b.sent, Duration::from_secs(600)).await?;
        tally.record(i, b, &diags, &cases, args.report.is_some());
    }
    let lean_s = t.elapsed().as_secs_f64();
    w.kill().await;
    if let Some(path) = &args.report {
        std::fs::write(path, &tally.report)?;
    }
    let failed = tally.print(&plan, [screen_s, spawn_s, lean_s]);
    if failed {
        std::process::exit(1);
    }
    Ok(())
}

/// `--dry`: the plan's figures and a statement document, no Lean.
fn print_dry(plan: &lexdiff::Plan, screen_s: f64) {
    let live: usize = plan.batches.iter().map(|b| b.live.len()).sum();
    let all: usize = plan.batches.iter().map(|b| b.payloads.len()).sum();
    println!("{} cases, {} refused, {} documents, {live} of {all} payloads believed live, {screen_s:.1} s", plan.cases, plan.refused, plan.batches.len());
    if let Some(b) = plan.batches.iter().find(|b| b.statement) {
        println!(
            "--- a statement document:\n{}",
            &b.sent.as_str()[..b.sent.as_str().len().min(3000)]
        );
    }
}

/// What the documents sent so far showed.
#[derive(Default)]
struct Tally {
    /// Payloads believed live / dead, and printed by Lean.
    live: usize,
    dead: usize,
    printed_n: usize,
    /// Disagreements ((payload, believed live, Lean printed), caller's text).
    bad: Vec<((u32, bool, bool), String)>,
    /// Documents whose sync payload the guard believed live and Lean did
    /// not print.
    sync_missed: usize,
    /// Documents whose sync payload both readings put in a comment.
    sync_dead: usize,
    /// Documents sent as check / as normalize+opt.
    docs: [usize; 2],
    /// The `--report` text.
    report: String,
}

impl Tally {
    /// Compares document `i`'s payloads (batch `b`) with what Lean said
    /// (`diags`); `report`: write the `--report` text.
    fn record(
        &mut self,
        i: usize,
        b: &lexdiff::Batch,
        diags: &[leanpool_protocol::Diagnostic],
        cases: &[lexdiff::Case],
        report: bool,
    ) {
        let printed = lexdiff::printed(diags, &b.payloads);
        self.live += b.live.len();
        self.dead += b.payloads.len() - b.live.len();
        self.printed_n += printed.len();
        self.docs[b.statement as usize] += 1;
        if !printed.contains(&b.sync) && !b.live.contains(&b.sync) {
            // Both readings end inside a comment or literal (e.g. a glue
            // `/` before the opener `-` opens a block comment whose nested
            // openers the cases' closer lines never all close): agreement,
            // but the document's later payloads test nothing.
            self.sync_dead += 1;
            if report {
                self.report.push_str(&format!(
                    "=== sync payload {} believed dead and not printed in document {i}\n{}\n",
                    b.sync,
                    b.sent.as_str()
                ));
            }
        } else if !printed.contains(&b.sync) {
            self.sync_missed += 1;
            if report {
                self.report.push_str(&format!("=== sync payload {} missed in document {i} (statement: {})\n--- sent\n{}\n--- Lean said\n", b.sync, b.statement, b.sent.as_str()));
                for d in diags {
                    self.report.push_str(&format!(
                        "{}:{} {:?} {}\n",
                        d.range.start.line, d.range.start.character, d.severity, d.message
                    ));
                }
            }
        }
        for d in lexdiff::disagreements(b, &printed) {
            if report {
                self.report_disagreement(i, d, cases);
            }
            self.bad.push((d, b.caller.clone()));
        }
    }

    /// The `--report` entry of one disagreement in document `i`.
    fn report_disagreement(&mut self, i: usize, d: (u32, bool, bool), cases: &[lexdiff::Case]) {
        let case = cases
            .iter()
            .find(|c| c.payloads.contains(&d.0))
            .map(|c| c.text.as_str())
            .unwrap_or("?");
        let kind = if d.1 {
            "safe direction (believed live, not printed)"
        } else {
            "HOLE (believed dead, printed)"
        };
        self.report.push_str(&format!(
            "=== payload {} in document {i}: {kind}\n{case}\n",
            d.0
        ));
    }

    /// The table and the first disagreements (stderr); whether the run
    /// failed (a hole or a missed sync payload). `secs`: screen+build,
    /// worker start, Lean.
    fn print(&self, plan: &lexdiff::Plan, secs: [f64; 3]) -> bool {
        let [screen_s, spawn_s, lean_s] = secs;
        let (live, dead, printed_n) = (self.live, self.dead, self.printed_n);
        let (sync_missed, sync_dead, docs, bad) =
            (self.sync_missed, self.sync_dead, self.docs, &self.bad);
        // A payload believed dead that Lean printed is a hole; one believed
        // live that Lean did not print is the safe direction (the guard
        // screened more than Lean ran).
        let holes: Vec<_> = bad
            .iter()
            .filter(|((_, believed, _), _)| !believed)
            .collect();
        let safe = bad.len() - holes.len();
        println!("| cases | refused by the guard | documents (check / normalize+opt) | payloads believed live | believed dead | printed by Lean | holes (dead, printed) | safe direction (live, not printed) | sync payloads missed (believed live) | documents ending in a comment (both readings) | screen+build s | worker start s | Lean s |");
        println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
        println!(
            "| {} | {} | {} / {} | {live} | {dead} | {printed_n} | {} | {safe} | {sync_missed} | {sync_dead} | {screen_s:.1} | {spawn_s:.1} | {lean_s:.1} |",
            plan.cases,
            plan.refused,
            docs[0],
            docs[1],
            holes.len()
        );
        for ((n, believed, lean), caller) in holes
            .iter()
            .copied()
            .chain(bad.iter().filter(|((_, b, _), _)| *b))
            .take(5)
        {
            eprintln!("payload {n}: believed live={believed}, Lean printed={lean}\n{caller}\n----");
        }
        !holes.is_empty() || sync_missed > 0
    }
}
