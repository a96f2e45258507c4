//! Process-group bookkeeping from `/proc`: who is in a worker's group,
//! how much memory they hold, and a bounded log of what they said on
//! stderr.

#![deny(missing_docs)]

use std::collections::VecDeque;
use std::sync::mpsc;
use std::sync::{LazyLock, Mutex};

type SpawnJob = (
    tokio::process::Command,
    tokio::runtime::Handle,
    mpsc::SyncSender<std::io::Result<tokio::process::Child>>,
);

/// The thread every Lean process is forked from. It lives as long as the
/// process, so a child's `PR_SET_PDEATHSIG` (set by
/// [`crate::LeanCommand::command`]) fires when the process dies, not when
/// some test thread or retired runtime thread that happened to spawn it
/// ends.
static SPAWNER: LazyLock<Mutex<mpsc::Sender<SpawnJob>>> = LazyLock::new(|| {
    let (tx, rx) = mpsc::channel::<SpawnJob>();
    std::thread::Builder::new()
        .name("leanpool-spawner".into())
        .spawn(move || {
            for (mut cmd, handle, reply) in rx {
                // tokio's child handling (SIGCHLD / pidfd) needs the
                // caller's runtime. A panic in there (a runtime shutting
                // down) must not end this thread: every later spawn of
                // the process would fail.
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    let _rt = handle.enter();
                    cmd.spawn()
                }))
                .unwrap_or_else(|_| {
                    Err(std::io::Error::other(
                        "spawning panicked (is the caller's runtime shutting down?)",
                    ))
                });
                let _ = reply.send(r);
            }
        })
        .expect("start the spawner thread");
    Mutex::new(tx)
});

/// Spawns `cmd` from the process-lifetime spawner thread (see `SPAWNER`)
/// and returns the child registered with the caller's tokio runtime.
/// Blocks the caller for the fork/exec only (milliseconds). Must be called
/// inside a tokio runtime.
pub fn spawn(cmd: tokio::process::Command) -> std::io::Result<tokio::process::Child> {
    let handle = tokio::runtime::Handle::current();
    let (tx, rx) = mpsc::sync_channel(1);
    SPAWNER
        .lock()
        .unwrap()
        .send((cmd, handle, tx))
        .map_err(|_| std::io::Error::other("the spawner thread is gone"))?;
    rx.recv()
        .map_err(|_| std::io::Error::other("the spawner thread is gone"))?
}

/// Live pids whose process group is `pgid`.
///
/// Zombies are left out: they hold no memory and run nothing, and an
/// orphan's zombie may stay forever where PID 1 does not reap (as in
/// some containers), which must not count as "the group survived".
///
/// Every process of the machine is looked at (a member may have been
/// reparented out of the worker's process tree, so walking the tree would
/// miss it), but by `getpgid(2)`, one system call each; only the members'
/// `/proc/<pid>/stat` is read, for their state. Reading every process's
/// `stat` instead made this scan, run a few times per request by the
/// memory caps, the pool's main cost per request (issue 22, the 64-worker
/// row of the `pool` bench in benches/README.md).
pub fn group_members(pgid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    let mut pids: Vec<u32> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pgid_of(pid) == Some(pgid))
        .filter(|&pid| matches!(stat_of(pid), Some((state, g)) if g == pgid && state != 'Z' && state != 'X'))
        .collect();
    pids.sort_unstable();
    pids
}

/// `getpgid(pid)`: `None` if the process is gone (or not visible).
fn pgid_of(pid: u32) -> Option<u32> {
    let raw = i32::try_from(pid).ok()?;
    nix::unistd::getpgid(Some(nix::unistd::Pid::from_raw(raw)))
        .ok()
        .map(|g| g.as_raw() as u32)
}

/// The process group of `pid`.
pub fn process_group_of(pid: u32) -> Option<u32> {
    stat_of(pid).map(|(_, g)| g)
}

/// State letter and process group from `/proc/<pid>/stat` (fields 3 and
/// 5; the command name in field 2 may contain spaces and parentheses, so
/// fields are counted from the last `)`).
fn stat_of(pid: u32) -> Option<(char, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut rest = stat[stat.rfind(')')? + 1..].split_whitespace();
    let state = rest.next()?.chars().next()?;
    let pgrp = rest.nth(1)?.parse().ok()?;
    Some((state, pgrp))
}

