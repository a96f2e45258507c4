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
mod tests {
    use super::*;
    use leanpool_daemon::{BackendInfo, DaemonStatus};
    use leanpool_pool::{KeyStatus, MethodLatency, WorkerState, WorkerStatus};

    fn pct(ms: f64) -> Percentiles {
        Percentiles {
            samples: 3,
            p50_ms: ms,
            p90_ms: ms * 2.0,
            p99_ms: ms * 3.0,
            max_ms: ms * 3.0,
        }
    }

    #[test]
    fn table_shows_workers_latency_and_counters() {
        let mut s = StatusResult {
            daemon: DaemonStatus {
                version: "0.1.0".into(),
                pid: 7,
                uptime_ms: 3_723_000,
                socket: "/tmp/s".into(),
                backend: BackendInfo {
                    kind: leanpool_protocol::BackendInfoKind::Wasm,
                    version: Some("Lean 4".into()),
                    ..BackendInfo::unavailable(String::new())
                },
                verdict: None,
                leases: None,
            },
            cache: None,
            projects: vec![],
            workers: None,
            pool: PoolStatus {
                keys: vec![
                    KeyStatus {
                        header: String::new(),
                        caller: None,
                        min: 0,
                        queue_depth: 2,
                        workers: vec![],
                        spares: 0,
                        spare_missing: None,
                    },
                    KeyStatus {
                        caller: None,
                        header:
                            "import Mathlib\nopen Real Nat Topology ∀ very long header that goes on"
                                .into(),
                        min: 1,
                        queue_depth: 0,
                        workers: vec![
                            WorkerStatus {
                                id: 1,
                                pid: Some(4242),
                                state: WorkerState::Busy,
                                uses: 12,
                                rss_bytes: Some(6 << 30),
                                rss_cap_bytes: Some(7 << 30),
                                spare: false,
                            },
                            WorkerStatus {
                                id: 2,
                                pid: None,
                                state: WorkerState::Starting,
                                uses: 0,
                                rss_bytes: None,
                                rss_cap_bytes: None,
                                spare: true,
                            },
                        ],
                        spares: 1,
                        spare_missing: Some("memory short: 100 MB available".into()),
                    },
                ],
                workers: 2,
                max_workers: 2,
                limits: None,
                max_uses: 30,
                spares_per_key: 1,
                latency: vec![MethodLatency {
                    method: "check".into(),
                    requests: 3,
                    total: pct(200.0),
                    service: None,
                }],
                counters: leanpool_pool::Counters {
                    requests: 3,
                    timeouts: 1,
                    ..Default::default()
                },
                shutting_down: false,
            },
        };
        let t = human(&s);
        assert!(
            t.contains("up 1h02m") && t.contains("backend wasm  Lean 4"),
            "{t}"
        );
        assert!(
            t.contains("workers 2/2 (recycled after 30 uses, 1 spare(s) per header)"),
            "{t}"
        );
        assert!(
            t.contains("spare:star") && t.contains("no spare: memory short: 100 MB available"),
            "{t}"
        );
        assert!(!t.contains("library") && !t.contains("sandbox"), "{t}");
        assert!(
            t.contains("(empty header)") && t.contains("(no workers)"),
            "{t}"
        );
        assert!(t.contains("import Mathlib open Real Nat Topolo…"), "{t}");
        assert!(
            t.contains("4242") && t.contains("busy") && t.contains("6.0 GiB"),
            "{t}"
        );
        assert!(t.contains("RSS CAP") && t.contains("7.0 GiB"), "{t}");
        assert!(t.contains("200.0 / 400.0 / 600.0"), "{t}");
        assert!(t.contains("counters: requests 3, timeouts 1"), "{t}");
        s.pool.keys.clear();
        s.pool.latency.clear();
        s.pool.counters = Default::default();
        assert!(human(&s).contains("counters: all zero"));
        assert!(!human(&s).contains("limits"));
        // The worker limits, with where each came from.
        s.pool.limits = Some(leanpool_protocol::WorkerLimits {
            max_workers: leanpool_protocol::WorkerLimit {
                value: 3,
                source: LimitSource::Memory,
            },
            max_workers_per_key: leanpool_protocol::WorkerLimit {
                value: 1,
                source: LimitSource::Configured,
            },
            cores: 8,
            memory_bytes: Some(17 << 30),
            worker_bytes: 11 << 29,
            worker_rss: "measured".into(),
            by_memory: None,
            total: None,
        });
        assert!(
            human(&s).contains(
                "limits max_workers 3 (memory), max_workers_per_key 1 (configured); 8 cores, 17.0 GiB available, 5.5 GiB per worker (measured)\n"
            ),
            "{}",
            human(&s)
        );
        // Provenance lines, when the daemon reports them.
        s.daemon.backend.library = Some(leanpool_protocol::LibraryIdentity {
            kind: "oleans".into(),
            mathlib_rev: None,
            manifest: None,
            oleans_sha256: Some("ab12".into()),
            olean_files: Some(3),
        });
        s.daemon.backend.sandbox = Some(leanpool_daemon::SandboxInfo {
            mode: "required".into(),
            summary: "required (Landlock ABI 7): fs".into(),
            available: true,
        });
        let t = human(&s);
        assert!(
            t.contains("library oleans sha256 ab12 (3 .olean files on LEAN_PATH)"),
            "{t}"
        );
        assert!(t.contains("sandbox required (Landlock ABI 7): fs\n"), "{t}");
        s.daemon.backend.sandbox.as_mut().unwrap().available = false;
        assert!(human(&s).contains("WORKERS CANNOT START"));
        // Leases, when the daemon reports them.
        assert!(!human(&s).contains("leases"));
        s.daemon.leases = Some(leanpool_protocol::LeaseStatus {
            active: 1,
            max: 2,
            granted: 5,
            refused_texts: 0,
            compromised: 1,
        });
        let t = human(&s);
        assert!(
            t.contains("leases 1/2 (5 granted, 1 workers killed as compromised)\n"),
            "{t}"
        );
        assert!(!t.contains("refused"), "{t}");
        s.daemon.leases = Some(leanpool_protocol::LeaseStatus {
            active: 0,
            max: 0,
            granted: 0,
            refused_texts: 3,
            compromised: 0,
        });
        assert!(human(&s)
            .contains("leases 0/0 (0 granted, 3 texts refused by the guard)  leasing off\n"));
        // Projects (issue 25): one line each when there are two or more.
        assert!(!human(&s).contains("project "));
        let project = |name: &str, root: Option<&str>| leanpool_protocol::ProjectStatus {
            name: name.into(),
            root: root.map(str::to_string),
            backend: s.daemon.backend.clone(),
            pool: s.pool.clone(),
        };
        s.projects = vec![project("core", None), project("judge", Some("/srv/judge"))];
        // judge's max_workers comes from its own `[[project]]` table.
        let judge_limits = s.projects[1].pool.limits.as_mut().unwrap();
        judge_limits.max_workers.source = LimitSource::Project;
        // core's is a share of a memory-bound total (issue 22 part 4).
        let core_limits = s.projects[0].pool.limits.as_mut().unwrap();
        core_limits.max_workers.source = LimitSource::Shared;
        core_limits.by_memory = Some(3);
        core_limits.total = Some(leanpool_protocol::WorkerLimit {
            value: 3,
            source: LimitSource::Memory,
        });
        let t = human(&s);
        let core_line = limits(s.projects[0].pool.limits.as_ref().unwrap());
        assert!(
            core_line.contains("max_workers 3 (shared of 3, bound by memory), ")
                && core_line.contains("17.0 GiB available (3 workers)"),
            "{core_line}"
        );
        assert!(
            t.contains("project core (default)  Lean 4  library oleans sha256 ab12 (3 .olean files on LEAN_PATH)  workers 2/2 (shared of 3, bound by memory)\n"),
            "{t}"
        );
        assert!(t.contains("project judge  /srv/judge  Lean 4"), "{t}");
        assert!(t.contains("workers 2/2 (project)\n"), "{t}");
        // The machine-wide total over all projects (issue 25).
        s.workers = Some(leanpool_protocol::WorkerTotal {
            total: leanpool_protocol::WorkerLimit {
                value: 2,
                source: LimitSource::Configured,
            },
            alive: 2,
            leased: 1,
            evictions: 4,
        });
        assert!(
            human(&s)
                .contains("all projects: workers 2/2 (configured), 1 leased, 4 evicted for room\n"),
            "{}",
            human(&s)
        );
    }
}
