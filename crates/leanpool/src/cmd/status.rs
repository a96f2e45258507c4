//! `leanpool status --socket PATH [--json]`: a running daemon's pool.

use anyhow::Context;
use leanpool_daemon::StatusResult;
use leanpool_pool::{Percentiles, PoolStatus};
use leanpool_protocol::method::{self, NoParams};
use leanpool_protocol::LimitSource;
use leanpool_rpc::Client;
use std::fmt::Write;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// The daemon's Unix socket.
    #[arg(long, value_name = "PATH")]
    pub socket: PathBuf,
    /// Print the `status` result as JSON (the RPC's own shape).
    #[arg(long)]
    pub json: bool,
}

pub async fn run(args: Args) -> anyhow::Result<i32> {
    let client = Client::connect(&args.socket).await.with_context(|| {
        format!(
            "is `leanpool serve --socket {}` running?",
            args.socket.display()
        )
    })?;
    let s = client.request::<method::Status>(&NoParams).await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&s)?);
    } else {
        print!("{}", human(&s));
    }
    Ok(0)
}

/// One line per project when the daemon serves more than one (issue 25):
/// name, root, Lean version, library, workers; the default first.
fn projects(o: &mut String, s: &StatusResult) {
    if s.projects.len() < 2 {
        return;
    }
    for (i, p) in s.projects.iter().enumerate() {
        let _ = write!(
            o,
            "project {}{}",
            p.name,
            if i == 0 { " (default)" } else { "" }
        );
        if let Some(r) = &p.root {
            let _ = write!(o, "  {r}");
        }
        if let Some(v) = &p.backend.version {
            let _ = write!(o, "  {v}");
        }
        match (&p.backend.library, &p.backend.library_error) {
            (Some(l), _) => {
                let _ = write!(o, "  library {}", library(l));
            }
            (None, Some(e)) => {
                let _ = write!(o, "  library unknown ({e})");
            }
            (None, None) => {}
        }
        let _ = write!(o, "  workers {}/{}", p.pool.workers, p.pool.max_workers);
        match &p.pool.limits {
            // Where the project's limit came from (its own, a share, ...).
            Some(l) => {
                let _ = writeln!(o, " ({})", max_workers_source(l));
            }
            None => o.push('\n'),
        }
    }
    if let Some(w) = &s.workers {
        // The hard cap over every project (leases included).
        let _ = writeln!(
            o,
            "all projects: workers {}/{} ({}), {} leased, {} evicted for room",
            w.alive,
            w.total.value,
            source_name(w.total.source),
            w.leased,
            w.evictions
        );
    }
}

/// A compact report: daemon line, one row per worker, latency table,
/// non-zero counters.
pub fn human(s: &StatusResult) -> String {
    let mut o = String::new();
    daemon_lines(&mut o, s);
    pool_lines(&mut o, &s.pool);
    worker_table(&mut o, &s.pool);
    latency_table(&mut o, &s.pool);
    counters_line(&mut o, &s.pool);
    o
}