/// Per thread of a process group: nanoseconds spent on a CPU plus
/// nanoseconds spent runnable but waiting for one (`/proc/<pid>/task/<tid>/
/// schedstat`, fields 1 and 2), by thread id. A thread that wants to
/// compute accumulates about the wall time here whatever the machine's
/// load, where CPU time alone would shrink with the share the scheduler
/// gives it. `None` if the group has no members.
pub fn group_thread_demand_ns(pgid: u32) -> Option<std::collections::BTreeMap<u32, u64>> {
    let members = group_members(pgid);
    if members.is_empty() {
        return None;
    }
    let mut out = std::collections::BTreeMap::new();
    for pid in members {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for t in tasks.filter_map(|e| e.ok()) {
            let Some(tid) = t.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(t.path().join("schedstat")) else {
                continue;
            };
            let mut f = stat
                .split_whitespace()
                .map(|x| x.parse::<u64>().unwrap_or(0));
            let (on_cpu, waiting) = (f.next().unwrap_or(0), f.next().unwrap_or(0));
            out.insert(tid, on_cpu.saturating_add(waiting));
        }
    }
    Some(out)
}

/// What the threads of two [`group_thread_demand_ns`] snapshots wanted in
/// between (a thread new in `after` counts from zero), in nanoseconds.
pub fn demand_between(
    before: &std::collections::BTreeMap<u32, u64>,
    after: &std::collections::BTreeMap<u32, u64>,
) -> u64 {
    after
        .iter()
        .map(|(tid, a)| a.saturating_sub(before.get(tid).copied().unwrap_or(0)))
        .sum()
}

/// CPU time (user + system, all threads, `/proc/<pid>/stat` fields 14
/// and 15 at Linux's 100 ticks per second) used so far by the members of
/// a process group. `None` if the group has no members.
pub fn group_cpu_time(pgid: u32) -> Option<std::time::Duration> {
    let members = group_members(pgid);
    if members.is_empty() {
        return None;
    }
    let ticks: u64 = members
        .iter()
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/stat")).ok())
        .map(|stat| {
            // Fields after the command name, which may hold spaces.
            let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
            let f: Vec<u64> = rest
                .split_whitespace()
                .map(|x| x.parse().unwrap_or(0))
                .collect();
            // `rest` starts at field 3 (state): utime is field 14.
            f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0)
        })
        .sum();
    Some(std::time::Duration::from_millis(ticks * 10))
}

/// Resident set size of one process in bytes (`VmRSS`).
pub fn rss_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Sum of `VmRSS` over a process group (`None` if it has no members).
pub fn group_rss_bytes(pgid: u32) -> Option<u64> {
    let members = group_members(pgid);
    if members.is_empty() {
        return None;
    }
    Some(members.into_iter().filter_map(rss_bytes).sum())
}

/// The one measure of a worker's memory: the resident set of its whole
/// process group (Lean, or Node running the WASM Lean, and anything they
/// started), if it is above `cap`. Every memory cap (the pool's slots,
/// leases, `leanpool lsp`'s documents) is checked with this, and caps are
/// computed from [`worker_rss_bytes`], the same measure.
pub fn memory_over(pgid: u32, cap: Option<u64>) -> Option<u64> {
    let cap = cap?;
    worker_rss_bytes(pgid).filter(|&rss| rss > cap)
}

/// A worker's memory as [`memory_over`] measures it (the group's `VmRSS`
/// sum).
pub fn worker_rss_bytes(pgid: u32) -> Option<u64> {
    group_rss_bytes(pgid)
}

/// The limits a leased worker runs under, watched in one place by whoever
/// holds the lease (the daemon's tunnel, `leanpool lsp`'s documents): its
/// memory cap ([`memory_over`]) and a CPU budget counted from when the
/// lease began (the worker's start-up is not the holder's).
#[derive(Clone, Debug)]
pub struct LeaseWatch {
    pgid: u32,
    rss_cap: Option<u64>,
    cpu_budget: std::time::Duration,
    cpu_at_start: std::time::Duration,
}

impl LeaseWatch {
    /// Starts watching the worker of process group `pgid` now.
    pub fn start(pgid: u32, rss_cap: Option<u64>, cpu_budget: std::time::Duration) -> Self {
        LeaseWatch {
            pgid,
            rss_cap,
            cpu_budget,
            cpu_at_start: group_cpu_time(pgid).unwrap_or_default(),
        }
    }

    /// Why the worker must be killed now, if it must: over its memory cap,
    /// or past the lease's CPU budget.
    pub fn exceeded(&self) -> Option<String> {
        if let Some(rss) = memory_over(self.pgid, self.rss_cap) {
            let cap = self.rss_cap.unwrap_or_default();
            return Some(format!(
                "the worker exceeded the memory limit, {rss} > {cap} bytes resident, and was killed"
            ));
        }
        let used = group_cpu_time(self.pgid)?.saturating_sub(self.cpu_at_start);
        (used > self.cpu_budget).then(|| {
            format!(
                "the worker used {} ms of CPU during the lease, past its budget of {} ms (lease_cpu_ms), and was killed",
                used.as_millis(),
                self.cpu_budget.as_millis()
            )
        })
    }
}

