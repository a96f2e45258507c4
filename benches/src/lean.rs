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
use leanpool_lean::{proc, LeanCommand, Worker, WorkerConfig};
use leanpool_methods::check_on;
use leanpool_protocol::{CheckParams, CheckStatus};
use leanpool_screen::header_key;
use std::process::Stdio;
use std::time::{Duration, Instant};
use support::*;

/// Targets of issue 2 item 6.
const TARGET_WARM_MEDIAN_MS: f64 = 2000.0;
const TARGET_RSS_BYTES: u64 = 4_000_000_000;

/// Command line (see the module docs).
#[derive(clap::Parser)]
struct Args {
    /// Warm checks measured on one worker.
    #[arg(long, default_value_t = 50, value_parser = at_least_one)]
    n: usize,
    /// Cold runs of each kind.
    #[arg(long, default_value_t = 3)]
    cold: usize,
    /// Skip the cold `lean FILE` runs.
    #[arg(long = "no-cold-file", action = clap::ArgAction::SetFalse)]
    cold_file: bool,
    /// Skip the cold fresh-worker runs.
    #[arg(long = "no-cold-worker", action = clap::ArgAction::SetFalse)]
    cold_worker: bool,
    /// Sample the worker's RSS every this many warm checks (0 = only at
    /// the end) and print the series: the growth a recycling limit has to
    /// bound.
    #[arg(long, default_value_t = 0)]
    rss_every: usize,
}

/// Limit for a warm one-line check: one that takes this long means the
/// worker hung (the WASM build hangs when its 2 GiB heap is exhausted),
/// which the bench reports instead of waiting forever.
const WARM_TIMEOUT: Duration = Duration::from_secs(30);
/// Limit for a fresh worker's first check (V8 compiles the code paths).
const FIRST_TIMEOUT: Duration = Duration::from_secs(300);
/// Limit for a whole cold `lean FILE` run (start-up included).
const FILE_TIMEOUT: Duration = Duration::from_secs(900);

/// Checks one statement on `w`: `Ok(Some(ms))` if it is `ok`, `Ok(None)`
/// if it timed out (the worker is then dead). Any other answer is an
/// error: a bench that times wrong answers would be meaningless.
async fn timed_check(w: &mut Worker, text: String, limit: Duration) -> anyhow::Result<Option<f64>> {
    let t = Instant::now();
    let r = check_on(w, &CheckParams::new(text.clone()), limit).await?;
    let elapsed = ms(t.elapsed());
    match r.status {
        CheckStatus::Ok => Ok(Some(elapsed)),
        CheckStatus::Timeout => Ok(None),
        _ => bail!("expected ok for {text:?}, got {r:?}"),
    }
}

/// A worker that stopped answering during the warm series.
struct Hang {
    /// Checks it had answered (its first one included).
    answered: u64,
    /// Group RSS before the check it never answered.
    rss: Option<u64>,
    /// What it last wrote on stderr (one line).
    stderr: String,
}

struct Warm {
    startup_ms: f64,
    first_ms: f64,
    times: Vec<f64>,
    /// Checks answered by the worker alive at the end (first included).
    last_answered: u64,
    rss_proc: Option<u64>,
    rss_group: Option<u64>,
    lsp_per_request: f64,
    hangs: Vec<Hang>,
    /// First requests of replacement workers (after a hang).
    refirst_ms: Vec<f64>,
    /// (checks answered by the current worker, `VmRSS`, peak `VmHWM`, wall ms
    /// of the last `rss_every` checks) every `rss_every` checks.
    rss_series: Vec<(u64, Option<u64>, Option<u64>, f64)>,
}

/// Peak resident set (`VmHWM`) of `pid`.
fn hwm_bytes(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace()
        .nth(1)?
        .parse::<u64>()
        .ok()
        .map(|kb| kb * 1024)
}