/// The daemon's lines: version, backend, cache, library, projects,
/// sandbox, leases.
fn daemon_lines(o: &mut String, s: &StatusResult) {
    let d = &s.daemon;
    let p: &PoolStatus = &s.pool;
    let _ = writeln!(
        o,
        "leanpool {}  pid {}  up {}  socket {}",
        d.version,
        d.pid,
        uptime(d.uptime_ms),
        d.socket
    );
    let _ = write!(o, "backend {}", d.backend.kind);
    if let Some(v) = &d.backend.version {
        let _ = write!(o, "  {v}");
    }
    if let Some(e) = &d.backend.error {
        let _ = write!(o, "  ({e})");
    }
    let _ = writeln!(o);
    if let Some(c) = &s.cache {
        o.push_str(&super::cache::human(c));
    }
    // Provenance: what judged the answers.
    if let Some(l) = &d.backend.library {
        let _ = writeln!(o, "library {}", library(l));
    } else if let Some(e) = &d.backend.library_error {
        let _ = writeln!(o, "library unknown ({e})");
    }
    projects(o, s);
    if let Some(sb) = &d.backend.sandbox {
        let _ = writeln!(
            o,
            "sandbox {}{}",
            sb.summary,
            if sb.available {
                ""
            } else {
                "  WORKERS CANNOT START"
            }
        );
    }
    if let Some(l) = &d.leases {
        // Editor leases (`leanpool lsp --socket`): each holds a whole worker
        // outside the pool's count.
        let _ = write!(o, "leases {}/{} ({} granted", l.active, l.max, l.granted);
        // Where leased workers came from: never a worker that served the
        // pool's traffic (issue 26).
        let c = &p.counters;
        if c.leases_pristine + c.leases_fresh > 0 {
            let _ = write!(
                o,
                ": {} pristine, {} started for the lease",
                c.leases_pristine, c.leases_fresh
            );
        }
        if l.refused_texts > 0 {
            let _ = write!(o, ", {} texts refused by the guard", l.refused_texts);
        }
        if l.compromised > 0 {
            let _ = write!(o, ", {} workers killed as compromised", l.compromised);
        }
        let _ = writeln!(o, "){}", if l.max == 0 { "  leasing off" } else { "" });
    }
}

/// The pool's worker count, recycling, spares and limits.
fn pool_lines(o: &mut String, p: &PoolStatus) {
    let recycle = if p.max_uses == 0 {
        "never recycled".to_string()
    } else {
        format!("recycled after {} uses", p.max_uses)
    };
    let _ = writeln!(
        o,
        "workers {}/{} ({recycle}, {} spare(s) per header){}",
        p.workers,
        p.max_workers,
        p.spares_per_key,
        if p.shutting_down {
            "  SHUTTING DOWN"
        } else {
            ""
        }
    );
    if let Some(l) = &p.limits {
        let _ = writeln!(o, "limits {}", limits(l));
    }
}

/// One row per worker, by header.
fn worker_table(o: &mut String, p: &PoolStatus) {
    if !p.keys.is_empty() {
        let _ = writeln!(
            o,
            "\n{:<36} {:>3} {:>5}  {:>4} {:>8} {:<8} {:>6} {:>9} {:>9}",
            "HEADER", "MIN", "QUEUE", "SLOT", "PID", "STATE", "USES", "RSS", "RSS CAP"
        );
        for k in &p.keys {
            let header = short(&k.header, 36);
            if k.workers.is_empty() {
                let _ = writeln!(
                    o,
                    "{header:<36} {:>3} {:>5}  (no workers)",
                    k.min, k.queue_depth
                );
            }
            for (i, w) in k.workers.iter().enumerate() {
                let (h, min, q) = if i == 0 {
                    (
                        header.as_str(),
                        k.min.to_string(),
                        k.queue_depth.to_string(),
                    )
                } else {
                    ("", String::new(), String::new())
                };
                let pid = w.pid.map_or("-".into(), |p| p.to_string());
                let rss = w.rss_bytes.map_or("-".into(), bytes);
                let cap = w.rss_cap_bytes.map_or("-".into(), bytes);
                let state = format!("{:?}", w.state).to_lowercase();
                let state = if w.spare {
                    format!("spare:{}", &state[..state.len().min(4)])
                } else {
                    state
                };
                let _ = writeln!(
                    o,
                    "{h:<36} {min:>3} {q:>5}  {:>4} {pid:>8} {state:<8} {:>6} {rss:>9} {cap:>9}",
                    w.id, w.uses
                );
            }
            if let Some(why) = &k.spare_missing {
                let _ = writeln!(o, "{:<36} no spare: {why}", "");
            }
        }
    }
}

/// Latency percentiles per method.
fn latency_table(o: &mut String, p: &PoolStatus) {
    if !p.latency.is_empty() {
        let _ = writeln!(
            o,
            "\n{:<10} {:>8}  {:>30}  {:>30}",
            "METHOD", "REQUESTS", "TOTAL p50/p90/p99 ms", "ON WORKER p50/p90/p99 ms"
        );
        for l in &p.latency {
            let svc = l.service.as_ref().map_or("-".into(), pct);
            let _ = writeln!(
                o,
                "{:<10} {:>8}  {:>30}  {:>30}",
                l.method,
                l.requests,
                pct(&l.total),
                svc
            );
        }
    }
}

