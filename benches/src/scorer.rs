//! `scorer` bench: what a scorer's batch costs on a daemon with the
//! DEFAULT configuration (issue 12 item 5).
//!
//! A real `leanpool serve` (config file empty: `max_workers` 2, one hot
//! spare per header, `max_uses` never, RSS-based recycling), real Lean:
//!
//! 1. *single warm worker*: once the first header's worker is up and warm
//!    and its spare has started (or been refused), `--single` one-line
//!    checks on that header, in the batches' ok/error/sorry mix, from
//!    `--concurrency` connections: the rate one warm worker gives in this
//!    run.
//! 2. *batch without time-outs*: `--statements / 2` statements over the 8
//!    headers (`HEADERS`: the same imports, different `open` /
//!    `set_option` lines), 70 % `ok`, 20 % `error`, 10 % `sorry`.
//! 3. *batch with time-outs*: as many again, plus `--timeouts` statements
//!    that run far past their `--timeout-ms` limit (their worker is killed
//!    and replaced).
//!
//! Each answer's status is checked against the kind of statement (a bench
//! that times wrong answers would be meaningless: any mismatch fails it).
//! Statements go in header blocks of `--block` (a scorer working through
//! files), the blocks of all headers interleaved round-robin. Reported:
//! wall time, checks/s and its ratio to the single-worker rate, p50/p99
//! latency (client round trip), worker starts and `cold_waits` (from the
//! daemon's `status`), max RSS over the daemon's workers (sampled every
//! 500 ms).
//!
//! Run: `cargo build --release -p leanpool && cargo run --release -p
//! leanpool-benches --bin scorer -- [--statements 2000] [--single 200]
//! [--concurrency 4] [--timeouts 4] [--timeout-ms 2000] [--block 25]
//! [--start-timeout-ms MS]` (the last one the only departure from the
//! defaults, for machines where a worker start passes 180 s).

mod support;

use anyhow::{bail, Context};
use leanpool_lean::LeanCommand;
use leanpool_protocol::method::{self, NoParams};
use leanpool_protocol::{CheckParams, CheckStatus};
use leanpool_rpc::Client;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::*;

#[derive(clap::Parser)]
struct Args {
    /// Statements over both batches (half each), time-outs not included.
    #[arg(long, default_value_t = 2000, value_parser = at_least_one)]
    statements: usize,
    /// Checks of the single-worker series.
    #[arg(long, default_value_t = 200, value_parser = at_least_one)]
    single: usize,
    /// Connections sending checks (each sends its next one as soon as its
    /// previous answer is in).
    #[arg(long, default_value_t = 4, value_parser = at_least_one)]
    concurrency: usize,
    /// Statements that hit their time limit (second batch).
    #[arg(long, default_value_t = 4)]
    timeouts: usize,
    /// The time-out statements' limit.
    #[arg(long, default_value_t = 2000)]
    timeout_ms: u64,
    /// Consecutive statements of one header.
    #[arg(long, default_value_t = 25, value_parser = at_least_one)]
    block: usize,
    /// The one departure from the default configuration this bench
    /// allows: `[pool] start_timeout_ms` (default 180 s), for a machine so
    /// loaded that a WASM worker takes longer to start. Printed with the
    /// results when set.
    #[arg(long)]
    start_timeout_ms: Option<u64>,
}

/// Eight headers with the same imports (none beyond Lean's prelude) that
/// differ in `open` and `set_option` lines.
const HEADERS: [&str; 8] = [
    "set_option maxHeartbeats 0\n",
    "set_option maxHeartbeats 400000\n",
    "open Nat\n",
    "open Nat List\n",
    "set_option maxHeartbeats 0\nopen Nat\n",
    "open Function\n",
    "open Int\n",
    "set_option maxHeartbeats 0\nopen Nat Int\n",
];

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Ok,
    Error,
    Sorry,
    Timeout,
}

impl Kind {
    fn expected(self) -> CheckStatus {
        match self {
            Kind::Ok => CheckStatus::Ok,
            Kind::Error => CheckStatus::Error,
            Kind::Sorry => CheckStatus::Sorry,
            Kind::Timeout => CheckStatus::Timeout,
        }
    }
}

struct Item {
    params: CheckParams,
    kind: Kind,
}

