//! `lean` bench: warm vs cold check on the same Lean (issue 2 item 6,
//! issue 6 item 1).
//!
//! - *warm*: one worker (`Worker::spawn` + `check_on`, the path the pool
//!   uses); the first request is timed on its own (V8 warms its code paths
//!   on it), then `--n` one-line theorems with distinct names.
//! - *cold, `lean FILE`*: one fresh Lean process per statement, as batch
//!   judges run it (exit code 0 and no `error:` in the output required).
//! - *cold, fresh worker*: spawn a worker, check one statement, kill it
//!   (what `leanpool check` does without a daemon).
//!
//! RSS after the warm series: `VmRSS` of the worker process and the sum
//! over its process group. The cold/warm ratios use medians of this run.
//! Lean processes run one at a time, each only when `support::wait_for_room`
//! allows (shared machine).
//!
//! Run: `cargo run --release -p leanpool-benches --bin lean -- [--n 50]
//! [--cold 3] [--no-cold-file] [--no-cold-worker]`. Prints markdown.

mod support;

use anyhow::{bail, Context};
use leanpool_lean::{check_on, header_key, proc, LeanCommand, Worker, WorkerConfig};
use leanpool_protocol::{CheckParams, CheckStatus};
use std::process::Stdio;
use std::time::{Duration, Instant};
use support::*;

/// Targets of issue 2 item 6.
const TARGET_WARM_MEDIAN_MS: f64 = 2000.0;
const TARGET_RSS_BYTES: u64 = 4_000_000_000;

struct Args {
    n: usize,
    cold: usize,
    cold_file: bool,
    cold_worker: bool,
}

fn parse_args() -> anyhow::Result<Args> {
    let mut a = Args { n: 50, cold: 3, cold_file: true, cold_worker: true };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut num = |name: &str| -> anyhow::Result<usize> {
            it.next().with_context(|| format!("{name} needs a number"))?.parse().with_context(|| name.to_string())
        };
        match arg.as_str() {
            "--n" => a.n = num("--n")?,
            "--cold" => a.cold = num("--cold")?,
            "--no-cold-file" => a.cold_file = false,
            "--no-cold-worker" => a.cold_worker = false,
            other => bail!("unknown argument {other:?} (--n N, --cold N, --no-cold-file, --no-cold-worker)"),
        }
    }
    if a.n == 0 {
        bail!("--n must be at least 1");
    }
    Ok(a)
}

/// Limit per check; a warm one-line check that takes this long is a
/// stalled worker, which must fail the bench rather than hang it.
const TIMEOUT: Duration = Duration::from_secs(180);
/// Limit for a whole cold `lean FILE` run (start-up included).
const FILE_TIMEOUT: Duration = Duration::from_secs(900);

fn params(text: String) -> CheckParams {
    CheckParams { text, timeout_ms: None, timings: false }
}

/// Checks one statement on `w` and insists it is `ok`: a bench that times
/// wrong answers would be meaningless.
async fn timed_check(w: &mut Worker, text: String) -> anyhow::Result<f64> {
    let t = Instant::now();
    let r = check_on(w, &params(text.clone()), TIMEOUT).await?;
    let elapsed = ms(t.elapsed());
    if r.status != CheckStatus::Ok {
        bail!("expected ok for {text:?}, got {r:?}");
    }
    Ok(elapsed)
}

struct Warm {
    startup_ms: f64,
    first_ms: f64,
    times: Vec<f64>,
    rss_proc: Option<u64>,
    rss_group: Option<u64>,
    lsp_per_request: f64,
}

async fn warm(cmd: &LeanCommand, n: usize) -> anyhow::Result<Warm> {
    wait_for_room(&lean_marker(cmd), 1).await;
    let header = header_key(&statement("x"));
    let t = Instant::now();
    let mut w = Worker::spawn(&WorkerConfig::new(cmd.clone()), &header).await?;
    let startup_ms = ms(t.elapsed());
    eprintln!("warm: worker {} ready in {}", w.pid(), fmt_ms(startup_ms));
    let result = async {
        let first_ms = timed_check(&mut w, statement("first")).await?;
        eprintln!("warm: first request {}", fmt_ms(first_ms));
        let lsp_before = w.lsp_requests();
        let mut times = Vec::with_capacity(n);
        for i in 0..n {
            times.push(timed_check(&mut w, statement(&format!("warm{i}"))).await?);
            if (i + 1) % 10 == 0 {
                eprintln!("warm: {} requests, last {}", i + 1, fmt_ms(times[i]));
            }
        }
        let lsp_per_request = (w.lsp_requests() - lsp_before) as f64 / n as f64;
        let rss_proc = proc::rss_bytes(w.pid());
        let rss_group = w.rss_bytes();
        Ok::<_, anyhow::Error>(Warm { startup_ms, first_ms, times, rss_proc, rss_group, lsp_per_request })
    }
    .await;
    w.kill().await;
    result
}

struct ColdWorker {
    total: Vec<f64>,
    startup: Vec<f64>,
    check: Vec<f64>,
}

async fn cold_worker(cmd: &LeanCommand, n: usize) -> anyhow::Result<ColdWorker> {
    let mut out = ColdWorker { total: vec![], startup: vec![], check: vec![] };
    for i in 0..n {
        wait_for_room(&lean_marker(cmd), 1).await;
        let text = statement(&format!("coldw{i}"));
        let t = Instant::now();
        let mut w = Worker::spawn(&WorkerConfig::new(cmd.clone()), &header_key(&text)).await?;
        let startup = ms(t.elapsed());
        let check = timed_check(&mut w, text).await;
        w.kill().await;
        let check = check?;
        let total = ms(t.elapsed());
        eprintln!("cold worker {i}: start-up {}, check {}, total {}", fmt_ms(startup), fmt_ms(check), fmt_ms(total));
        out.total.push(total);
        out.startup.push(startup);
        out.check.push(check);
    }
    Ok(out)
}

