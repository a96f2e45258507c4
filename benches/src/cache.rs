//! `cache` bench: the result cache on a scorer's batch (issue 23 part 6).
//!
//! A real `leanpool serve` with the DEFAULT configuration (config file
//! empty but for `--start-timeout-ms`; the result cache on, its store in a
//! fresh directory), real Lean. One batch of `--statements` checks (70 %
//! `ok`, 20 % `error`, 10 % `sorry`), `--dup-percent` of them exact
//! duplicates of others (deterministic pseudo-random choice and order),
//! sent from `--concurrency` connections, in four series:
//!
//! 0. *warm-up*, not timed: one uncached check per connection, then a
//!    wait until no worker is starting, so no series pays a worker start;
//! 1. *no cache*: every request with `"cache": false` (what the batch costs
//!    without the cache);
//! 2. *first run*: the same batch with the cache on and empty: each
//!    distinct statement reaches Lean once (duplicates are hits, or join
//!    the identical request in flight);
//! 3. *second run*: the same batch again: every answer from the store;
//! 4. *hit latency*: `--latency` sequential checks on one connection, all
//!    hits: round-trip p50/p99 (client -> socket -> daemon -> store -> back).
//!
//! Every answer's status is checked against its statement's kind, and the
//! cached answers against the uncached ones (same bytes without the mark).
//!
//! `--fake-ms MS` runs the same series on the scripted FAKE Lean instead
//! (`fake.rs`: a test double with a fixed service time of MS per request,
//! `ok`/`error` only), behind the real daemon library in this process (real
//! socket, dispatch, guard, pool with the default, machine-sized limits,
//! and the real cache store on disk): the batch at full scale in minutes,
//! where real WASM Lean runs a smaller one. The table says which it was.
//!
//! Run: `cargo build --release -p leanpool -p leanpool-benches &&
//! target/release/cache [--statements 2000] [--dup-percent 30]
//! [--concurrency 4] [--latency 500] [--baseline N] [--start-timeout-ms MS]
//! [--fake-ms MS]`.

mod fake;
mod support;

use anyhow::{bail, Context};
use leanpool_protocol::method::{self, NoParams};
use leanpool_rpc::Client;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::*;

#[derive(clap::Parser)]
struct Args {
    /// Checks in the batch, duplicates included.
    #[arg(long, default_value_t = 2000, value_parser = at_least_one)]
    statements: usize,
    /// Percentage of the batch that repeats an earlier statement exactly.
    #[arg(long, default_value_t = 30)]
    dup_percent: usize,
    /// Connections sending checks.
    #[arg(long, default_value_t = 4, value_parser = at_least_one)]
    concurrency: usize,
    /// Sequential hits timed one by one for the latency series.
    #[arg(long, default_value_t = 500, value_parser = at_least_one)]
    latency: usize,
    /// Checks of the no-cache series (default: the whole batch); fewer
    /// sends the batch's first N and scales its wall time to the batch
    /// (every check costs Lean about the same, duplicates included), to
    /// keep the real-Lean run short.
    #[arg(long)]
    baseline: Option<usize>,
    /// `[pool] start_timeout_ms` (the only departure from the defaults).
    #[arg(long)]
    start_timeout_ms: Option<u64>,
    /// Run on the fake Lean with this fixed service time (ms) per request.
    #[arg(long)]
    fake_ms: Option<u64>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Ok,
    Error,
    Sorry,
}

impl Kind {
    fn status(self) -> &'static str {
        match self {
            Kind::Ok => "ok",
            Kind::Error => "error",
            Kind::Sorry => "sorry",
        }
    }
}

/// Distinct statement `i` and its kind (on the fake Lean: `ok` or
/// `error` after `fake_ms`).
fn distinct(i: usize, fake_ms: Option<u64>) -> (String, Kind) {
    if let Some(ms) = fake_ms {
        let thm = format!("theorem ca_{i} : True := trivial\n-- FAKE sleep {ms}\n");
        return match i % 10 {
            0 | 1 => (format!("{thm}-- FAKE error\n"), Kind::Error),
            _ => (thm, Kind::Ok),
        };
    }
    let k = i % 97 + 2;
    match i % 10 {
        0 | 1 => (
            format!("theorem ca_{i} : {k} + 2 = {k} + 3 := by decide\n"),
            Kind::Error,
        ),
        2 => (
            format!("theorem ca_{i} (n : Nat) : n * {k} = {k} * n := by sorry\n"),
            Kind::Sorry,
        ),
        _ => (
            format!("theorem ca_{i} (a b : Nat) (h : a < b) : a + {k} < b + {k} := by omega\n"),
            Kind::Ok,
        ),
    }
}

/// The batch: `n` items, `dup` of them copies of earlier distinct ones,
/// in a fixed pseudo-random order (an LCG, so every run is the same).
fn batch(n: usize, dup_percent: usize, fake_ms: Option<u64>) -> Vec<(String, Kind)> {
    let dups = n * dup_percent / 100;
    let uniq = n - dups;
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move |m: usize| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((seed >> 33) as usize) % m
    };
    let mut items: Vec<usize> = (0..uniq).collect();
    for _ in 0..dups {
        items.push(next(uniq));
    }
    for i in (1..items.len()).rev() {
        items.swap(i, next(i + 1));
    }
    items.into_iter().map(|i| distinct(i, fake_ms)).collect()
}