fn body(tag: &str, i: usize, kind: Kind) -> String {
    let k = i % 50;
    match kind {
        Kind::Ok => format!("theorem sc_{tag} (a b : Nat) (h : a < b) : a + {k} < b + {k} := by omega\n"),
        Kind::Error => format!("theorem sc_{tag} : {k} + 2 = {k} + 3 := by decide\n"),
        Kind::Sorry => format!("theorem sc_{tag} (n : Nat) : n * {k} = {k} * n := by sorry\n"),
        // `decide` over 10^4 cases: ~30 s on the WASM build.
        Kind::Timeout => format!("theorem sc_{tag} : ∀ a < 10, ∀ b < 10, ∀ c < 10, ∀ d < 10, a + b + c + d < 100 := by decide\n"),
    }
}

/// `n` statements in header blocks of `block`, blocks of the headers
/// interleaved round-robin; `timeouts` time-out statements spread evenly
/// (on headers with `maxHeartbeats 0`, so Lean's own limit does not end
/// them first).
fn batch(tag: &str, n: usize, block: usize, timeouts: usize, timeout_ms: u64) -> Vec<Item> {
    let mut out = Vec::with_capacity(n + timeouts);
    let every = if timeouts > 0 {
        n / (timeouts + 1)
    } else {
        usize::MAX
    };
    let mut placed = 0;
    for i in 0..n {
        let h = (i / block) % HEADERS.len();
        let kind = match i % 10 {
            0..=6 => Kind::Ok,
            7 | 8 => Kind::Error,
            _ => Kind::Sorry,
        };
        out.push(Item {
            params: CheckParams::new(format!(
                "{}{}",
                HEADERS[h],
                body(&format!("{tag}{i}"), i, kind)
            )),
            kind,
        });
        if placed < timeouts && i > 0 && i % every == 0 {
            let th = if placed % 2 == 0 { 0 } else { 4 };
            let text = format!(
                "{}{}",
                HEADERS[th],
                body(&format!("{tag}slow{placed}"), i, Kind::Timeout)
            );
            out.push(Item {
                params: CheckParams::new(text).with_timeout_ms(timeout_ms),
                kind: Kind::Timeout,
            });
            placed += 1;
        }
    }
    out
}

struct Run {
    wall_s: f64,
    latencies: Vec<f64>,
    mismatches: Vec<String>,
    by_status: [usize; 4],
}

/// Sends `items` from `concurrency` connections, in order (each
/// connection takes the next item as soon as its previous answer is in).
async fn run(socket: &Path, items: Arc<Vec<Item>>, concurrency: usize) -> anyhow::Result<Run> {
    let next = Arc::new(AtomicUsize::new(0));
    let t = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..concurrency {
        let (next, items, socket) = (next.clone(), items.clone(), socket.to_owned());
        tasks.spawn(async move {
            let c = Client::connect(&socket).await?;
            let mut out = vec![];
            loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(item) = items.get(i) else {
                    return Ok::<_, anyhow::Error>(out);
                };
                let t = Instant::now();
                let r = c
                    .request::<method::Check>(&item.params)
                    .await
                    .with_context(|| format!("item {i}"))?;
                out.push((ms(t.elapsed()), item.kind, r.status, i));
            }
        });
    }
    let mut res = Run {
        wall_s: 0.0,
        latencies: vec![],
        mismatches: vec![],
        by_status: [0; 4],
    };
    while let Some(r) = tasks.join_next().await {
        for (lat, kind, status, i) in r?? {
            res.latencies.push(lat);
            let slot = match status {
                CheckStatus::Ok => 0,
                CheckStatus::Error => 1,
                CheckStatus::Sorry => 2,
                _ => 3,
            };
            res.by_status[slot] += 1;
            if status != kind.expected() {
                res.mismatches.push(format!(
                    "item {i}: expected {:?}, got {status:?}",
                    kind.expected()
                ));
            }
        }
    }
    res.wall_s = t.elapsed().as_secs_f64();
    Ok(res)
}

/// (spawns, cold_waits, timeouts, spare_takeovers, evictions).
async fn counters(c: &Client) -> anyhow::Result<[u64; 5]> {
    let k = c.request::<method::Status>(&NoParams).await?.pool.counters;
    Ok([
        k.spawns,
        k.cold_waits,
        k.timeouts,
        k.spare_takeovers,
        k.evictions,
    ])
}

