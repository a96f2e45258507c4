//! `pool` bench: the pool's throughput against the ideal, on the scripted
//! FAKE Lean (issue 22 part 3).
//!
//! A test double of Lean, not Lean: every request's text ends in
//! `-- FAKE sleep S`, so each worker answers after a FIXED service time of
//! S ms (plus the fake's own LSP handling, well under a millisecond); the
//! bench executable is the fake (`fake.rs`). Everything else is the real
//! daemon in this process: Unix socket, JSON-RPC transport, dispatch, the
//! input guard, the pool's queue and supervisor, the workers' LSP pipes.
//!
//! Per row: a daemon with `max_workers = max_workers_per_key = N`, all N
//! workers prewarmed and idle before the clock starts, no spares, no cache;
//! `2N` requests kept in flight (pipelined over up to 16 connections) until
//! `R` requests (about `--seconds` of ideal work, at most `--max-requests`)
//! are answered. Throughput = R / wall; ideal = N / S; ratio = throughput /
//! ideal (target >= 0.9). The second table keeps N fixed and shrinks S until
//! the ratio drops: where the pool's own per-request cost shows.
//!
//! Run: `cargo run --release -p leanpool-benches --bin pool -- [--workers
//! 1,4,16,64] [--service-ms 200] [--overhead-workers 16] [--overhead-ms
//! 100,20,5,2,1] [--seconds 4] [--max-requests 20000]`.

mod fake;
mod support;

use anyhow::bail;
use leanpool_pool::{PoolConfig, PrewarmEntry, WorkerState};
use leanpool_rpc::Client;
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::*;

#[derive(clap::Parser)]
struct Args {
    /// Worker counts of the main table.
    #[arg(long, value_delimiter = ',', default_value = "1,4,16,64")]
    workers: Vec<usize>,
    /// The fake's service time (ms) in the main table.
    #[arg(long, default_value_t = 200)]
    service_ms: u64,
    /// Workers of the overhead table.
    #[arg(long, default_value_t = 16)]
    overhead_workers: usize,
    /// Service times (ms) of the overhead table.
    #[arg(long, value_delimiter = ',', default_value = "100,20,5,2,1")]
    overhead_ms: Vec<u64>,
    /// Ideal wall time of one row.
    #[arg(long, default_value_t = 4)]
    seconds: u64,
    /// Cap on the requests of one row.
    #[arg(long, default_value_t = 20_000)]
    max_requests: usize,
}

struct Row {
    workers: usize,
    service_ms: u64,
    requests: usize,
    wall: Duration,
}

impl Row {
    fn rate(&self) -> f64 {
        self.requests as f64 / self.wall.as_secs_f64()
    }
    fn ideal(&self) -> f64 {
        self.workers as f64 * 1000.0 / self.service_ms as f64
    }
    fn line(&self) -> String {
        let ratio = self.rate() / self.ideal();
        format!(
            "| {} | {} ms | {} | {:.2} s | {:.1} | {:.1} | {:.2}x | {} |",
            self.workers,
            self.service_ms,
            self.requests,
            self.wall.as_secs_f64(),
            self.rate(),
            self.ideal(),
            ratio,
            verdict(ratio >= 0.9)
        )
    }
}

/// One row: a fresh daemon of `n` warm fake workers, `requests` checks of
/// `service_ms` each.
async fn row(n: usize, service_ms: u64, requests: usize) -> anyhow::Result<Row> {
    let dir = tempfile::Builder::new()
        .prefix("leanpool-bench-pool-")
        .tempdir()?;
    let cfg = PoolConfig {
        max_workers: Some(n),
        max_workers_per_key: Some(n),
        spares_per_key: 0,
        prewarm: vec![PrewarmEntry {
            header: String::new(),
            min: n,
        }],
        idle_timeout_ms: 0,
        max_queue_per_key: 4 * n + 64,
        start_timeout_ms: 60_000,
        ..PoolConfig::default()
    };
    let (socket, pool) = fake::daemon(dir.path(), cfg, None);
    let t0 = Instant::now();
    loop {
        let st = pool.status();
        let idle = st
            .keys
            .iter()
            .flat_map(|k| &k.workers)
            .filter(|w| w.state == WorkerState::Idle)
            .count();
        if idle == n {
            break;
        }
        if t0.elapsed() > Duration::from_secs(120) {
            bail!("{idle}/{n} fake workers ready after 120 s");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let conns = (2 * n).min(16);
    let mut clients = vec![];
    for _ in 0..conns {
        clients.push(Arc::new(Client::connect(&socket).await?));
    }
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let mut tasks = vec![];
    for t in 0..2 * n {
        let (c, next) = (clients[t % conns].clone(), next.clone());
        tasks.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= requests {
                    return anyhow::Ok(());
                }
                let text = format!("theorem t_{i} : True := trivial\n-- FAKE sleep {service_ms}\n");
                let a = c.call_raw("check", json!({ "text": text })).await?;
                if !a.get().starts_with("{\"status\":\"ok\"") {
                    bail!("request {i}: {}", a.get());
                }
            }
        }));
    }
    for t in tasks {
        t.await??;
    }
    let wall = start.elapsed();
    let spawns = pool.status().counters.spawns;
    if spawns != n as u64 {
        bail!("{spawns} worker starts for {n} workers: a worker was replaced mid-row");
    }
    pool.shutdown(Duration::from_secs(10)).await;
    Ok(Row {
        workers: n,
        service_ms,
        requests,
        wall,
    })
}

fn requests_for(n: usize, service_ms: u64, args: &Args) -> usize {
    let r = n as u64 * args.seconds * 1000 / service_ms.max(1);
    (r as usize).clamp(4 * n, args.max_requests)
}

const HEAD: &str = "| workers | service time | requests | wall | checks/s | ideal (workers / service time) | ratio | >= 0.9x |\n| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    fake::serve_if_fake();
    let args: Args = clap::Parser::parse();
    let started = utc_now();
    let mut main_rows = vec![];
    for &n in &args.workers {
        let r = row(n, args.service_ms, requests_for(n, args.service_ms, &args)).await?;
        eprintln!("{}", r.line());
        main_rows.push(r);
    }
    let mut over_rows = vec![];
    let n = args.overhead_workers;
    for &s in &args.overhead_ms {
        let r = row(n, s, requests_for(n, s, &args)).await?;
        eprintln!("{}", r.line());
        over_rows.push(r);
    }
    println!(
        "Pool throughput on the FAKE Lean (fixed service time), {} cores, run {started}:\n",
        std::thread::available_parallelism().map_or(1, |c| c.get())
    );
    println!("{HEAD}");
    for r in &main_rows {
        println!("{}", r.line());
    }
    println!("\nWhere the pool's own overhead shows ({n} workers, shrinking service time):\n");
    println!("{HEAD}");
    for r in &over_rows {
        println!("{}", r.line());
    }
    Ok(())
}
