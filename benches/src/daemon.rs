//! `daemon` bench: a real `leanpool serve` on a temp socket, real Lean,
//! real signals (issue 6 items 1-2).
//!
//! Phase 1, daemon with one worker:
//! - *pool overhead*: `--requests` sequential one-line checks with
//!   `timings`; overhead = the client's round trip minus `worker_us` (the
//!   time the driver spent on the Lean worker: from sending the edit until
//!   its diagnostics were final). p50/p99.
//! - *throughput*: `--throughput` checks from `--concurrency` connections.
//! - *timeout*: `--timeouts` statements far too slow for `--timeout-ms`;
//!   the answer must be `timeout`, its round trip is compared with the
//!   limit + 10 %, and the time until the replaced worker answers again.
//! - *SIGKILL*: `--kills` times, a slow check is sent, the worker is
//!   SIGKILLed while busy on it; the pool must answer it (retry on a fresh
//!   worker). Unanswered = no answer or an error. Recovery = kill until
//!   the answer.
//!
//! Phase 2, daemon with two workers (both prewarmed): throughput again.
//!
//! Run: `cargo build --release -p leanpool && cargo run --release -p
//! leanpool-benches --bin daemon -- [--requests 90] [--throughput 30]
//! [--concurrency 4] [--kills 20] [--timeouts 2] [--timeout-ms 2000]
//! [--max-uses 32]`.
//!
//! `--max-uses` is the daemon's `max_uses` (recycling). The WASM worker's
//! heap is capped at 2 GiB and grows ~33 MB per edit, so a WASM deployment
//! must recycle (here one hung after 44 one-line checks); the bench then runs each measured
//! series on a worker with enough uses left (after two unmeasured warm-up
//! requests), so that no recycling or first request falls inside it.
//! The daemon binary is `leanpool` next to this one (or `LEANPOOL_BIN`).

mod support;

use anyhow::{bail, Context};
use leanpool_daemon::StatusResult;
use leanpool_lean::LeanCommand;
use leanpool_pool::WorkerState;
use leanpool_protocol::method::{self, NoParams};
use leanpool_protocol::{CheckParams, CheckResult, CheckStatus};
use leanpool_rpc::Client;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::*;

/// Command line (see the module docs).
#[derive(clap::Parser)]
struct Args {
    /// Sequential one-line checks for the overhead series.
    #[arg(long, default_value_t = 90, value_parser = at_least_one)]
    requests: usize,
    /// Checks in each throughput run.
    #[arg(long, default_value_t = 30, value_parser = at_least_one)]
    throughput: usize,
    /// Connections sending the throughput checks.
    #[arg(long, default_value_t = 4, value_parser = at_least_one)]
    concurrency: usize,
    /// Workers SIGKILLed mid-request.
    #[arg(long, default_value_t = 20)]
    kills: usize,
    /// Statements far over `--timeout-ms`.
    #[arg(long, default_value_t = 2)]
    timeouts: usize,
    #[arg(long, default_value_t = 2000)]
    timeout_ms: u64,
    /// The daemon's `max_uses`.
    #[arg(long, default_value_t = 32)]
    max_uses: u64,
    /// Skip the two-worker phase.
    #[arg(long = "no-two-workers", action = clap::ArgAction::SetFalse)]
    two_workers: bool,
}

/// Theorems that keep a warm worker busy for a few seconds (all true), so
/// that a SIGKILL or a time limit lands in the middle of the request.
fn slow_text(tag: &str, theorems: usize) -> String {
    (0..theorems)
        .map(|i| format!("theorem {tag}_{i} (a b c : Nat) (h1 : a < b) (h2 : b < c) : a + {i} < c + {i} + 1 := by omega\n"))
        .collect()
}

fn config(workers: usize, max_uses: u64) -> String {
    // Prewarm every worker so start-up never lands inside a measurement;
    // no idle retirement during the bench.
    format!(
        "[pool]\nmax_workers = {workers}\nmax_workers_per_key = {workers}\nmax_queue_per_key = 256\n\
         idle_timeout_ms = 0\nmax_uses = {max_uses}\ndefault_timeout_ms = 600000\nstart_timeout_ms = 600000\n\
         health_interval_ms = 200\n[[pool.prewarm]]\nheader = \"\"\nmin = {workers}\n"
    )
}