struct ColdFile {
    total: Vec<f64>,
    peak_rss: Option<u64>,
}

/// `lean FILE.lean` per statement. The file goes to the temp dir, which
/// the WASM glue mounts.
async fn cold_file(cmd: &LeanCommand, n: usize) -> anyhow::Result<ColdFile> {
    let dir = std::env::temp_dir().join(format!("leanpool-bench-lean-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let mut out = ColdFile { total: vec![], peak_rss: None };
    let r = async {
        for i in 0..n {
            wait_for_room(&lean_marker(cmd), 1).await;
            let path = dir.join(format!("Cold{i}.lean"));
            std::fs::write(&path, statement(&format!("coldf{i}")))?;
            let path_s = path.to_str().context("temp path is not UTF-8")?;
            let mut c = cmd.command(&[path_s]);
            c.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
            let t = Instant::now();
            let child = c.spawn()?;
            let pid = child.id().context("lean exited at once")?;
            // Peak resident set of the process group, sampled while it runs.
            let peak_probe = tokio::spawn(async move {
                let mut peak = 0u64;
                while proc::group_rss_bytes(pid).is_some() {
                    peak = peak.max(proc::group_rss_bytes(pid).unwrap_or(0));
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                peak
            });
            let output = tokio::time::timeout(FILE_TIMEOUT, child.wait_with_output()).await.context("lean FILE timed out")??;
            let total = ms(t.elapsed());
            proc::kill_group(pid);
            let peak = peak_probe.await.unwrap_or(0);
            out.peak_rss = Some(out.peak_rss.unwrap_or(0).max(peak));
            let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
            if !output.status.success() || text.contains("error:") {
                bail!("lean {path_s} failed ({:?}): {}", output.status.code(), text.trim());
            }
            eprintln!("cold file {i}: {} (peak RSS {})", fmt_ms(total), fmt_gb(Some(peak)));
            out.total.push(total);
        }
        Ok(())
    }
    .await;
    let _ = std::fs::remove_dir_all(&dir);
    r.map(|()| out)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = parse_args()?;
    let cmd = LeanCommand::detect()?;
    let version = cmd.version.clone().unwrap_or_else(|| "unknown version".into());
    eprintln!("backend {} ({version})", cmd.backend.as_str());

    let w = warm(&cmd, args.n).await?;
    let cw = if args.cold_worker && args.cold > 0 { Some(cold_worker(&cmd, args.cold).await?) } else { None };
    let cf = if args.cold_file && args.cold > 0 { Some(cold_file(&cmd, args.cold).await?) } else { None };

    let warm_med = median(&w.times);
    let warm_p90 = percentile(&w.times, 90.0);
    println!("Warm vs cold check, {} backend ({version}), {}:", cmd.backend.as_str(), utc_now());
    println!();
    println!("| measure | value | notes |");
    println!("| --- | ---: | --- |");
    println!("| warm check, median | {} | {} one-line theorems on one worker, after its first request |", fmt_ms(warm_med), args.n);
    println!("| warm check, p90 | {} | |", fmt_ms(warm_p90));
    println!(
        "| warm check, min / max | {} / {} | {:.1} LSP requests per check |",
        fmt_ms(percentile(&w.times, 0.0)),
        fmt_ms(percentile(&w.times, 100.0)),
        w.lsp_per_request
    );
    println!("| worker start-up | {} | spawn until the (empty) header is elaborated |", fmt_ms(w.startup_ms));
    println!("| first request on a fresh worker | {} | |", fmt_ms(w.first_ms));
    if let Some(cw) = &cw {
        let med = median(&cw.total);
        println!(
            "| cold check, fresh worker per request | {} | median of {}: start-up {} + check {} (medians) |",
            fmt_ms(med),
            cw.total.len(),
            fmt_ms(median(&cw.startup)),
            fmt_ms(median(&cw.check))
        );
        println!("| ratio cold (fresh worker) / warm | {:.0}x | medians |", med / warm_med);
    }
    if let Some(cf) = &cf {
        let med = median(&cf.total);
        println!(
            "| cold check, `lean FILE` per request | {} | median of {} (min {}, max {}); peak RSS {} |",
            fmt_ms(med),
            cf.total.len(),
            fmt_ms(percentile(&cf.total, 0.0)),
            fmt_ms(percentile(&cf.total, 100.0)),
            fmt_gb(cf.peak_rss)
        );
        println!("| ratio cold (`lean FILE`) / warm | {:.0}x | medians |", med / warm_med);
    }
    println!("| worker RSS after {} requests (process) | {} | `VmRSS` |", args.n + 1, fmt_gb(w.rss_proc));
    println!("| worker RSS after {} requests (process group) | {} | sum of `VmRSS` |", args.n + 1, fmt_gb(w.rss_group));
    println!();
    println!("| target (issue 2) | measured | verdict |");
    println!("| --- | ---: | --- |");
    println!("| warm median <= 2 s | {} | {} |", fmt_ms(warm_med), verdict(warm_med <= TARGET_WARM_MEDIAN_MS));
    let rss = w.rss_group.or(w.rss_proc);
    println!(
        "| worker RSS <= 4 GB after 50 requests | {} | {} |",
        fmt_gb(rss),
        verdict(rss.is_some_and(|r| r <= TARGET_RSS_BYTES))
    );
    Ok(())
}
