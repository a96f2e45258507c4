//! `equiv` bench: GTED alone, `equiv` alone and both on the labelled
//! core-Lean pairs of `benches/data/equiv_pairs.jsonl` (issue 24 part 4),
//! and the throughput of `leanpool gted pairs` on a warm daemon.
//!
//! A real `leanpool serve` with one worker (no spare), real Lean. One pair
//! is scored first so that the worker is up and warm; then
//! `leanpool gted pairs` runs over the whole file twice, each into a fresh
//! OUT: without `--equiv` (GTED only: two `opt` per pair) and with it. The
//! table of metrics is the summary `gted pairs --equiv` prints.
//!
//! Run: `cargo build --release -p leanpool && cargo run --release -p
//! leanpool-benches --bin equiv -- [--pairs benches/data/equiv_pairs.jsonl]
//! [--concurrency 4] [--mode alpha] [--keep DIR]`.

mod support;

use anyhow::{bail, Context};
use leanpool_testkit::daemon::{binary, Daemon, Lean};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;
use support::utc_now;

#[derive(clap::Parser)]
struct Args {
    /// The labelled pairs.
    #[arg(long, default_value = "benches/data/equiv_pairs.jsonl")]
    pairs: PathBuf,
    /// `gted pairs --concurrency`.
    #[arg(long, default_value_t = 4)]
    concurrency: usize,
    /// `gted pairs --mode`.
    #[arg(long, default_value = "alpha")]
    mode: String,
    /// Keep the OUT files (`gted.out.jsonl`, `both.out.jsonl`) here
    /// (default: a temporary directory, removed at the end).
    #[arg(long)]
    keep: Option<PathBuf>,
}

const CONFIG: &str = "[pool]\nmax_workers = 1\nmax_workers_per_key = 1\nspares_per_key = 0\nmax_queue_per_key = 256\nstart_timeout_ms = 600000\ndefault_timeout_ms = 300000\n";

/// Runs `leanpool gted pairs`; its wall time and stdout (the summary).
fn run_pairs(
    a: &Args,
    socket: &Path,
    input: &Path,
    out: &Path,
    equiv: bool,
) -> anyhow::Result<(f64, String)> {
    let mut cmd = Command::new(binary());
    cmd.args(["gted", "pairs"])
        .arg(input)
        .arg(out)
        .arg("--socket")
        .arg(socket)
        .args([
            "--concurrency",
            &a.concurrency.to_string(),
            "--mode",
            &a.mode,
        ]);
    if equiv {
        cmd.arg("--equiv");
    }
    let t = Instant::now();
    let o = cmd.output().context("running leanpool gted pairs")?;
    let secs = t.elapsed().as_secs_f64();
    if !o.status.success() {
        bail!("gted pairs failed: {}", String::from_utf8_lossy(&o.stderr));
    }
    Ok((secs, String::from_utf8_lossy(&o.stdout).into_owned()))
}

fn main() -> anyhow::Result<()> {
    let a = <Args as clap::Parser>::parse();
    let text = std::fs::read_to_string(&a.pairs)
        .with_context(|| format!("reading {}", a.pairs.display()))?;
    let n = text.lines().filter(|l| !l.trim().is_empty()).count();
    let dir = match &a.keep {
        Some(d) => {
            std::fs::create_dir_all(d)?;
            d.clone()
        }
        None => tempfile_dir()?,
    };
    let d = Daemon::try_start(&dir, CONFIG, Lean::Real).map_err(anyhow::Error::msg)?;
    // Warm-up: the worker's start is not part of any figure.
    let first = dir.join("first.jsonl");
    std::fs::write(
        &first,
        format!("{}\n", text.lines().next().unwrap_or_default()),
    )?;
    let t = Instant::now();
    run_pairs(&a, &d.socket, &first, &dir.join("first.out"), true)?;
    let warm = t.elapsed().as_secs_f64();
    let (gted_s, _) = run_pairs(&a, &d.socket, &a.pairs, &dir.join("gted.out"), false)?;
    let (both_s, summary) = run_pairs(&a, &d.socket, &a.pairs, &dir.join("both.out"), true)?;
    drop(d);
    println!(
        "equiv bench, {} pairs of {}, {}:",
        n,
        a.pairs.display(),
        utc_now()
    );
    println!();
    println!("| run | wall | pairs/s |");
    println!("| --- | ---: | ---: |");
    println!("| first pair (worker start + warm-up, with equiv) | {warm:.1} s | |");
    println!(
        "| `gted pairs` (GTED: 2 opt per pair) | {gted_s:.1} s | {:.2} |",
        n as f64 / gted_s
    );
    println!(
        "| `gted pairs --equiv` (+ equiv per pair) | {both_s:.1} s | {:.2} |",
        n as f64 / both_s
    );
    println!();
    println!("{summary}");
    if a.keep.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(())
}

/// A fresh directory for the daemon's socket and the OUT files.
fn tempfile_dir() -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("leanpool-bench-equiv-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
