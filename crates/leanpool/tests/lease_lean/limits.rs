//! The lease's bounds in time through a real lease: the per-request
//! time limit and the grace after it, the CPU budget, the idle limit;
//! and the pool's warmth after a lease.

use crate::daemon_support::{
    alive, is_time_limit_answer, quiet_or_gone, slow_theorems_round, slower_theorems, Rules,
};
use crate::gate::{at, SHORT};
use crate::tunnel::{call, gone_within, pool_pids, Tunnel};
use crate::HEADER;
use leanpool_protocol::LEASE_ENDED_NOTIFICATION;
use serde_json::json;
use std::time::{Duration, Instant};

/// Issue 26 part 4: the lease did not cost the pool its warm worker for
/// A's imports (the lease got a process of its own, counted in `status`),
/// and a `check` on those imports after it waits for no start.
pub(crate) fn pool_kept_warm(socket: &std::path::Path, serving: &[u64], rules: &mut Rules) {
    let pids = pool_pids(socket);
    let st = call(socket, "status", json!({}));
    let counters = &st["result"]["pool"]["counters"];
    rules.check(
        "leases do not cost the pool its warmth",
        pids == serving && counters["leases_fresh"] == 1 && counters["cold_waits"] == 1,
        format!("pool pids {pids:?} (before: {serving:?}), counters {counters}"),
    );
    let again = call(
        socket,
        "check",
        json!({ "text": format!("{HEADER}theorem u : True := trivial\n") }),
    );
    let st = call(socket, "status", json!({}));
    rules.check(
        "leases do not cost the pool its warmth: the next check waits for no start",
        again["result"]["status"] == "ok" && st["result"]["pool"]["counters"]["cold_waits"] == 1,
        format!("{again}; counters {}", st["result"]["pool"]["counters"]),
    );
}

/// Edits the leased document to fresh slow texts, with no request at all,
/// until the lease ends (its reason) or 5 rounds pass (`None`). One text
/// costs 20-45 s of CPU depending on the machine: renamed theorems make
/// Lean elaborate each round anew, so the budget is reached however fast
/// the machine is. The next round starts when the worker falls quiet.
pub(crate) fn spend_cpu_until_ended(
    c: &mut Tunnel,
    uri: &str,
    v0: i64,
    pid: u64,
) -> Option<String> {
    let cpu = || leanpool_lean::proc::group_cpu_time(pid as u32).unwrap_or_default();
    let mut spent = Duration::ZERO;
    for round in 1..=5 {
        let text = slow_theorems_round(round as u64);
        c.change(uri, v0 + round, &format!("{HEADER}{text}"));
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(120) {
            let before = cpu();
            spent = spent.max(before);
            let ended = c.until(Duration::from_secs(3), |m| {
                m["method"] == LEASE_ENDED_NOTIFICATION
            });
            if let Some(m) = ended {
                eprintln!("the lease ended in round {round}, {spent:?} of worker CPU seen");
                return Some(m["params"]["reason"].to_string());
            }
            if alive(pid as i32) && cpu().saturating_sub(before) < Duration::from_millis(300) {
                break;
            }
        }
    }
    eprintln!("the lease not ended after 5 rounds, {spent:?} of worker CPU seen");
    None
}