struct Run {
    wall: Duration,
    answers: Vec<String>,
}

/// Sends every item (with `extra` params) from `conc` connections.
async fn run(
    socket: &Path,
    items: &[(String, Kind)],
    conc: usize,
    extra: Value,
) -> anyhow::Result<Run> {
    let items = Arc::new(items.to_vec());
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let t0 = Instant::now();
    let mut tasks = vec![];
    for _ in 0..conc {
        let (items, next, extra) = (items.clone(), next.clone(), extra.clone());
        let c = Client::connect(socket).await?;
        tasks.push(tokio::spawn(async move {
            let mut got = vec![];
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let Some((text, kind)) = items.get(i) else {
                    return anyhow::Ok(got);
                };
                let mut p = json!({"text": text});
                if let Value::Object(e) = &extra {
                    p.as_object_mut().unwrap().extend(e.clone());
                }
                let raw = c.call_raw("check", p).await?.get().to_string();
                let v: Value = serde_json::from_str(&raw)?;
                if v["status"] != kind.status() {
                    bail!("item {i} ({kind:?}) answered {raw}");
                }
                got.push((i, raw));
            }
        }));
    }
    let mut answers = vec![String::new(); items.len()];
    for t in tasks {
        for (i, a) in t.await?? {
            answers[i] = a;
        }
    }
    Ok(Run {
        wall: t0.elapsed(),
        answers,
    })
}

