//! `leanpool status`' human form, on a hand-built status.

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
    let mut s = sample();
    workers_latency_and_counters(&mut s);
    counters_all_zero(&mut s);
    worker_limits(&mut s);
    provenance(&mut s);
    leases(&mut s);
    projects(&mut s);
    machine_total(&mut s);
}

/// A daemon with two headers, one worker busy and a spare starting.
fn sample() -> StatusResult {
    StatusResult {
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
    }
}

/// The header, the worker table, latencies and counters of a daemon with two headers.
fn workers_latency_and_counters(s: &mut StatusResult) {
    let t = human(s);
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
}

/// An empty pool: counters all zero, no limits line.
fn counters_all_zero(s: &mut StatusResult) {
    s.pool.keys.clear();
    s.pool.latency.clear();
    s.pool.counters = Default::default();
    assert!(human(s).contains("counters: all zero"));
    assert!(!human(s).contains("limits"));
}

/// The worker limits, with where each came from.
fn worker_limits(s: &mut StatusResult) {
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
        human(s).contains(
            "limits max_workers 3 (memory), max_workers_per_key 1 (configured); 8 cores, 17.0 GiB available, 5.5 GiB per worker (measured)\n"
        ),
        "{}",
        human(s)
    );
}

/// Provenance lines (library, sandbox), when the daemon reports them.
fn provenance(s: &mut StatusResult) {
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
    let t = human(s);
    assert!(
        t.contains("library oleans sha256 ab12 (3 .olean files on LEAN_PATH)"),
        "{t}"
    );
    assert!(t.contains("sandbox required (Landlock ABI 7): fs\n"), "{t}");
    s.daemon.backend.sandbox.as_mut().unwrap().available = false;
    assert!(human(s).contains("WORKERS CANNOT START"));
}

/// Leases, when the daemon reports them.
fn leases(s: &mut StatusResult) {
    // Leases, when the daemon reports them.
    assert!(!human(s).contains("leases"));
    s.daemon.leases = Some(leanpool_protocol::LeaseStatus {
        active: 1,
        max: 2,
        granted: 5,
        refused_texts: 0,
        compromised: 1,
    });
    let t = human(s);
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
    assert!(
        human(s).contains("leases 0/0 (0 granted, 3 texts refused by the guard)  leasing off\n")
    );
}

/// Projects (issue 25): one line each when there are two or more.
fn projects(s: &mut StatusResult) {
    // Projects (issue 25): one line each when there are two or more.
    assert!(!human(s).contains("project "));
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
    let t = human(s);
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
}

/// The machine-wide total over all projects (issue 25).
fn machine_total(s: &mut StatusResult) {
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
        human(s).contains("all projects: workers 2/2 (configured), 1 leased, 4 evicted for room\n"),
        "{}",
        human(s)
    );
}