/// SIGKILL a whole process group; a group that is already gone is fine.
pub fn kill_group(pgid: u32) {
    use nix::sys::signal::{killpg, Signal};
    use nix::unistd::Pid;
    let _ = killpg(Pid::from_raw(pgid as i32), Signal::SIGKILL);
}

/// The last `capacity` bytes written to it: a worker's stderr, kept so a
/// crash report can say what Lean printed before dying without letting a
/// chatty process grow memory without bound.
#[derive(Debug)]
pub struct RingLog {
    buf: VecDeque<u8>,
    capacity: usize,
    /// Total bytes ever written (so a reader can tell the log was cut).
    pub total: u64,
}

impl RingLog {
    /// An empty log keeping at most `capacity` bytes.
    pub fn new(capacity: usize) -> Self {
        RingLog {
            buf: VecDeque::with_capacity(capacity.min(1 << 16)),
            capacity,
            total: 0,
        }
    }

    /// Appends bytes, dropping the oldest beyond the capacity.
    pub fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let bytes = &bytes[bytes.len().saturating_sub(self.capacity)..];
        let overflow = (self.buf.len() + bytes.len()).saturating_sub(self.capacity);
        self.buf.drain(..overflow);
        self.buf.extend(bytes);
    }

    /// The kept bytes as text (lossy: the cut may split a character).
    pub fn tail(&self) -> String {
        let (a, b) = self.buf.as_slices();
        let mut v = a.to_vec();
        v.extend_from_slice(b);
        String::from_utf8_lossy(&v).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spinning_thread_demands_about_the_wall_time() {
        // This test process leads no process group of its own necessarily:
        // use the group it is in (the test harness's other threads idle).
        let me = std::process::id();
        let pgid = process_group_of(me).unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let s2 = stop.clone();
        let spinner = std::thread::spawn(move || {
            let mut x = 0u64;
            while !s2.load(std::sync::atomic::Ordering::Relaxed) {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
        });
        std::thread::sleep(std::time::Duration::from_millis(20));
        let before = group_thread_demand_ns(pgid).expect("own group readable");
        std::thread::sleep(std::time::Duration::from_millis(300));
        let after = group_thread_demand_ns(pgid).unwrap();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        spinner.join().unwrap();
        // One thread runnable throughout: on a CPU or waiting for one,
        // ~300 ms whatever the load (the sleeping threads add ~nothing).
        let d = demand_between(&before, &after);
        assert!(d >= 200_000_000, "{d} ns");
        assert!(group_thread_demand_ns(u32::MAX).is_none());
    }

    #[test]
    fn ring_keeps_the_tail() {
        let mut r = RingLog::new(8);
        r.push(b"hello ");
        r.push(b"world");
        assert_eq!(r.tail(), "lo world");
        r.push(b"0123456789abc");
        assert_eq!(r.tail(), "56789abc");
        assert_eq!(r.total, 24);
        let mut r = RingLog::new(0);
        r.push(b"x");
        assert_eq!(r.tail(), "");
    }

    #[test]
    fn a_member_reparented_out_of_the_tree_is_still_found() {
        use std::os::unix::process::CommandExt;
        // A shell leading a new group starts `sleep` in the background and
        // exits: the sleep is orphaned (no longer below the leader) but
        // stays in the group, holding memory the caps must count.
        let mut sh = std::process::Command::new("sh")
            .args(["-c", "sleep 30 >/dev/null & echo $!"])
            .stdout(std::process::Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        let pgid = sh.id();
        let mut out = String::new();
        std::io::Read::read_to_string(sh.stdout.as_mut().unwrap(), &mut out).unwrap();
        sh.wait().unwrap();
        let sleep: u32 = out.trim().parse().unwrap();
        let members = group_members(pgid);
        kill_group(pgid);
        assert_eq!(
            members,
            vec![sleep],
            "the reaped leader is gone, its orphan stays"
        );
        assert!(group_members(u32::MAX).is_empty());
    }

    #[test]
    fn own_process_is_in_its_group() {
        let me = std::process::id();
        let pgid = process_group_of(me).unwrap();
        assert!(group_members(pgid).contains(&me));
        assert!(rss_bytes(me).unwrap() > 0);
        assert!(group_rss_bytes(pgid).unwrap() >= rss_bytes(me).unwrap());
    }
}
