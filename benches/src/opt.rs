//! `opt` bench: leanpool's structured answers vs the paper's
//! "one hover per character", on the same warm worker and the same
//! elaborated document, over core-Lean statements.
//!
//! For each statement: (a) `leanpool_methods::opt::opt_on` (one `didChange`, then
//! goals / interactive diagnostics / info popups over `$/lean/rpc`); (b) the
//! same document elaborated again, then `textDocument/hover` at every
//! character of `theorem stmt <signature>`, tree built from the ranges.
//! Requests are LSP requests counted by the worker (the `didChange` is a
//! notification; `waitForDiagnostics` is the driver's barrier, counted).
//! Times are wall clock per statement including elaboration.
//!
//! Run: `cargo run --release -p leanpool-benches --bin opt` (needs Lean:
//! `scripts/setup`, or `LEANPOOL_BACKEND_JSON`). Prints a markdown table.

use leanpool_lean::{LeanCommand, Worker, WorkerConfig};
use leanpool_methods::terms::hover::{hover_each_char, ranges_within, tree_from_ranges};
use leanpool_methods::terms::source::StatementDoc;
use leanpool_protocol::{Position, StatementParams};
use std::time::{Duration, Instant};

const STATEMENTS: &[&str] = &[
    "theorem t (a b : Nat) (h : a < b) : ∀ c, a + c < b + c := by sorry",
    "theorem t2 (n : Nat) : n + 0 = n := by simp",
    "theorem t3 {α : Type} [Inhabited α] (xs : List α) : xs.length ≥ 0 := by omega",
    "theorem t4 (p q : Prop) (hp : p) (hq : q) : p ∧ q := ⟨hp, hq⟩",
    "theorem t5 (f : Nat → Nat) (h : ∀ x, f x = x + 1) : f 2 = 3 := by simp [h]",
    "theorem t6 : ∃ n : Nat, n * n = 16 := ⟨4, rfl⟩",
    "theorem t7 (a b c : Int) (h₀ : a < b) (h₁ : b < c) : a < c := by omega",
    "theorem t8 ⦃m n : Nat⦄ (h : m ∣ n) (hn : 0 < n) : m ≤ n := Nat.le_of_dvd hn h",
    "theorem t9 (x y : Nat) (h : x = 2 * y) (hy : y = 3) : Nat.gcd x 4 = 2 := by subst hy; subst h; decide",
    "theorem t10 (s : List Nat) (h : ∀ x ∈ s, x < 10) : ∀ y, y ∈ s → y ≤ 9 := fun y hy => Nat.le_of_lt_succ (h y hy)",
];

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    if v.is_empty() {
        return f64::NAN;
    }
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

struct Measured {
    opt_requests: u32,
    opt_ms: f64,
    opt_nodes: usize,
    hover_requests: u64,
    hover_ms: f64,
    hover_nodes: usize,
}

async fn measure(worker: &mut Worker, s: &str, timeout: Duration) -> anyhow::Result<Measured> {
    let p = StatementParams::new(s);
    eprintln!("opt: {s}");
    let start = Instant::now();
    let r = leanpool_methods::opt::opt_on(worker, &p, timeout).await?;
    let opt_time = start.elapsed();
    let tree = r
        .tree
        .as_ref()
        .ok_or_else(|| anyhow::anyhow!("{:?}", r.check))?;

    eprintln!("hover: {s}");
    let screened = leanpool_screen::screen(s, &Default::default())?;
    let doc = StatementDoc::new(&screened)?;
    let before = worker.lsp_requests();
    let start = Instant::now();
    worker.elaborate(doc.lean_text(), timeout).await?;
    let answers = if std::env::var_os("OPT_BENCH_TRACE").is_some() {
        // One hover at a time with its latency, to find slow positions.
        let mut all = Vec::new();
        for (i, c) in doc.text()[doc.decl.clone()].char_indices() {
            let at = doc.decl.start + i;
            let t = Instant::now();
            let r = hover_each_char(worker, doc.text(), at, at + c.len_utf8(), timeout).await;
            eprintln!(
                "hover {c:?} at {at}: {:.0} ms {}",
                ms(t.elapsed()),
                if r.is_err() { "ERR" } else { "" }
            );
            all.extend(r?);
        }
        all
    } else {
        hover_each_char(worker, doc.text(), doc.decl.start, doc.decl.end, timeout).await?
    };
    let idx = leanpool_screen::LineIndex::new(doc.text());
    let (lo, hi): (Position, Position) = (idx.position(doc.decl.start), idx.position(doc.decl.end));
    let htree = tree_from_ranges(doc.text(), &ranges_within(&answers, lo, hi), &answers);
    Ok(Measured {
        opt_requests: r.lean_requests.unwrap_or(0),
        opt_ms: ms(opt_time),
        opt_nodes: tree.size(),
        hover_requests: worker.lsp_requests() - before,
        hover_ms: ms(start.elapsed()),
        hover_nodes: htree.size(),
    })
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let timeout = Duration::from_secs(60);
    let command = LeanCommand::detect()?;
    let t0 = Instant::now();
    let mut worker = Worker::spawn(&WorkerConfig::new(command), "").await?;
    eprintln!("worker ready in {:.1} s", t0.elapsed().as_secs_f64());
    // V8 warms its code paths on the first requests; not measured.
    for _ in 0..2 {
        let p = StatementParams::new(STATEMENTS[0]);
        leanpool_methods::opt::opt_on(&mut worker, &p, timeout).await?;
    }
    println!("| statement | opt requests | opt ms | opt nodes | hover requests | hover ms | hover nodes |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    let (mut oreq, mut oms, mut hreq, mut hms) = (vec![], vec![], vec![], vec![]);
    let only: Option<usize> = std::env::var("OPT_BENCH_ONLY")
        .ok()
        .and_then(|v| v.parse().ok());
    for (n, s) in STATEMENTS.iter().enumerate() {
        if only.is_some_and(|o| o != n) {
            continue;
        }
        let short: String = s.chars().take(48).collect();
        let short = short.replace('|', "\\|");
        if !worker.is_alive() {
            worker = Worker::spawn(&WorkerConfig::new(LeanCommand::detect()?), "").await?;
        }
        match measure(&mut worker, s, timeout).await {
            Ok(m) => {
                println!(
                    "| `{short}` | {} | {:.0} | {} | {} | {:.0} | {} |",
                    m.opt_requests,
                    m.opt_ms,
                    m.opt_nodes,
                    m.hover_requests,
                    m.hover_ms,
                    m.hover_nodes
                );
                oreq.push(m.opt_requests as f64);
                oms.push(m.opt_ms);
                hreq.push(m.hover_requests as f64);
                hms.push(m.hover_ms);
            }
            Err(e) => println!("| `{short}` | failed: {e} | | | | | |"),
        }
    }
    println!(
        "| **median** | {:.0} | {:.0} | | {:.0} | {:.0} | |",
        median(oreq),
        median(oms),
        median(hreq),
        median(hms)
    );
    worker.kill().await;
    Ok(())
}
