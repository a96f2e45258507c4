//! Finding this test process's worker processes in `/proc`, to prove the
//! pool leaves none behind (Linux only, as leanpool is).

use std::time::Duration;

/// (pid, ppid, state) from `/proc/<pid>/stat`.
fn stat(pid: u32) -> Option<(u32, char)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 1..];
    let mut f = rest.split_whitespace();
    let state = f.next()?.chars().next()?;
    let ppid = f.next()?.parse().ok()?;
    Some((ppid, state))
}

/// Running (not zombie) processes whose parent is this test process: the
/// pool's workers (the test starts no other children).
pub fn worker_children() -> Vec<u32> {
    let me = std::process::id();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| matches!(stat(pid), Some((ppid, st)) if ppid == me && st != 'Z'))
        .collect()
}

/// The process exists and is not a zombie.
pub fn alive(pid: u32) -> bool {
    matches!(stat(pid), Some((_, st)) if st != 'Z')
}

/// Waits (up to 30 s: a SIGKILLed multi-GB process needs a moment to go,
/// longer on a loaded 2-core machine; `pool_lean` once failed the earlier
/// 10 s bound under load, cause not established) until no worker child is
/// running; panics otherwise, naming each one's parent and state.
pub async fn assert_no_workers_left() {
    for _ in 0..600 {
        if worker_children().is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let left: Vec<(u32, Option<(u32, char)>)> = worker_children()
        .into_iter()
        .map(|p| (p, stat(p)))
        .collect();
    panic!("worker processes left behind (pid, (ppid, state)): {left:?}");
}

/// Cleanup between tests: SIGKILL whatever children remain.
pub fn kill_all_workers() {
    for pid in worker_children() {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// Soft `RLIMIT_AS` of `pid` (`None` = unlimited).
pub fn address_space_limit(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
    let line = text.lines().find(|l| l.starts_with("Max address space"))?;
    line["Max address space".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}