fn row(
    name: &str,
    r: &Run,
    n: usize,
    single: f64,
    c0: [u64; 5],
    c1: [u64; 5],
    target: Option<f64>,
) {
    let rate = n as f64 / r.wall_s;
    let ratio = rate / single;
    let d: Vec<u64> = (0..5).map(|i| c1[i] - c0[i]).collect();
    println!(
        "| {name} | {n} | {:.1} s | {rate:.2} | {ratio:.2}x{} | {} / {} | {} | {} | {} | {} | {} | {}/{}/{}/{} |",
        r.wall_s,
        target.map_or(String::new(), |t| format!(" ({} {t}x)", verdict(ratio >= t))),
        fmt_ms(percentile(&r.latencies, 50.0)),
        fmt_ms(percentile(&r.latencies, 99.0)),
        d[0],
        d[1],
        d[2],
        d[3],
        d[4],
        r.by_status[0],
        r.by_status[1],
        r.by_status[2],
        r.by_status[3],
    );
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = <Args as clap::Parser>::parse();
    let cmd = LeanCommand::detect()?;
    let version = cmd
        .version
        .clone()
        .unwrap_or_else(|| "unknown version".into());
    let date = utc_now();
    let total_t = Instant::now();
    // The default configuration: an empty file (but for the start
    // time-out when asked).
    let config = args.start_timeout_ms.map_or(String::new(), |ms| {
        format!("[pool]\nstart_timeout_ms = {ms}\n")
    });
    let (d, _dir) = start_daemon("scorer", &config)?;
    let c = Client::connect(&d.socket).await?;

    let sampler = RssSampler::start(d.socket.clone());

    // 1. Single warm worker: first header, after a warm-up.
    let first_s = first_answer(&d.socket).await?;
    wait_for_the_spare(&c).await?;
    // The same ok/error/sorry mix as the batches, all on the first header
    // (one block as long as the series).
    let single_items = batch("single", args.single, usize::MAX, 0, args.timeout_ms);
    let c0 = counters(&c).await?;
    let single = run(&d.socket, Arc::new(single_items), args.concurrency).await?;
    let c1 = counters(&c).await?;
    let single_rate = args.single as f64 / single.wall_s;
    eprintln!("scorer: single worker {single_rate:.2} checks/s");

    // 2. and 3.
    let half = args.statements / 2;
    let a_items = batch("a", half, args.block, 0, args.timeout_ms);
    let na = a_items.len();
    let a = run(&d.socket, Arc::new(a_items), args.concurrency).await?;
    let c2 = counters(&c).await?;
    eprintln!("scorer: batch A {:.1} s", a.wall_s);
    let b_items = batch(
        "b",
        args.statements - half,
        args.block,
        args.timeouts,
        args.timeout_ms,
    );
    let nb = b_items.len();
    let b = run(&d.socket, Arc::new(b_items), args.concurrency).await?;
    let c3 = counters(&c).await?;
    eprintln!("scorer: batch B {:.1} s", b.wall_s);
    sampler.task.abort();
    let st = c.request::<method::Status>(&NoParams).await?;
    drop(c);
    drop(d);

    println!(
        "Scorer's batch, default daemon config{}, {} backend ({version}), {date}; {} headers, blocks of {}, {} connections; whole run {:.1} s (first answer after {first_s:.1} s):",
        args.start_timeout_ms.map_or(String::new(), |ms| format!(" but start_timeout_ms = {ms}")),
        cmd.backend.as_str(),
        HEADERS.len(),
        args.block,
        args.concurrency,
        total_t.elapsed().as_secs_f64()
    );
    print_rows(
        &args,
        [&single, &a, &b],
        [na, nb],
        single_rate,
        [c0, c1, c2, c3],
    );
    println!();
    println!(
        "Max RSS of one worker {}, of all workers at once {}; pool at the end: {} workers, counters {:?}",
        fmt_gb(Some(sampler.max_rss.load(Ordering::Relaxed))),
        fmt_gb(Some(sampler.max_sum.load(Ordering::Relaxed))),
        st.pool.workers,
        st.pool.counters
    );
    statuses_as_expected([&single, &a, &b])
}