fn workers(st: &StatusResult) -> Vec<(Option<u32>, WorkerState)> {
    st.pool
        .keys
        .iter()
        .flat_map(|k| k.workers.iter().map(|w| (w.pid, w.state)))
        .collect()
}

/// Polls `status` until `want` workers are idle with a process.
async fn wait_idle(c: &Client, want: usize, within: Duration) -> anyhow::Result<StatusResult> {
    let t = Instant::now();
    loop {
        let st = c.request::<method::Status>(&NoParams).await?;
        let idle = workers(&st)
            .iter()
            .filter(|(pid, s)| pid.is_some() && *s == WorkerState::Idle)
            .count();
        if idle >= want {
            return Ok(st);
        }
        if t.elapsed() > within {
            bail!(
                "{want} idle worker(s) not there after {within:?}: {:?}",
                workers(&st)
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Warm-up requests a fresh worker gets before a measured series (its
/// first request is much slower: V8 compiles the code paths).
const WARMUP: u64 = 2;

/// Makes the (single) worker ready for `need` measured requests: warm
/// (at least `WARMUP` uses) and with `need` uses left before recycling.
/// A worker without room is used up with unmeasured requests, and its
/// replacement waited for and warmed.
async fn room_for(c: &Client, need: usize, max_uses: u64) -> anyhow::Result<()> {
    let need = need as u64;
    if max_uses > 0 && need + WARMUP > max_uses {
        bail!("a series of {need} requests does not fit in max_uses {max_uses} (minus {WARMUP} warm-up requests)");
    }
    let mut burned = 0;
    loop {
        let st = wait_idle(c, 1, Duration::from_secs(900)).await?;
        let uses = st
            .pool
            .keys
            .iter()
            .flat_map(|k| &k.workers)
            .map(|w| w.uses)
            .max()
            .unwrap_or(0);
        if uses < WARMUP {
            for i in uses..WARMUP {
                expect_ok(c, statement(&format!("warmup{burned}_{i}"))).await?;
            }
            continue;
        }
        if max_uses == 0 || uses + need <= max_uses {
            return Ok(());
        }
        // Used up: the last of these makes the pool recycle the worker.
        for _ in uses..max_uses {
            expect_ok(c, statement(&format!("burn{burned}"))).await?;
            burned += 1;
        }
        // The answer may arrive before the slot retires the process.
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

async fn expect_ok(c: &Client, text: String) -> anyhow::Result<CheckResult> {
    let r = c
        .request::<method::Check>(&CheckParams::new(text.clone()).with_timings())
        .await?;
    if r.status != CheckStatus::Ok {
        bail!("expected ok for {text:?}, got {r:?}");
    }
    Ok(r)
}

struct Overhead {
    rtt: Vec<f64>,
    worker: Vec<f64>,
    overhead: Vec<f64>,
}

async fn overhead(c: &Client, n: usize, max_uses: u64) -> anyhow::Result<Overhead> {
    let mut o = Overhead {
        rtt: vec![],
        worker: vec![],
        overhead: vec![],
    };
    let per_series = if max_uses == 0 {
        n
    } else {
        max_uses.saturating_sub(WARMUP).max(1) as usize
    };
    for i in 0..n {
        if i % per_series == 0 {
            room_for(c, per_series.min(n - i), max_uses).await?;
        }
        let t = Instant::now();
        let r = expect_ok(c, statement(&format!("ovh{i}"))).await?;
        let rtt = ms(t.elapsed());
        let worker = r
            .worker_us
            .context("answer without worker_us (timings ignored?)")? as f64
            / 1000.0;
        o.rtt.push(rtt);
        o.worker.push(worker);
        o.overhead.push(rtt - worker);
    }
    Ok(o)
}

/// `total` checks from `concurrency` connections, each taking the next
/// request number as soon as its previous answer is in. req/s.
async fn throughput(
    socket: &Path,
    tag: &str,
    total: usize,
    concurrency: usize,
) -> anyhow::Result<(f64, f64)> {
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    let t = Instant::now();
    for _ in 0..concurrency {
        let next = next.clone();
        let socket = socket.to_owned();
        let tag = tag.to_string();
        tasks.spawn(async move {
            let c = Client::connect(&socket).await?;
            let mut times = vec![];
            loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= total {
                    return Ok::<_, anyhow::Error>(times);
                }
                let t = Instant::now();
                expect_ok(&c, statement(&format!("{tag}{i}"))).await?;
                times.push(ms(t.elapsed()));
            }
        });
    }
    let mut all = vec![];
    while let Some(r) = tasks.join_next().await {
        all.extend(r??);
    }
    let wall = t.elapsed().as_secs_f64();
    Ok((total as f64 / wall, median(&all)))
}

struct Timeouts {
    rtt: Vec<f64>,
    statuses: Vec<String>,
    recovery: Vec<f64>,
}

/// A statement far too slow for the limit: answered `timeout` within the
/// limit (+10 % is the target), the worker killed and replaced; recovery
/// = from the answer until a one-line check is answered again.
async fn timeouts(c: &Client, n: usize, limit_ms: u64) -> anyhow::Result<Timeouts> {
    let mut out = Timeouts {
        rtt: vec![],
        statuses: vec![],
        recovery: vec![],
    };
    for i in 0..n {
        // On an idle worker, so the round trip is the limit plus leanpool's
        // own work (kill, reap, answer), not a worker start.
        let st = wait_idle(c, 1, Duration::from_secs(900)).await?;
        let before: Vec<u32> = workers(&st).iter().filter_map(|w| w.0).collect();
        let p = CheckParams::new(slow_text(&format!("to{i}"), 400))
            .with_timings()
            .with_timeout_ms(limit_ms);
        let t = Instant::now();
        let r = c.request::<method::Check>(&p).await?;
        out.rtt.push(ms(t.elapsed()));
        out.statuses.push(format!("{:?}", r.status).to_lowercase());
        let t = Instant::now();
        expect_ok(c, statement(&format!("after_to{i}"))).await?;
        out.recovery.push(ms(t.elapsed()));
        let after: Vec<u32> = workers(&c.request::<method::Status>(&NoParams).await?)
            .iter()
            .filter_map(|w| w.0)
            .collect();
        eprintln!(
            "timeout {i}: {} in {}, recovered in {}; pids {before:?} -> {after:?}",
            out.statuses[i],
            fmt_ms(out.rtt[i]),
            fmt_ms(out.recovery[i])
        );
    }
    Ok(out)
}

struct Kills {
    attempted: usize,
    /// The request was still running when the signal was sent.
    mid_request: usize,
    answered_ok: usize,
    unanswered: Vec<String>,
    recovery: Vec<f64>,
}

/// SIGKILL the busy worker `n` times, each at a different point of a slow
/// request (150 ms .. 1.5 s after it became busy).
async fn kills(c: &Client, socket: &Path, n: usize) -> anyhow::Result<Kills> {
    let mut k = Kills {
        attempted: 0,
        mid_request: 0,
        answered_ok: 0,
        unanswered: vec![],
        recovery: vec![],
    };
    for i in 0..n {
        k.attempted += 1;
        // Every kill makes the pool start a fresh worker: make sure the
        // replacement of the previous round is ready (and the machine has
        // room) before the next round measures anything.
        wait_idle(c, 1, Duration::from_secs(900)).await?;
        let conn = Client::connect(socket).await?;
        let text = slow_text(&format!("k{i}"), 60);
        let req = tokio::spawn(async move {
            let r = conn
                .request::<method::Check>(&CheckParams::new(text).with_timings())
                .await;
            (r, Instant::now())
        });
        // The worker that took the request.
        let t = Instant::now();
        let victim = loop {
            let st = c.request::<method::Status>(&NoParams).await?;
            if let Some((Some(pid), _)) =
                workers(&st).into_iter().find(|w| w.1 == WorkerState::Busy)
            {
                break pid;
            }
            if t.elapsed() > Duration::from_secs(120) {
                bail!("no busy worker 120 s after sending kill request {i}");
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        tokio::time::sleep(Duration::from_millis(150 + (i as u64 * 271) % 1350)).await;
        let still_running = !req.is_finished();
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(victim as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
        let killed_at = Instant::now();
        if still_running {
            k.mid_request += 1;
        }
        match tokio::time::timeout(Duration::from_secs(900), req).await {
            Ok(Ok((Ok(r), at))) if r.status == CheckStatus::Ok => {
                k.answered_ok += 1;
                if still_running {
                    k.recovery.push(ms(at.saturating_duration_since(killed_at)));
                }
                eprintln!(
                    "kill {i}: pid {victim} killed {}; answered ok {} after the kill",
                    if still_running {
                        "mid-request"
                    } else {
                        "after its answer"
                    },
                    fmt_ms(ms(at.saturating_duration_since(killed_at)))
                );
            }
            Ok(Ok((Ok(r), _))) => k.unanswered.push(format!("kill {i}: wrong answer {r:?}")),
            Ok(Ok((Err(e), _))) => k.unanswered.push(format!("kill {i}: error {e}")),
            Ok(Err(e)) => k.unanswered.push(format!("kill {i}: task failed {e}")),
            Err(_) => k
                .unanswered
                .push(format!("kill {i}: no answer within 900 s")),
        }
    }
    Ok(k)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = <Args as clap::Parser>::parse();
    let cmd = LeanCommand::detect()?;
    let marker = lean_marker(&cmd);
    let version = cmd
        .version
        .clone()
        .unwrap_or_else(|| "unknown version".into());
    let date = utc_now();
    let p1 = phase1(&args, &marker).await?;
    println!(
        "Daemon bench, {} backend ({version}), {date}:",
        cmd.backend.as_str()
    );
    p1.print(&args);
    // Phase 1's rows are out (stdout) before phase 2 may wait for room.
    if args.two_workers {
        let (tp2, med2) = phase2(&args, &marker).await?;
        println!(
            "| throughput, 2 workers | {tp2:.2} req/s | same load; round trip p50 {}; ratio 2/1 workers {:.2} |",
            fmt_ms(med2),
            tp2 / p1.tp1
        );
    }
    Ok(())
}

/// What phase 1 (one worker) measured.
struct Phase1 {
    /// Daemon start to its worker idle, ms.
    ready_ms: f64,
    o: Overhead,
    /// Throughput (req/s) and its round trip p50.
    tp1: f64,
    tp1_med: f64,
    to: Timeouts,
    ks: Kills,
    counters1: leanpool_protocol::Counters,
    daemon_alive_after_kills: bool,
}

/// Phase 1: a daemon with one worker: overhead, throughput, time-outs,
/// SIGKILLs (module docs).
async fn phase1(args: &Args, marker: &str) -> anyhow::Result<Phase1> {
    wait_for_room(marker, 1).await;
    let t = Instant::now();
    let (mut d1, _dir1) = start_daemon("daemon-w1", &config(1, args.max_uses))?;
    let c = Client::connect(&d1.socket).await?;
    let st = wait_idle(&c, 1, Duration::from_secs(900))
        .await
        .map_err(|e| e.context(d1.logs()))?;
    let ready_ms = ms(t.elapsed());
    eprintln!(
        "1 worker ready {} after daemon start: {:?}",
        fmt_ms(ready_ms),
        workers(&st)
    );
    let o = overhead(&c, args.requests, args.max_uses).await?;
    eprintln!("overhead p50 {}", fmt_ms(median(&o.overhead)));
    room_for(&c, args.throughput, args.max_uses).await?;
    let (tp1, tp1_med) = throughput(&d1.socket, "tp1_", args.throughput, args.concurrency).await?;
    eprintln!("throughput 1 worker: {tp1:.2} req/s");
    let to = timeouts(&c, args.timeouts, args.timeout_ms).await?;
    let ks = kills(&c, &d1.socket, args.kills).await?;
    let counters1 = c.request::<method::Status>(&NoParams).await?.pool.counters;
    drop(c);
    let daemon_alive_after_kills = d1.is_running();
    d1.stop();
    Ok(Phase1 {
        ready_ms,
        o,
        tp1,
        tp1_med,
        to,
        ks,
        counters1,
        daemon_alive_after_kills,
    })
}

impl Phase1 {
    /// Phase 1's rows of the table (and any unanswered kill).
    fn print(&self, args: &Args) {
        let (o, to, ks, counters1) = (&self.o, &self.to, &self.ks, &self.counters1);
        let (ready_ms, tp1, tp1_med) = (self.ready_ms, self.tp1, self.tp1_med);
        let daemon_alive_after_kills = self.daemon_alive_after_kills;
        let limit = args.timeout_ms as f64;
        let to_max = to.rtt.iter().cloned().fold(f64::NAN, f64::max);
        let all_timeout = to.statuses.iter().all(|s| s == "timeout");
        println!();
        println!("| measure | value | notes |");
        println!("| --- | ---: | --- |");
        println!(
            "| daemon start to 1 worker ready | {} | prewarmed, empty header |",
            fmt_ms(ready_ms)
        );
        println!(
            "| pool overhead, p50 / p99 | {} / {} | round trip minus `worker_us`, {} sequential one-line checks |",
            fmt_ms(median(&o.overhead)),
            fmt_ms(percentile(&o.overhead, 99.0)),
            o.rtt.len()
        );
        println!(
            "| round trip, p50 / p99 | {} / {} | worker's own time p50 {} |",
            fmt_ms(median(&o.rtt)),
            fmt_ms(percentile(&o.rtt, 99.0)),
            fmt_ms(median(&o.worker))
        );
        println!(
            "| throughput, 1 worker | {tp1:.2} req/s | {} checks, concurrency {}; round trip p50 {} |",
            args.throughput,
            args.concurrency,
            fmt_ms(tp1_med)
        );
        if !to.rtt.is_empty() {
            println!(
                "| timeout ({} ms limit) answered in | {} max | {} runs, statuses {:?}; within limit + 10 %: {}; recovery (next check ok) p50 {} |",
                args.timeout_ms,
                fmt_ms(to_max),
                to.rtt.len(),
                to.statuses,
                verdict(all_timeout && to_max <= limit * 1.1),
                fmt_ms(median(&to.recovery))
            );
        }
        if ks.attempted > 0 {
            println!(
                "| SIGKILL a busy worker | {} unanswered of {} | {} killed mid-request; recovery (kill to answer) p50 {}, max {} |",
                ks.unanswered.len(),
                ks.attempted,
                ks.mid_request,
                fmt_ms(median(&ks.recovery)),
                fmt_ms(percentile(&ks.recovery, 100.0))
            );
        }
        println!(
            "| daemon counters (phase 1) | crashes {}, retries {}, worker_failed {}, timeouts {}, spawns {} | daemon stayed up: {} |",
            counters1.crashes,
            counters1.retries,
            counters1.worker_failed,
            counters1.timeouts,
            counters1.spawns,
            daemon_alive_after_kills
        );
        for u in &ks.unanswered {
            println!();
            println!("UNANSWERED: {u}");
        }
    }
}

/// Phase 2: a daemon with two workers (both prewarmed and warmed by a
/// first request each): throughput and its round trip p50.
async fn phase2(args: &Args, marker: &str) -> anyhow::Result<(f64, f64)> {
    wait_for_room(marker, 2).await;
    let (d2, _dir2) = start_daemon("daemon-w2", &config(2, args.max_uses))?;
    let c = Client::connect(&d2.socket).await?;
    wait_idle(&c, 2, Duration::from_secs(900))
        .await
        .map_err(|e| e.context(d2.logs()))?;
    // Warm both workers' first requests (concurrently, so each gets some).
    let mut warm = tokio::task::JoinSet::new();
    for i in 0..4 {
        let socket = d2.socket.clone();
        warm.spawn(async move {
            let c = Client::connect(&socket).await?;
            expect_ok(&c, statement(&format!("warm2_{i}")))
                .await
                .map(|_| ())
        });
    }
    while let Some(r) = warm.join_next().await {
        r??;
    }
    let r = throughput(&d2.socket, "tp2_", args.throughput, args.concurrency).await?;
    eprintln!("throughput 2 workers: {:.2} req/s", r.0);
    Ok(r)
}
