//! GTED bench: time to score the 205 miniF2F pairs of the GTED paper.
//!
//! `cargo run --release -p leanpool-benches --bin gted -- /work/shared/gted-minif2f`
//!
//! Rows: paper mode with the main algorithm (optimal left/right path
//! strategy per subtree) and with plain Zhang–Shasha, and alpha mode
//! (branch and bound over binder assignments, main algorithm inside). Each
//! configuration runs one warm-up pass and then `REPS` timed passes; a
//! pair's time is its fastest pass (the machine is shared; the minimum is
//! the least disturbed by other processes), the total is the fastest pass.
//! If `python3` can `import apted`, the reference implementation's algorithm
//! (Python APTED with the paper's costs, `gted_apted.py` beside this file)
//! is timed the same way (3 passes: it is slow) and added as a row;
//! `--no-apted` leaves it out; `--only=TEXT` runs only the rows whose name
//! contains TEXT (for profiling).

use anyhow::{bail, Context};
use leanpool_gted::eval::{load_dir, Pair};
use leanpool_gted::ted::strategy_work;
use leanpool_gted::{score, Algorithm, Mode, Options};
use std::hint::black_box;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const REPS: usize = 7;
/// Python APTED takes ~9 s a pass: fewer passes.
const PY_REPS: usize = 3;

struct Row {
    name: String,
    total: Duration,
    median: Duration,
    max: Duration,
    note: String,
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

fn time_config(pairs: &[Pair], mode: Mode, algorithm: Algorithm) -> (Duration, Vec<Duration>, u64) {
    let opts = Options {
        algorithm,
        ..Options::default()
    };
    let mut evaluations = 0;
    for p in pairs {
        evaluations += black_box(score(&p.label, &p.predict, mode, &opts)).evaluations;
    }
    let mut per_pair = vec![Vec::with_capacity(REPS); pairs.len()];
    let mut totals = Vec::with_capacity(REPS);
    for _ in 0..REPS {
        let mut total = Duration::ZERO;
        for (i, p) in pairs.iter().enumerate() {
            let t = Instant::now();
            black_box(score(
                black_box(&p.label),
                black_box(&p.predict),
                mode,
                &opts,
            ));
            let d = t.elapsed();
            per_pair[i].push(d);
            total += d;
        }
        totals.push(total);
    }
    let per_pair = per_pair.iter().map(|v| *v.iter().min().unwrap()).collect();
    (*totals.iter().min().unwrap(), per_pair, evaluations)
}

fn row(
    name: &str,
    pairs: &[Pair],
    mode: Mode,
    algorithm: Algorithm,
    note: impl Fn(u64) -> String,
) -> Row {
    let (total, mut per, evaluations) = time_config(pairs, mode, algorithm);
    let max = *per.iter().max().unwrap();
    Row {
        name: name.into(),
        total,
        median: median(&mut per),
        max,
        note: note(evaluations),
    }
}

/// Python APTED with the paper's costs, if available. The script prints
/// `total_s median_s max_s equal_to_stored`.
fn apted_row(dir: &Path) -> anyhow::Result<Row> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/gted_apted.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(dir)
        .arg(PY_REPS.to_string())
        .output()
        .context("running python3")?;
    if !out.status.success() {
        bail!(
            "{}",
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("failed")
        );
    }
    let text = String::from_utf8(out.stdout)?;
    let f: Vec<f64> = text
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()?;
    let [total, med, max, equal] = f[..] else {
        bail!("unexpected output {text:?}")
    };
    let d = Duration::from_secs_f64;
    Ok(Row {
        name: "paper, Python APTED (reference impl.'s algorithm)".into(),
        total: d(total),
        median: d(med),
        max: d(max),
        note: format!("{equal}/205 equal to stored"),
    })
}

fn fmt(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us >= 10_000.0 {
        format!("{:.1} ms", us / 1000.0)
    } else {
        format!("{us:.1} µs")
    }
}

/// DP cells summed over all pairs: (Zhang–Shasha, all-right strategy,
/// L/R path strategy).
fn dp_cells(pairs: &[Pair]) -> (u64, u64, u64) {
    let (mut cells_zs, mut cells_right, mut cells_lr) = (0u64, 0u64, 0u64);
    for p in pairs {
        let (zs, right, lr) = strategy_work(&p.label, &p.predict);
        cells_zs += zs;
        cells_right += right;
        cells_lr += lr;
    }
    (cells_zs, cells_right, cells_lr)
}

/// The markdown table of `rows`, under a line on the pairs' sizes.
fn print_table(pairs: &[Pair], sizes: &[usize], rows: &[Row]) {
    println!(
        "GTED on {} miniF2F pairs (largest tree {} nodes, median {}), {REPS} timed passes",
        pairs.len(),
        sizes.iter().max().unwrap(),
        {
            let mut s = sizes.to_vec();
            s.sort_unstable();
            s[s.len() / 2]
        }
    );
    println!();
    println!("| configuration | all 205 pairs | per pair, median | per pair, max | notes |");
    println!("| --- | ---: | ---: | ---: | --- |");
    for r in rows {
        println!(
            "| {} | {} | {} | {} | {} |",
            r.name,
            fmt(r.total),
            fmt(r.median),
            fmt(r.max),
            r.note
        );
    }
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let only = args
        .iter()
        .find_map(|a| a.strip_prefix("--only="))
        .map(String::from);
    let no_apted = only.is_some() || args.iter().any(|a| a == "--no-apted");
    let dir = args
        .iter()
        .find(|a| !a.starts_with("--"))
        .cloned()
        .map(Ok)
        .unwrap_or_else(|| {
            leanpool_testkit::data::minif2f_dir().map(|d| d.display().to_string())
        })?;
    let pairs = load_dir(Path::new(&dir)).with_context(|| format!("loading {dir}"))?;
    let sizes: Vec<usize> = pairs
        .iter()
        .map(|p| p.label.len().max(p.predict.len()))
        .collect();
    let (cells_zs, cells_right, cells_lr) = dp_cells(&pairs);
    let configs: [(&str, Mode, Algorithm); 4] = [
        (
            "paper, Zhang–Shasha (baseline)",
            Mode::Paper,
            Algorithm::ZhangShasha,
        ),
        (
            "paper, L/R path strategy (main)",
            Mode::Paper,
            Algorithm::Lr,
        ),
        (
            "alpha, L/R path strategy (main)",
            Mode::Alpha,
            Algorithm::Lr,
        ),
        ("alpha, Zhang–Shasha", Mode::Alpha, Algorithm::ZhangShasha),
    ];
    let mut rows = vec![];
    for (name, mode, alg) in configs {
        if only.as_ref().is_some_and(|o| !name.contains(o.as_str())) {
            continue;
        }
        rows.push(row(name, &pairs, mode, alg, |e| match (mode, alg) {
            (Mode::Alpha, _) => format!("{e} TED evaluations"),
            (_, Algorithm::ZhangShasha) => {
                format!("{cells_zs} DP cells (all-right: {cells_right})")
            }
            (_, Algorithm::Lr) => format!("{cells_lr} DP cells"),
        }));
    }
    if !no_apted {
        match apted_row(Path::new(&dir)) {
            Ok(r) => rows.push(r),
            Err(e) => eprintln!("Python APTED row skipped: {e:#}"),
        }
    }
    print_table(&pairs, &sizes, &rows);
    Ok(())
}
