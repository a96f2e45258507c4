//! Shared by the benches: percentiles, formatting, the one-line
//! statements, waiting for memory before starting Lean, and the daemon
//! fixture.

#![allow(dead_code)]

use std::time::Duration;

/// The test kit's daemon fixture (the `leanpool serve` binary next to
/// this bench, or `$LEANPOOL_BIN`) in a temp dir of its own, removed after
/// the daemon stops (drop order: the daemon first).
pub fn start_daemon(
    name: &str,
    config: &str,
) -> anyhow::Result<(leanpool_testkit::daemon::Daemon, tempfile::TempDir)> {
    let dir = tempfile::Builder::new()
        .prefix(&format!("leanpool-bench-{name}-"))
        .tempdir()?;
    let d = leanpool_testkit::daemon::Daemon::try_start(
        dir.path(),
        config,
        leanpool_testkit::daemon::Lean::Real,
    )
    .map_err(anyhow::Error::msg)?;
    Ok((d, dir))
}

/// The statement, one distinct name per request so that no two
/// requests are the same text (Lean could otherwise reuse a snapshot).
pub fn statement(tag: &str) -> String {
    format!("theorem t_{tag} (a b : Nat) : a + b = b + a := by omega\n")
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Nearest-rank percentile (the smallest sample with at least `p` % of
/// the samples at or below it); NaN for no samples.
pub fn percentile(v: &[f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let rank = ((p / 100.0) * s.len() as f64).ceil() as usize;
    s[rank.clamp(1, s.len()) - 1]
}

pub fn median(v: &[f64]) -> f64 {
    percentile(v, 50.0)
}

/// Milliseconds with a precision that suits the magnitude.
pub fn fmt_ms(x: f64) -> String {
    if x.is_nan() {
        "n/a".into()
    } else if x >= 10_000.0 {
        format!("{:.1} s", x / 1000.0)
    } else if x >= 100.0 {
        format!("{x:.0} ms")
    } else if x >= 1.0 {
        format!("{x:.1} ms")
    } else {
        format!("{x:.3} ms")
    }
}

pub fn fmt_gb(bytes: Option<u64>) -> String {
    match bytes {
        Some(b) => format!("{:.2} GB", b as f64 / 1e9),
        None => "n/a".into(),
    }
}

pub fn verdict(pass: bool) -> &'static str {
    if pass {
        "PASS"
    } else {
        "MISS"
    }
}

/// `MemAvailable` from `/proc/meminfo`, in bytes.
pub fn mem_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    Some(line.split_whitespace().nth(1)?.parse::<u64>().ok()? * 1024)
}

/// Live processes whose command line contains `needle`.
pub fn count_processes(needle: &str) -> usize {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).contains(needle))
                .unwrap_or(false)
        })
        .count()
}

/// How many Lean processes may run on this machine at once (the machine is
/// shared; a WASM worker holds 6-7 GB): `LEANPOOL_BENCH_MAX_LEAN`, default 2.
fn max_lean() -> usize {
    std::env::var("LEANPOOL_BENCH_MAX_LEAN")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2)
}

/// Memory one more Lean process needs before it may start.
const NEEDED_PER_LEAN: u64 = 9_000_000_000;

/// Blocks until `needed` more Lean processes fit: fewer than the cap are
/// running (counted by their command line containing `marker`, e.g. the
/// WASM `lean-patched.js`) and enough memory is available. Timings are
/// only meaningful when the bench does not swap or fight for the cores
/// with other Lean processes, so waiting is part of measuring honestly.
pub async fn wait_for_room(marker: &str, needed: usize) {
    let mut said = false;
    loop {
        let running = count_processes(marker);
        let avail = mem_available().unwrap_or(u64::MAX);
        if running + needed <= max_lean() && avail >= NEEDED_PER_LEAN * needed as u64 {
            return;
        }
        if !said {
            eprintln!(
                "waiting for room: {running} Lean process(es) running, {:.1} GB available; need {needed} more",
                avail as f64 / 1e9
            );
            said = true;
        }
        tokio::time::sleep(Duration::from_secs(20)).await;
    }
}

/// What identifies this backend's Lean processes in `/proc/*/cmdline`.
pub fn lean_marker(cmd: &leanpool_lean::LeanCommand) -> String {
    cmd.args
        .first()
        .cloned()
        .unwrap_or_else(|| cmd.program.display().to_string())
}

/// UTC date and time, for the tables' captions (no extra dependency).
pub fn utc_now() -> String {
    let out = std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output();
    match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).trim().to_string(),
        _ => "unknown date".into(),
    }
}

/// Clap value parser for counts that must be at least 1.
pub fn at_least_one(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        Ok(_) => Err("must be at least 1".into()),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let v: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        assert_eq!(
            (
                percentile(&v, 50.0),
                percentile(&v, 90.0),
                percentile(&v, 99.0)
            ),
            (50.0, 90.0, 99.0)
        );
        assert_eq!(percentile(&[7.0], 99.0), 7.0);
        assert!(percentile(&[], 50.0).is_nan());
    }
}
