//! The machine-wide worker total over a daemon's projects (issue 25) as a
//! HARD cap: more projects than the total has places, concurrent requests
//! to all of them, leases counted too; the worker processes alive are
//! counted from `/proc` during the whole run.
//!
//! A scale simulation, so the workers are leanpool-testkit's FAKE Lean
//! (`leanpool_testkit::fake_lean`: it starts in milliseconds and sleeps
//! on request); real Lean takes 20-35 s and ~4 GB per worker, which is the
//! reason for the cap and the reason it cannot be driven through dozens
//! of evictions here. Projects on real Lean: `leanpool`'s `projects_lean`.
//! In-process daemon, real Unix socket, real pools and processes.
//!
//! `harness = false`: this executable is also the fake worker
//! (`leanpool_testkit::harness::main`).

use leanpool_daemon::projects::ProjectEntry;
use leanpool_daemon::{DaemonConfig, Lean};
use leanpool_rpc::Client;
use leanpool_testkit::daemon::Daemon;
use leanpool_testkit::harness::{fake_policies, fake_pool_config, Ctx};
use leanpool_testkit::procs;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

/// An in-process daemon serving `projects` projects named `p0`, `p1`, ...
/// (each the backend's own library, so each its own pool), with a
/// machine-wide total of `total` workers.
async fn daemon(cx: &Ctx, projects: usize, total: usize) -> Daemon {
    let pool = leanpool_pool::PoolConfig {
        max_workers: Some(total),
        max_workers_per_key: None,
        max_queue_per_key: 64,
        ..fake_pool_config()
    };
    let config = DaemonConfig {
        shutdown_deadline_ms: 5_000,
        max_leases: 4,
        sandbox: fake_policies().sandbox,
        pool,
        projects: (0..projects)
            .map(|i| ProjectEntry::new(Some(format!("p{i}")), None))
            .collect(),
        ..DaemonConfig::default()
    };
    let lean = Lean::Command(cx.fake_command(&[]));
    Daemon::in_process(cx.dir.path(), lean, config, cx.log()).await
}