async fn start_worker(cmd: &LeanCommand) -> anyhow::Result<(Worker, f64)> {
    wait_for_room(&lean_marker(cmd), 1).await;
    let t = Instant::now();
    let w = Worker::spawn(
        &WorkerConfig::new(cmd.clone()),
        &header_key(&statement("x")),
    )
    .await?;
    let startup = ms(t.elapsed());
    eprintln!("warm: worker {} ready in {}", w.pid(), fmt_ms(startup));
    Ok((w, startup))
}

/// First check on a fresh worker (must answer).
async fn first_check(w: &mut Worker, tag: &str) -> anyhow::Result<f64> {
    timed_check(w, statement(tag), FIRST_TIMEOUT)
        .await?
        .with_context(|| format!("first check timed out\n{}", w.stderr_tail()))
}

/// The hang of worker `w` after `answered` checks (`rss` before the
/// check it never answered), with the last line of its stderr; logged.
fn hang_of(w: &Worker, answered: u64, rss: Option<u64>) -> Hang {
    let tail = w.stderr_tail();
    let line = tail
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
        .to_string();
    eprintln!(
        "warm: worker hung after {answered} checks (RSS {}): {line}",
        fmt_gb(rss)
    );
    Hang {
        answered,
        rss,
        stderr: line,
    }
}

/// `n` warm checks. If the worker hangs, the hang is recorded and the
/// series goes on with a fresh worker (its first check not counted).
async fn warm(cmd: &LeanCommand, n: usize, rss_every: usize) -> anyhow::Result<Warm> {
    let (mut owned, startup_ms) = start_worker(cmd).await?;
    let w = &mut owned;
    let result = async {
        let first_ms = first_check(w, "first").await?;
        eprintln!("warm: first request {}", fmt_ms(first_ms));
        let (mut hangs, mut refirst_ms) = (vec![], vec![]);
        let mut answered = 1u64;
        let mut lsp = (w.lsp_requests(), 0u64);
        let mut times = Vec::with_capacity(n);
        let mut rss_series = vec![(answered, proc::rss_bytes(w.pid()), hwm_bytes(w.pid()), 0.0)];
        let mut i = 0;
        while times.len() < n {
            let rss = w.rss_bytes();
            match timed_check(w, statement(&format!("warm{i}")), WARM_TIMEOUT).await? {
                Some(t) => {
                    times.push(t);
                    answered += 1;
                    if times.len() % 10 == 0 {
                        eprintln!("warm: {} requests, last {}", times.len(), fmt_ms(t));
                    }
                    if rss_every > 0 && times.len() % rss_every == 0 {
                        let wall: f64 = times[times.len() - rss_every..].iter().sum();
                        rss_series.push((
                            answered,
                            proc::rss_bytes(w.pid()),
                            hwm_bytes(w.pid()),
                            wall,
                        ));
                        eprintln!(
                            "warm: {answered} checks, RSS {}",
                            fmt_gb(rss_series.last().unwrap().1)
                        );
                    }
                }
                None => {
                    hangs.push(hang_of(w, answered, rss));
                    lsp.1 += w.lsp_requests() - lsp.0;
                    let fresh = start_worker(cmd).await?.0;
                    std::mem::replace(w, fresh).kill().await;
                    refirst_ms.push(first_check(w, &format!("refirst{i}")).await?);
                    answered = 1;
                    lsp.0 = w.lsp_requests();
                }
            }
            i += 1;
        }
        lsp.1 += w.lsp_requests() - lsp.0;
        let lsp_per_request = lsp.1 as f64 / i as f64;
        Ok::<_, anyhow::Error>(Warm {
            startup_ms,
            first_ms,
            times,
            last_answered: answered,
            rss_proc: proc::rss_bytes(w.pid()),
            rss_group: w.rss_bytes(),
            lsp_per_request,
            hangs,
            refirst_ms,
            rss_series,
        })
    }
    .await;
    owned.kill().await;
    result
}

struct ColdWorker {
    total: Vec<f64>,
    startup: Vec<f64>,
    check: Vec<f64>,
}