/// A request past the lease's limit (15 s) is answered `RequestFailed` at
/// the limit and cancelled in Lean; Lean computes on (the text lasts over
/// a minute: a `waitForDiagnostics` is answered only when the text is
/// elaborated), so the grace (10 s) ends the lease, before the CPU budget
/// would (60 s; with the grace removed the budget ends it, its reason
/// named).
pub(crate) fn time_limit(b: &mut Tunnel, uri: &str, version: i64, pid: u64, rules: &mut Rules) {
    b.change(uri, version, &format!("{HEADER}{}", slower_theorems()));
    let t = Instant::now();
    let ans = b.request(
        "t1",
        "textDocument/waitForDiagnostics",
        json!({ "uri": uri, "version": version }),
        Duration::from_secs(60),
    );
    let took = t.elapsed();
    rules.check(
        "per-request time limit",
        is_time_limit_answer(&ans)
            && took >= Duration::from_secs(14)
            && took < Duration::from_secs(30),
        format!("after {took:?}: {ans}"),
    );
    let ended = b.until(Duration::from_secs(60), |m| {
        m["method"] == LEASE_ENDED_NOTIFICATION
    });
    let after = t.elapsed();
    eprintln!("lease ended {after:?} after the request: {ended:?}");
    rules.check(
        "grace: a cancelled request Lean goes on computing ends the lease",
        ended.as_ref().is_some_and(|m| {
            m["params"]["reason"]
                .to_string()
                .contains("past its time limit after it was cancelled")
        }) && after < Duration::from_secs(45),
        format!("{after:?} after the request: {ended:?}"),
    );
    // Whatever ended it, the worker does not go on computing.
    let quiet = quiet_or_gone(pid, Duration::from_secs(120));
    eprintln!(
        "after the time limit: worker {pid} {}",
        if alive(pid as i32) {
            "alive and quiet"
        } else {
            "gone"
        }
    );
    rules.check(
        "a request past its limit does not leave the worker computing",
        quiet,
        format!("worker {pid} still computing 120 s after the limit"),
    );
}

/// The idle test's `lease_idle_timeout_ms`.
pub(crate) const IDLE: Duration = Duration::from_secs(20);

/// A text, then a hover every quarter of the idle limit for twice the
/// limit (each answered by Lean): the lease is not ended. Then nothing:
/// the daemon ends it one limit after the last request, naming the idle
/// limit (with the rule removed, no end comes within the limit + 20 s).
pub(crate) fn idle_limit(c: &mut Tunnel, uri: &str, version: i64, rules: &mut Rules) {
    c.change(
        uri,
        version,
        &format!("{HEADER}theorem mine : 2 + 2 = 4 := by decide\n"),
    );
    let w = c.request(
        "w",
        "textDocument/waitForDiagnostics",
        json!({ "uri": uri, "version": version }),
        SHORT,
    );
    assert!(w.get("result").is_some(), "the text elaborates: {w}");
    let active = Instant::now();
    let (mut asked, mut answered) = (0, 0);
    let mut last = Instant::now();
    while active.elapsed() < IDLE * 2 {
        std::thread::sleep(IDLE / 4);
        asked += 1;
        last = Instant::now();
        let ans = c.request(
            &format!("a{asked}"),
            "textDocument/hover",
            at(uri, 1, 9),
            SHORT,
        );
        answered += usize::from(ans.get("result").is_some());
    }
    let ended_early = c.all.contains(LEASE_ENDED_NOTIFICATION);
    rules.check(
        "idle limit: a lease sending requests inside the limit is not ended",
        !ended_early && answered == asked,
        format!(
            "{asked} hovers in {:?}, {answered} answered, ended: {ended_early}",
            active.elapsed()
        ),
    );
    let ended = c.until(IDLE + Duration::from_secs(20), |m| {
        m["method"] == LEASE_ENDED_NOTIFICATION
    });
    let after = last.elapsed();
    eprintln!("idle lease ended {after:?} after its last request: {ended:?}");
    rules.check(
        "idle limit: an idle lease is ended, the limit named",
        ended
            .as_ref()
            .is_some_and(|m| m["params"]["reason"].to_string().contains("idle limit"))
            && after >= IDLE - Duration::from_secs(1)
            && after < IDLE + Duration::from_secs(10),
        format!("{after:?} after the last request: {ended:?}"),
    );
}

/// The idle lease's worker is killed and never back in the pool (not
/// among `status`' workers), and the lease is freed.
pub(crate) fn idle_worker_not_pooled(socket: &std::path::Path, pid: u64, rules: &mut Rules) {
    let killed = gone_within(pid, Duration::from_secs(30));
    let until = Instant::now() + Duration::from_secs(10);
    let mut st = call(socket, "status", json!({}));
    while st["result"]["daemon"]["leases"]["active"] != 0 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(200));
        st = call(socket, "status", json!({}));
    }
    let pids = pool_pids(socket);
    rules.check(
        "idle limit: the worker is killed, never pooled",
        killed && !pids.contains(&pid) && st["result"]["daemon"]["leases"]["active"] == 0,
        format!(
            "pid {pid} alive: {}, the pool's {pids:?}, leases {}",
            alive(pid as i32),
            st["result"]["daemon"]["leases"]
        ),
    );
}