/// Before any clock starts: one uncached check per connection (texts not
/// in the batch), then waits until no worker is starting, so that no
/// series pays a worker start (the pool starts its second worker on the
/// first concurrent load).
async fn warm_up(
    socket: &Path,
    c: &Client,
    conc: usize,
    fake_ms: Option<u64>,
) -> anyhow::Result<()> {
    let warm: Vec<_> = (0..conc)
        .map(|i| distinct(1_000_000 + 10 * i + 3, fake_ms))
        .collect();
    run(socket, &warm, conc, json!({"cache": false})).await?;
    loop {
        let st = c.request::<method::Status>(&NoParams).await?;
        let starting = st
            .pool
            .keys
            .iter()
            .flat_map(|k| &k.workers)
            .any(|w| w.state == leanpool_protocol::WorkerState::Starting);
        if !starting {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The answer without the cache's mark.
fn unmarked(a: &str) -> String {
    match a.strip_suffix(",\"cached\":true}") {
        Some(s) => format!("{s}}}"),
        None => a.to_string(),
    }
}

fn same_answers(a: &Run, b: &Run) -> anyhow::Result<()> {
    for (i, (x, y)) in a.answers.iter().zip(&b.answers).enumerate() {
        if unmarked(x) != unmarked(y) {
            bail!("item {i}: {x} vs {y}");
        }
    }
    Ok(())
}

async fn cache_counters(c: &Client) -> anyhow::Result<(u64, u64, u64)> {
    let s = c
        .request::<method::Status>(&NoParams)
        .await?
        .cache
        .context("daemon has no cache")?;
    Ok((s.hits, s.misses, s.in_flight_joins))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    fake::serve_if_fake();
    let args: Args = clap::Parser::parse();
    let items = batch(args.statements, args.dup_percent, args.fake_ms);
    let distinct_n = {
        let mut t: Vec<&String> = items.iter().map(|(t, _)| t).collect();
        t.sort();
        t.dedup();
        t.len()
    };
    let (socket, _daemon, _dir) = start(&args)?;
    let c = Client::connect(&socket).await?;
    warm_up(&socket, &c, args.concurrency, args.fake_ms).await?;
    let started = utc_now();
    eprintln!("{started}: {} checks, {distinct_n} distinct", items.len());
    let series = measure(&socket, &c, &items, &args).await?;
    let st = c.request::<method::Status>(&NoParams).await?;
    let lean = match args.fake_ms {
        Some(ms) => format!("FAKE Lean (test double, fixed {ms} ms per request)"),
        None => "real Lean (WASM)".to_string(),
    };
    println!(
        "Run of {started}; {lean}; {} checks ({distinct_n} distinct), {} connections, default config.\n",
        items.len(),
        args.concurrency
    );
    series.print_table(items.len());
    let s = st.cache.context("no cache")?;
    println!(
        "Store at the end: {} entries, {} bytes; worker starts {}.",
        s.entries, s.bytes, st.pool.counters.spawns
    );
    Ok(())
}

/// The daemon the series run against: its socket, the `leanpool serve`
/// process on real Lean (none on the fake: the daemon library runs in this
/// process), and the run's directory (both kept until the end).
fn start(
    args: &Args,
) -> anyhow::Result<(
    std::path::PathBuf,
    Option<leanpool_testkit::daemon::Daemon>,
    tempfile::TempDir,
)> {
    // The default config (the cache on; its default dir under the
    // fixture's XDG_CACHE_HOME, fresh for this run), but for the start
    // time-out when asked.
    let config = match args.start_timeout_ms {
        Some(ms) => format!("[pool]\nstart_timeout_ms = {ms}\n\n[cache]\n"),
        None => "[cache]\n".to_string(),
    };
    Ok(match args.fake_ms {
        None => {
            let (d, dir) = start_daemon("cache", &config)?;
            (d.socket.clone(), Some(d), dir)
        }
        Some(_) => {
            let dir = tempfile::Builder::new()
                .prefix("leanpool-bench-cache-")
                .tempdir()?;
            // The daemon's default pool (limits sized to the machine).
            let pool = leanpool_daemon::DaemonConfig::default().pool;
            let cache = Some(dir.path().join("cache"));
            let (socket, _pool) = fake::daemon(dir.path(), pool, cache);
            (socket, None, dir)
        }
    })
}

/// What the series measured.
struct Series {
    /// The no-cache series (the batch's first `nb` checks).
    base: Run,
    nb: usize,
    /// The first (empty cache) and second run.
    first: Run,
    second: Run,
    /// (hits, misses, in-flight joins) during the first and second run.
    d1: (u64, u64, u64),
    d2: (u64, u64, u64),
    /// Hit round trips, ms.
    lat: Vec<f64>,
}

/// Runs the series 1-4 (module docs) and checks every answer.
async fn measure(
    socket: &Path,
    c: &Client,
    items: &[(String, Kind)],
    args: &Args,
) -> anyhow::Result<Series> {
    let nb = args.baseline.unwrap_or(items.len()).min(items.len());
    let base = run(
        socket,
        &items[..nb],
        args.concurrency,
        json!({"cache": false}),
    )
    .await?;
    eprintln!("no cache: {:.1} s for {nb}", base.wall.as_secs_f64());
    let c0 = cache_counters(c).await?;
    let first = run(socket, items, args.concurrency, json!({})).await?;
    let c1 = cache_counters(c).await?;
    eprintln!("first run: {:.1} s", first.wall.as_secs_f64());
    let second = run(socket, items, args.concurrency, json!({})).await?;
    let c2 = cache_counters(c).await?;
    same_answers(&base, &first)?;
    same_answers(&base, &second)?;
    let lat = hit_latency(c, items, args.latency).await?;
    Ok(Series {
        base,
        nb,
        first,
        second,
        d1: (c1.0 - c0.0, c1.1 - c0.1, c1.2 - c0.2),
        d2: (c2.0 - c1.0, c2.1 - c1.1, c2.2 - c1.2),
        lat,
    })
}

/// `n` sequential checks on one connection, each of which must be a hit:
/// their round trips in ms.
async fn hit_latency(c: &Client, items: &[(String, Kind)], n: usize) -> anyhow::Result<Vec<f64>> {
    let mut lat = vec![];
    for (text, _) in items.iter().cycle().take(n) {
        let t = Instant::now();
        let a = c.call_raw("check", json!({"text": text})).await?;
        lat.push(ms(t.elapsed()));
        if !a.get().ends_with(",\"cached\":true}") {
            bail!("latency series: not a hit: {}", a.get());
        }
    }
    Ok(lat)
}

impl Series {
    /// The markdown table and the latency line, for a batch of `n` checks.
    fn print_table(&self, n: usize) {
        let (base, first, second, nb) = (&self.base, &self.first, &self.second, self.nb);
        let (d1, d2) = (self.d1, self.d2);
        // The no-cache wall time of the whole batch (scaled when sampled).
        let base_wall = base.wall.as_secs_f64() * n as f64 / nb as f64;
        let rate = |r: &Run| r.answers.len() as f64 / r.wall.as_secs_f64();
        let sampled = if nb < n {
            format!(
                " (first {nb} sent: {:.1} s, scaled)",
                base.wall.as_secs_f64()
            )
        } else {
            String::new()
        };
        let ratio = first.wall.as_secs_f64() / second.wall.as_secs_f64();
        println!("| series | checks | wall | checks/s | Lean runs (misses) | hits | in-flight joins | speed-up |");
        println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
        println!(
            "| no cache (`\"cache\": false`){sampled} | {n} | {base_wall:.1} s | {:.1} | {n} | 0 | 0 | 1.00x |",
            rate(base)
        );
        println!(
            "| first run, empty cache | {n} | {:.1} s | {:.1} | {} | {} | {} | {:.2}x vs no cache |",
            first.wall.as_secs_f64(),
            rate(first),
            d1.1,
            d1.0,
            d1.2,
            base_wall / first.wall.as_secs_f64()
        );
        println!(
            "| second run | {n} | {:.2} s | {:.0} | {} | {} | {} | {ratio:.0}x vs first run ({} 50x) |",
            second.wall.as_secs_f64(),
            rate(second),
            d2.1,
            d2.0,
            d2.2,
            verdict(ratio >= 50.0)
        );
        println!(
            "\nHit latency (round trip, one connection, {} sequential hits): p50 {} / p99 {}.",
            self.lat.len(),
            fmt_ms(percentile(&self.lat, 50.0)),
            fmt_ms(percentile(&self.lat, 99.0))
        );
    }
}
