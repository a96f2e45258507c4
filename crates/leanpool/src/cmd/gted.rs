//! `leanpool gted ...`: the GTED similarity of operator trees (no Lean).
//!
//! `score` compares two tree files (GTED's or leanpool's JSON format, told
//! apart by their keys); `eval` scores a directory laid out like the GTED
//! paper's miniF2F data against its human judgements; `pairs` elaborates
//! new statement pairs through a daemon and scores them
//! ([`pairs`]).

pub mod pairs;

use anyhow::Context;
use leanpool_gted::eval::{best_threshold, load_dir, sweep, Confusion};
use leanpool_gted::{score, Mode, OpTree, Options};
use std::path::{Path, PathBuf};

#[derive(clap::Subcommand)]
pub enum Command {
    /// Similarity of two tree files: prints one number.
    Score {
        #[arg(long, value_enum, default_value_t = ModeArg::default())]
        mode: ModeArg,
        /// Print distance, similarity, sizes and exactness as JSON instead.
        #[arg(long)]
        json: bool,
        a: PathBuf,
        b: PathBuf,
    },
    /// Score every pair of a data directory (laid out like the GTED paper's
    /// miniF2F set) and compare with the human judgements.
    Eval {
        #[arg(long, value_enum, default_value_t = ModeArg::default())]
        mode: ModeArg,
        /// Scores >= this count as "same".
        #[arg(long, default_value_t = leanpool_gted::eval::PAPER_THRESHOLD)]
        threshold: f64,
        dir: PathBuf,
    },
    /// Score reference/candidate statement pairs of a JSONL file through a
    /// running daemon (`opt` per statement, optionally `equiv` per pair),
    /// resumably, and summarize against their labels.
    ///
    /// Input lines: `{"id", "header"?, "reference", "candidate", "label"?}`.
    Pairs(pairs::Args),
}

/// Cost regime (see `leanpool_gted::Mode`).
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum ModeArg {
    /// Free renaming of bound names only as one consistent bijection.
    Alpha,
    /// The GTED paper's costs (any variable renames to any variable).
    Paper,
    /// Unit costs on labels, no free renaming.
    Plain,
}

impl Default for ModeArg {
    /// `leanpool_gted::Mode::default()`, the library's and the daemon's.
    fn default() -> ModeArg {
        match Mode::default() {
            Mode::Alpha => ModeArg::Alpha,
            Mode::Paper => ModeArg::Paper,
            Mode::Plain => ModeArg::Plain,
        }
    }
}

impl From<ModeArg> for Mode {
    fn from(m: ModeArg) -> Mode {
        match m {
            ModeArg::Alpha => Mode::Alpha,
            ModeArg::Paper => Mode::Paper,
            ModeArg::Plain => Mode::Plain,
        }
    }
}

pub async fn run(c: Command) -> anyhow::Result<i32> {
    match c {
        Command::Score { mode, json, a, b } => score_files(mode.into(), json, &a, &b),
        Command::Eval {
            mode,
            threshold,
            dir,
        } => eval_dir(mode.into(), threshold, &dir),
        Command::Pairs(args) => pairs::run(args).await,
    }
}

fn read_tree(path: &Path) -> anyhow::Result<OpTree> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    OpTree::from_json_str(&text).with_context(|| format!("reading a tree from {}", path.display()))
}

fn score_files(mode: Mode, json: bool, a: &Path, b: &Path) -> anyhow::Result<i32> {
    let s = score(&read_tree(a)?, &read_tree(b)?, mode, &Options::default());
    if json {
        let v = serde_json::json!({
            "mode": mode.name(),
            "distance": s.distance,
            "similarity": s.similarity,
            "size_a": s.size_a,
            "size_b": s.size_b,
            "exact": s.exact,
        });
        println!("{v}");
    } else {
        println!("{:?}", s.similarity);
    }
    if !s.exact {
        eprintln!("leanpool: alpha search hit its cap; the similarity is a lower bound");
    }
    Ok(0)
}

fn stats_line(c: &Confusion) -> String {
    format!(
        "TP {} TN {} FP {} FN {}  precision {:.4}  recall {:.4}  accuracy {:.4}  kappa {:.3}",
        c.tp,
        c.tn,
        c.fp,
        c.fn_,
        c.precision(),
        c.recall(),
        c.accuracy(),
        c.kappa()
    )
}

fn eval_dir(mode: Mode, threshold: f64, dir: &Path) -> anyhow::Result<i32> {
    let pairs = load_dir(dir)?;
    let opts = Options::default();
    println!("pair\tscore\tstored\thuman");
    let mut scores = Vec::with_capacity(pairs.len());
    let (mut equal, mut stored_count, mut inexact) = (0, 0, 0);
    for p in &pairs {
        let s = score(&p.label, &p.predict, mode, &opts);
        let stored = p.stored.map_or("-".to_string(), |x| format!("{x:?}"));
        println!("{}\t{:?}\t{}\t{}", p.index, s.similarity, stored, p.human);
        if let Some(x) = p.stored {
            stored_count += 1;
            equal += ((s.similarity - x).abs() <= 1e-9) as usize;
        }
        inexact += !s.exact as usize;
        scores.push(s.similarity);
    }
    let human: Vec<bool> = pairs.iter().map(|p| p.human).collect();
    println!();
    println!("mode: {}", mode.name());
    println!("pairs: {}", pairs.len());
    if stored_count > 0 {
        println!("equal to stored scores (1e-9): {equal}/{stored_count}");
    }
    if inexact > 0 {
        println!("alpha search capped (upper-bound distance) on {inexact} pairs");
    }
    println!(
        "threshold {threshold}: {}",
        stats_line(&Confusion::at(&scores, &human, threshold))
    );
    let (t, c) = best_threshold(&sweep(&scores, &human));
    println!(
        "best threshold (sweep 0.000..1.000 step 0.001, max kappa) {t:.3}: {}",
        stats_line(&c)
    );
    Ok(0)
}