/// The non-zero counters.
fn counters_line(o: &mut String, p: &PoolStatus) {
    let c = serde_json::to_value(&p.counters).unwrap_or_default();
    let nonzero: Vec<String> = c
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(_, v)| v.as_u64().is_some_and(|n| n > 0))
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    let _ = writeln!(
        o,
        "\ncounters: {}",
        if nonzero.is_empty() {
            "all zero".into()
        } else {
            nonzero.join(", ")
        }
    );
}

/// A limit's source as `status` and `doctor` print it (the wire's word).
fn source_name(s: LimitSource) -> &'static str {
    match s {
        LimitSource::Configured => "configured",
        LimitSource::Cores => "cores",
        LimitSource::Memory => "memory",
        LimitSource::Project => "project",
        LimitSource::Shared => "shared",
        LimitSource::Borrowed => "borrowed",
    }
}

/// Where `max_workers` came from: its source, and for a project's or
/// shared value the machine-wide total and what bound it (issue 22 part
/// 4): `shared of 2, bound by memory`.
fn max_workers_source(l: &leanpool_protocol::WorkerLimits) -> String {
    let src = source_name(l.max_workers.source);
    match l.total {
        Some(t) => format!("{src} of {}, bound by {}", t.value, source_name(t.source)),
        None => src.to_string(),
    }
}

/// The worker limits in force and where each came from (`status` and
/// `doctor`): `max_workers 2 (cores), max_workers_per_key 2
/// (cores); 2 cores, 21.9 GiB available (3 workers), 5.5 GiB per worker
/// (estimate)`.
pub fn limits(l: &leanpool_protocol::WorkerLimits) -> String {
    let src = source_name;
    let mem = l
        .memory_bytes
        .map_or("memory unreadable".to_string(), |m| match l.by_memory {
            Some(n) => format!("{} available ({n} workers)", bytes(m)),
            None => format!("{} available", bytes(m)),
        });
    format!(
        "max_workers {} ({}), max_workers_per_key {} ({}); {} cores, {mem}, {} per worker ({})",
        l.max_workers.value,
        max_workers_source(l),
        l.max_workers_per_key.value,
        src(l.max_workers_per_key.source),
        l.cores,
        bytes(l.worker_bytes),
        l.worker_rss
    )
}

/// A library identity on one line (also used by `doctor`).
pub fn library(l: &leanpool_protocol::LibraryIdentity) -> String {
    match (&l.mathlib_rev, &l.oleans_sha256) {
        (Some(rev), _) => format!(
            "Mathlib {rev} (from {})",
            l.manifest.as_deref().unwrap_or("?")
        ),
        (None, Some(sha)) => format!(
            "oleans sha256 {sha} ({} .olean files on LEAN_PATH)",
            l.olean_files.unwrap_or(0)
        ),
        (None, None) => l.kind.clone(),
    }
}

fn pct(p: &Percentiles) -> String {
    format!("{:.1} / {:.1} / {:.1}", p.p50_ms, p.p90_ms, p.p99_ms)
}

/// The header on one line, cut to `n` characters.
fn short(h: &str, n: usize) -> String {
    let one = if h.trim().is_empty() {
        "(empty header)".to_string()
    } else {
        h.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    if one.chars().count() <= n {
        one
    } else {
        one.chars()
            .take(n - 1)
            .chain(std::iter::once('…'))
            .collect()
    }
}

fn bytes(b: u64) -> String {
    match b {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.0} MiB", b as f64 / (1u64 << 20) as f64),
        b => format!("{} KiB", b >> 10),
    }
}

fn uptime(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        s if s >= 3600 => format!("{}h{:02}m", s / 3600, s / 60 % 60),
        s if s >= 60 => format!("{}m{:02}s", s / 60, s % 60),
        s => format!("{s}s"),
    }
}

#[cfg(test)]
mod tests;