async fn cold_worker(cmd: &LeanCommand, n: usize) -> anyhow::Result<ColdWorker> {
    let mut out = ColdWorker {
        total: vec![],
        startup: vec![],
        check: vec![],
    };
    for i in 0..n {
        wait_for_room(&lean_marker(cmd), 1).await;
        let text = statement(&format!("coldw{i}"));
        let t = Instant::now();
        let mut w = Worker::spawn(&WorkerConfig::new(cmd.clone()), &header_key(&text)).await?;
        let startup = ms(t.elapsed());
        let check = timed_check(&mut w, text, FIRST_TIMEOUT).await;
        w.kill().await;
        let check = check?.context("cold check timed out")?;
        let total = ms(t.elapsed());
        eprintln!(
            "cold worker {i}: start-up {}, check {}, total {}",
            fmt_ms(startup),
            fmt_ms(check),
            fmt_ms(total)
        );
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
    let mut out = ColdFile {
        total: vec![],
        peak_rss: None,
    };
    let r = async {
        for i in 0..n {
            wait_for_room(&lean_marker(cmd), 1).await;
            let path = dir.join(format!("Cold{i}.lean"));
            std::fs::write(&path, statement(&format!("coldf{i}")))?;
            let path_s = path.to_str().context("temp path is not UTF-8")?;
            let mut c = cmd.command(&[path_s]);
            c.stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .kill_on_drop(true);
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
            let output = tokio::time::timeout(FILE_TIMEOUT, child.wait_with_output())
                .await
                .context("lean FILE timed out")??;
            let total = ms(t.elapsed());
            proc::kill_group(pid);
            let peak = peak_probe.await.unwrap_or(0);
            out.peak_rss = Some(out.peak_rss.unwrap_or(0).max(peak));
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
            if !output.status.success() || text.contains("error:") {
                bail!(
                    "lean {path_s} failed ({:?}): {}",
                    output.status.code(),
                    text.trim()
                );
            }
            eprintln!(
                "cold file {i}: {} (peak RSS {})",
                fmt_ms(total),
                fmt_gb(Some(peak))
            );
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
    let args = <Args as clap::Parser>::parse();
    let cmd = LeanCommand::detect()?;
    let version = cmd
        .version
        .clone()
        .unwrap_or_else(|| "unknown version".into());
    eprintln!("backend {} ({version})", cmd.backend.as_str());

    let w = warm(&cmd, args.n, args.rss_every).await?;
    let cw = if args.cold_worker && args.cold > 0 {
        Some(cold_worker(&cmd, args.cold).await?)
    } else {
        None
    };
    let cf = if args.cold_file && args.cold > 0 {
        Some(cold_file(&cmd, args.cold).await?)
    } else {
        None
    };

    let warm_med = median(&w.times);
    println!(
        "Warm vs cold check, {} backend ({version}), {}:",
        cmd.backend.as_str(),
        utc_now()
    );
    print_warm_rows(&args, &w);
    print_cold_rows(cw.as_ref(), cf.as_ref(), warm_med);
    print_rss_rows(&args, &w);
    print_targets(&w, warm_med);
    Ok(())
}

/// The table's head and the warm worker's rows.
fn print_warm_rows(args: &Args, w: &Warm) {
    let warm_med = median(&w.times);
    let warm_p90 = percentile(&w.times, 90.0);
    println!();
    println!("| measure | value | notes |");
    println!("| --- | ---: | --- |");
    println!(
        "| warm check, median | {} | {} one-line theorems, after the worker's first request{} |",
        fmt_ms(warm_med),
        args.n,
        if w.hangs.is_empty() {
            "; one worker"
        } else {
            "; a replacement worker after each hang (below)"
        }
    );
    println!("| warm check, p90 | {} | |", fmt_ms(warm_p90));
    println!(
        "| warm check, min / max | {} / {} | {:.1} LSP requests per check |",
        fmt_ms(percentile(&w.times, 0.0)),
        fmt_ms(percentile(&w.times, 100.0)),
        w.lsp_per_request
    );
    println!(
        "| worker start-up | {} | spawn until the (empty) header is elaborated |",
        fmt_ms(w.startup_ms)
    );
    println!(
        "| first request on a fresh worker | {} | |",
        fmt_ms(w.first_ms)
    );
}

/// The cold rows (fresh worker, `lean FILE`) that were run, with their
/// ratio to the warm median.
fn print_cold_rows(cw: Option<&ColdWorker>, cf: Option<&ColdFile>, warm_med: f64) {
    if let Some(cw) = cw {
        let med = median(&cw.total);
        println!(
            "| cold check, fresh worker per request | {} | median of {}: start-up {} + check {} (medians) |",
            fmt_ms(med),
            cw.total.len(),
            fmt_ms(median(&cw.startup)),
            fmt_ms(median(&cw.check))
        );
        println!(
            "| ratio cold (fresh worker) / warm | {:.0}x | medians |",
            med / warm_med
        );
    }
    if let Some(cf) = cf {
        let med = median(&cf.total);
        println!(
            "| cold check, `lean FILE` per request | {} | median of {} (min {}, max {}); peak RSS {} |",
            fmt_ms(med),
            cf.total.len(),
            fmt_ms(percentile(&cf.total, 0.0)),
            fmt_ms(percentile(&cf.total, 100.0)),
            fmt_gb(cf.peak_rss)
        );
        println!(
            "| ratio cold (`lean FILE`) / warm | {:.0}x | medians |",
            med / warm_med
        );
    }
}

/// Hangs, the worker's RSS at the end and, with `--rss-every`, its RSS
/// over its uses.
fn print_rss_rows(args: &Args, w: &Warm) {
    for h in &w.hangs {
        println!(
            "| worker hung after | {} checks | RSS {} before the check it never answered; stderr: `{}`; replaced (first check of the new worker {}) |",
            h.answered,
            fmt_gb(h.rss),
            h.stderr.replace('|', "\\|").replace('`', "'"),
            fmt_ms(w.refirst_ms.first().copied().unwrap_or(f64::NAN))
        );
    }
    println!(
        "| worker RSS after {} checks (process) | {} | `VmRSS` of the worker alive at the end |",
        w.last_answered,
        fmt_gb(w.rss_proc)
    );
    println!(
        "| worker RSS after {} checks (process group) | {} | sum of `VmRSS` |",
        w.last_answered,
        fmt_gb(w.rss_group)
    );
    if args.rss_every > 0 {
        println!();
        println!("RSS of one worker over its uses (`VmRSS`, peak `VmHWM`, summed check time of the last {} checks):", args.rss_every);
        println!();
        println!(
            "| checks answered | RSS | peak RSS | check time of the last {} |",
            args.rss_every
        );
        println!("| ---: | ---: | ---: | ---: |");
        for (n, rss, hwm, wall) in &w.rss_series {
            println!(
                "| {n} | {} | {} | {} |",
                fmt_gb(*rss),
                fmt_gb(*hwm),
                fmt_ms(*wall)
            );
        }
    }
}

/// The targets of issue 2 and their verdicts.
fn print_targets(w: &Warm, warm_med: f64) {
    println!();
    println!("| target (issue 2) | measured | verdict |");
    println!("| --- | ---: | --- |");
    println!(
        "| warm median <= 2 s | {} | {} |",
        fmt_ms(warm_med),
        verdict(warm_med <= TARGET_WARM_MEDIAN_MS)
    );
    // The target is about one worker serving 50 requests: a worker that
    // hung before is a miss whatever its RSS was.
    let rss = w.rss_group.or(w.rss_proc);
    let one_worker_50 = w.hangs.is_empty() && w.last_answered >= 50;
    let figure = match w.hangs.first() {
        Some(h) => format!("hung after {} checks at {}", h.answered, fmt_gb(h.rss)),
        None => format!("{} after {} checks", fmt_gb(rss), w.last_answered),
    };
    println!(
        "| worker RSS <= 4 GB after 50 requests | {figure} | {} |",
        verdict(one_worker_50 && rss.is_some_and(|r| r <= TARGET_RSS_BYTES))
    );
}