/// Max RSS over the daemon's workers, sampled every 500 ms from `status`.
struct RssSampler {
    /// Of one worker, and of all workers at once.
    max_rss: Arc<AtomicU64>,
    max_sum: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl RssSampler {
    fn start(socket: std::path::PathBuf) -> RssSampler {
        let max_rss = Arc::new(AtomicU64::new(0));
        let max_sum = Arc::new(AtomicU64::new(0));
        let task = {
            let (max_rss, max_sum) = (max_rss.clone(), max_sum.clone());
            tokio::spawn(async move {
                let Ok(c) = Client::connect(&socket).await else {
                    return;
                };
                loop {
                    if let Ok(st) = c.request::<method::Status>(&NoParams).await {
                        let rss: Vec<u64> = st
                            .pool
                            .keys
                            .iter()
                            .flat_map(|k| k.workers.iter().filter_map(|w| w.rss_bytes))
                            .collect();
                        max_rss
                            .fetch_max(rss.iter().copied().max().unwrap_or(0), Ordering::Relaxed);
                        max_sum.fetch_max(rss.iter().sum(), Ordering::Relaxed);
                    }
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            })
        };
        RssSampler {
            max_rss,
            max_sum,
            task,
        }
    }
}

/// The first check on the first header (the worker's start included):
/// seconds until its answer.
async fn first_answer(socket: &Path) -> anyhow::Result<f64> {
    let t = Instant::now();
    let warm = Arc::new(vec![Item {
        params: CheckParams::new(format!("{}{}", HEADERS[0], body("warm", 1, Kind::Ok))),
        kind: Kind::Ok,
    }]);
    run(socket, warm, 1).await?;
    let first_s = t.elapsed().as_secs_f64();
    eprintln!("scorer: first answer after {first_s:.1} s (worker start)");
    Ok(first_s)
}

/// The spare starts once the first worker is measured: wait until it is
/// up (or known not to come), so that its start does not take CPU from
/// the single-worker series.
async fn wait_for_the_spare(c: &Client) -> anyhow::Result<()> {
    let t = Instant::now();
    loop {
        let st = c.request::<method::Status>(&NoParams).await?;
        let k = st
            .pool
            .keys
            .first()
            .context("no key after the first answer")?;
        let spare_up = k.workers.iter().any(|w| w.spare && w.pid.is_some());
        if spare_up
            || (k.spares == 0 && k.spare_missing.is_some() && t.elapsed() > Duration::from_secs(5))
        {
            eprintln!(
                "scorer: spare {} after {:.1} s more",
                if spare_up { "up" } else { "not started" },
                t.elapsed().as_secs_f64()
            );
            if let Some(why) = &k.spare_missing {
                eprintln!("scorer: no spare: {why}");
            }
            break;
        }
        if t.elapsed() > Duration::from_secs(1200) {
            bail!("spare neither up nor refused after 20 min: {k:?}");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    Ok(())
}

/// The table's head and its three rows: the single worker, batch A (no
/// time-outs), batch B (with time-outs); `c`: the counters before, between
/// and after them.
fn print_rows(args: &Args, runs: [&Run; 3], n: [usize; 2], single_rate: f64, c: [[u64; 5]; 4]) {
    let [single, a, b] = runs;
    let [na, nb] = n;
    let [c0, c1, c2, c3] = c;
    println!();
    println!("| series | checks | wall | checks/s | vs single worker | p50 / p99 latency | worker starts | cold_waits | timeouts | spare takeovers | evictions | ok/error/sorry/timeout |");
    println!(
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    row(
        "single warm worker (one header)",
        single,
        args.single,
        single_rate,
        c0,
        c1,
        None,
    );
    row(
        "8 headers, no time-outs",
        a,
        na,
        single_rate,
        c1,
        c2,
        Some(0.9),
    );
    row(
        &format!("8 headers, {} time-outs", args.timeouts),
        b,
        nb,
        single_rate,
        c2,
        c3,
        Some(0.8),
    );
}

/// Fails if any answer's status was not its statement's kind.
fn statuses_as_expected(runs: [&Run; 3]) -> anyhow::Result<()> {
    let [single, a, b] = runs;
    let mismatches: Vec<&String> = single
        .mismatches
        .iter()
        .chain(&a.mismatches)
        .chain(&b.mismatches)
        .collect();
    if !mismatches.is_empty() {
        bail!(
            "{} answers with the wrong status, e.g. {:?}",
            mismatches.len(),
            &mismatches[..mismatches.len().min(5)]
        );
    }
    Ok(())
}