/// Samples the worker processes alive (children of this process, not
/// zombies) every 5 ms until dropped; `max()` is the most seen at once.
struct Census {
    max: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl Census {
    fn start() -> Census {
        let (max, stop) = (
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicBool::new(false)),
        );
        let (m, s) = (max.clone(), stop.clone());
        std::thread::spawn(move || {
            while !s.load(Ordering::SeqCst) {
                m.fetch_max(procs::worker_children().len(), Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        Census { max, stop }
    }
    fn max(&self) -> usize {
        self.max.load(Ordering::SeqCst)
    }
}

impl Drop for Census {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

async fn status(socket: &Path) -> Value {
    let c = Client::connect(socket).await.unwrap();
    c.call("status", json!({})).await.unwrap()
}

/// `(pid, marker)` of every text the fake workers elaborated (the fake's
/// log: the text's last line).
fn runs(cx: &Ctx) -> Vec<(u32, String)> {
    cx.log_text()
        .lines()
        .filter_map(|l| {
            let (pid, last) = l.split_once(' ')?;
            Some((pid.parse().ok()?, last.to_string()))
        })
        .collect()
}

/// Five projects, a total of two: 8 concurrent checks to every project
/// (each 150 ms on its worker). Never more than two worker processes
/// alive at once; every request answered once, `ok`, and elaborated once;
/// every project's requests complete (the idle workers of projects whose
/// queue drained are evicted for the others: `status`' `evictions`); no
/// worker serves two projects; `status` shows the total and each
/// project's limit as `borrowed`.
async fn machine_total_caps_workers_over_all_projects(cx: Ctx) {
    const PROJECTS: usize = 5;
    const PER_PROJECT: usize = 8;
    let d = daemon(&cx, PROJECTS, 2).await;
    let census = Census::start();
    let mut tasks = vec![];
    for p in 0..PROJECTS {
        for i in 0..PER_PROJECT {
            let socket = d.socket.clone();
            tasks.push(tokio::spawn(async move {
                let c = Client::connect(&socket).await.unwrap();
                let text = format!("theorem t : True := trivial\n-- FAKE sleep 150\n-- p{p}-r{i}");
                let a = c
                    .call("check", json!({"text": text, "project": format!("p{p}")}))
                    .await;
                (p, i, a)
            }));
        }
    }
    let mut answered = BTreeMap::new();
    for t in tasks {
        let (p, i, a) = tokio::time::timeout(Duration::from_secs(45), t)
            .await
            .expect("every project's requests complete")
            .unwrap();
        let a = a.unwrap_or_else(|e| panic!("p{p}-r{i}: {e}"));
        assert_eq!(a["status"], "ok", "p{p}-r{i}: {a}");
        *answered.entry((p, i)).or_insert(0) += 1;
    }
    assert_eq!(answered.len(), PROJECTS * PER_PROJECT);
    assert!(answered.values().all(|&n| n == 1), "{answered:?}");
    let seen = census.max();
    assert!(seen <= 2, "{seen} worker processes alive at once, total 2");
    assert_eq!(seen, 2, "the total was never used in full");
    elaborated_once_by_one_project_each(&cx, PROJECTS, PER_PROJECT);
    total_and_borrowed_limits_in_status(&status(&d.socket).await, PROJECTS);
    drop(census);
    d.shutdown().await;
    procs::assert_no_workers_left().await;
}

/// Every request (`-- pP-rI`) elaborated exactly once (no retry, no
/// duplicate), and each worker process served one project only.
fn elaborated_once_by_one_project_each(cx: &Ctx, projects: usize, per_project: usize) {
    let runs = runs(cx);
    let mut project_of: BTreeMap<u32, BTreeSet<String>> = BTreeMap::new();
    for p in 0..projects {
        for i in 0..per_project {
            let m = format!("-- p{p}-r{i}");
            let n = runs.iter().filter(|(_, l)| *l == m).count();
            assert_eq!(n, 1, "{m} elaborated {n} times");
        }
    }
    // (The workers' own warm-up texts are not requests.)
    for (pid, l) in runs.iter().filter(|(_, l)| l.starts_with("-- p")) {
        let p = l.trim_start_matches("-- ").split('-').next().unwrap();
        project_of.entry(*pid).or_default().insert(p.to_string());
    }
    assert!(
        project_of.values().all(|ps| ps.len() == 1),
        "a worker served two projects: {project_of:?}"
    );
}

/// `status` shows the total of 2 (configured), at most 2 alive, the
/// evictions that gave every project a worker, and each project's limit
/// as `borrowed`.
fn total_and_borrowed_limits_in_status(st: &Value, projects: usize) {
    let w = &st["workers"];
    assert_eq!(
        w["total"],
        json!({"value": 2, "source": "configured"}),
        "{st}"
    );
    assert!(w["alive"].as_u64().unwrap() <= 2, "{w}");
    assert!(
        w["evictions"].as_u64().unwrap() >= (projects - 2) as u64,
        "projects without a worker got one by eviction: {w}"
    );
    for p in st["projects"].as_array().unwrap() {
        let lim = &p["pool"]["limits"];
        assert_eq!(
            lim["max_workers"],
            json!({"value": 1, "source": "borrowed"}),
            "{lim}"
        );
        assert_eq!(
            lim["total"],
            json!({"value": 2, "source": "configured"}),
            "{lim}"
        );
    }
}

/// A raw connection turned into a lease tunnel for `project`: the leased
/// worker's pid; the lease ends when the stream is dropped.
async fn lease(socket: &Path, project: &str) -> (UnixStream, u32) {
    let mut s = UnixStream::connect(socket).await.unwrap();
    let req = json!({"jsonrpc": "2.0", "id": 1, "method": "lease",
                     "params": {"header": "import Init\n", "project": project}});
    s.write_all(format!("{req}\n").as_bytes()).await.unwrap();
    let mut rd = BufReader::new(&mut s);
    let mut line = String::new();
    tokio::time::timeout(Duration::from_secs(20), rd.read_line(&mut line))
        .await
        .expect("a lease answer in time")
        .unwrap();
    let v: Value = serde_json::from_str(&line).unwrap();
    let pid = v["result"]["pid"]
        .as_u64()
        .unwrap_or_else(|| panic!("lease refused: {v}")) as u32;
    (s, pid)
}

async fn check(socket: &Path, project: &str, mark: &str) -> Value {
    let c = Client::connect(socket).await.unwrap();
    let text = format!("import Init\ntheorem t : True := trivial\n-- {mark}");
    c.call("check", json!({"text": text, "project": project}))
        .await
        .unwrap()
}

/// Leases count against the total: three projects, a total of two. A
/// lease takes a place (evicting the least recently used idle worker of
/// another project when there is none free); with both places leased, a
/// check waits in its queue until a lease ends, then is answered. Never
/// more than two worker processes alive.
async fn leases_count_against_the_machine_total(cx: Ctx) {
    let d = daemon(&cx, 3, 2).await;
    let census = Census::start();
    // p1 then p2 get a worker each (p1's is the least recently used).
    assert_eq!(check(&d.socket, "p1", "first-p1").await["status"], "ok");
    assert_eq!(check(&d.socket, "p2", "first-p2").await["status"], "ok");
    // A lease in p0: no place free, so p1's idle worker goes.
    let (lease_a, pid_a) = lease(&d.socket, "p0").await;
    let st = status(&d.socket).await;
    assert_eq!(st["workers"]["leased"], 1, "{st}");
    assert_eq!(st["workers"]["alive"], 2, "{st}");
    assert_eq!(st["workers"]["evictions"], 1, "{st}");
    assert_eq!(
        st["projects"][1]["pool"]["workers"], 0,
        "p1's idle worker was evicted: {st}"
    );
    // A second lease, in p2, whose worker of these imports has served a
    // text: a fresh process (never that worker), for which p2's own idle
    // worker is evicted.
    let (lease_b, pid_b) = lease(&d.socket, "p2").await;
    assert_ne!(pid_a, pid_b);
    let st = status(&d.socket).await;
    assert_eq!(st["workers"]["evictions"], 2, "{st}");
    assert_eq!(
        st["projects"][2]["pool"]["counters"]["leases_fresh"], 1,
        "{st}"
    );
    assert_eq!(
        (
            st["workers"]["leased"].as_u64(),
            st["workers"]["alive"].as_u64()
        ),
        (Some(2), Some(2)),
        "{st}"
    );
    // Both places leased: a check in p1 waits...
    let socket = d.socket.clone();
    let waiting = tokio::spawn(async move { check(&socket, "p1", "after-lease").await });
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        !waiting.is_finished(),
        "a check got a worker beyond the total"
    );
    assert!(procs::alive(pid_a) && procs::alive(pid_b));
    // ...until a lease ends.
    drop(lease_a);
    let a = tokio::time::timeout(Duration::from_secs(20), waiting)
        .await
        .expect("the waiting check is answered once a lease ended")
        .unwrap();
    assert_eq!(a["status"], "ok", "{a}");
    assert!(!procs::alive(pid_a), "the ended lease's worker is gone");
    let seen = census.max();
    assert!(seen <= 2, "{seen} worker processes alive at once, total 2");
    drop(lease_b);
    drop(census);
    d.shutdown().await;
    procs::assert_no_workers_left().await;
}

fn main() {
    leanpool_testkit::harness::main(leanpool_testkit::tests![
        machine_total_caps_workers_over_all_projects,
        leases_count_against_the_machine_total,
    ]);
}
