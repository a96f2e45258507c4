//! Issue 26's attacks on the daemon's `lease` tunnel, on real Lean (the
//! WASM build installed by `scripts/setup`; FAILS when it is missing).
//! Three tests, a daemon each (filter to the ones a run needs):
//!
//! * the gate and the request limits (two worker starts): caller A's
//!   `check` (a secret in its text) on the pool's worker; caller B's lease
//!   on the same imports (a process started for it) for the gate's rules
//!   (every method Lean 4.28 knows: served by Lean or refused), the
//!   per-request time limit and the grace after it, and the pool's
//!   warmth after it;
//! * the CPU budget (one lease, one worker start);
//! * the idle limit (one lease, one worker start).
//!
//! Each rule is checked by name ([`Rules`]) so that a run with rules
//! disabled shows every one failing. The same rules through `leanpool
//! lsp` (stdio and `--socket`): `lsp_lean/`.

#[path = "../daemon_support/mod.rs"]
mod daemon_support;

mod gate;
mod limits;
mod tunnel;

use daemon_support::{Daemon, Lean, Rules};
use serde_json::json;
use std::time::Duration;
use tunnel::{call, gone_within, pool_pids, Tunnel};

const HEADER: &str = "import Lean.Server.CodeActions.Basic\n";
const SECRET: &str = "hunter2-SECRET-7781";
/// The daemon's lease caps here: 15 s per request (then the default 10 s
/// grace), 60 s of CPU per lease (the gate's rules use some 8 s of it
/// before the time-limit check, which must end at its own limit and the
/// grace's, not at the budget: 20 s did not leave room for it on the CI
/// machine, 45 s left a few seconds at the grace's end).
const CONFIG: &str = "max_leases = 1\nlease_request_timeout_ms = 15000\nlease_cpu_ms = 60000\n[pool]\nmax_workers = 1\nspares_per_key = 0\nstart_timeout_ms = 600000\n";

#[test]
fn attack_lease_sees_no_other_callers_text_runs_no_callers_code_and_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), CONFIG, Lean::Real);
    let mut rules = Rules::default();
    // Caller A: a secret, its declarations, a goal and messages.
    let a_text = format!(
        "{HEADER}def victimPassword : String := \"{SECRET}\"\ntheorem victimGoal : victimPassword.length = 19 := by\n  sorry\n"
    );
    let a = call(&daemon.socket, "check", json!({ "text": a_text }));
    assert_eq!(a["result"]["status"], "sorry", "{a}");
    let serving = pool_pids(&daemon.socket);
    assert_eq!(serving.len(), 1);

    let mut b = Tunnel::open(&daemon.socket);
    let (uri, v0, pid) = b.lease(HEADER);
    rules.check(
        "clean lease: never the worker that ran another caller's text",
        !serving.contains(&pid),
        format!("leased pid {pid}, the pool's {serving:?}"),
    );
    gate::gate_rules(&mut b, &uri, v0, &mut rules);
    limits::time_limit(&mut b, &uri, v0 + 3, pid, &mut rules);
    drop(b);

    limits::pool_kept_warm(&daemon.socket, &serving, &mut rules);
    rules.assert_all();
}

/// A lease sending texts and no request at all: the CPU budget (60 s)
/// ends it, whatever one slow text costs on this machine, and its worker
/// is killed.
#[test]
fn attack_lease_spending_cpu_is_ended_by_its_budget() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), CONFIG, Lean::Real);
    let mut rules = Rules::default();
    let mut c = Tunnel::open(&daemon.socket);
    let (uri, v0, pid) = c.lease(HEADER);
    let why = limits::spend_cpu_until_ended(&mut c, &uri, v0, pid);
    rules.check(
        "CPU budget per lease",
        why.as_deref().is_some_and(|w| w.contains("lease_cpu_ms")),
        format!("the lease ended with {why:?}"),
    );
    rules.check(
        "CPU budget per lease: the worker is killed",
        gone_within(pid, Duration::from_secs(30)),
        format!("pid {pid} still runs"),
    );
    rules.assert_all();
}

/// The idle limit (`lease_idle_timeout_ms`, here 20 s): a lease whose
/// holder keeps sending requests inside the limit is not ended; left
/// idle, it is ended with the limit's reason, and its worker is killed,
/// never returned to the pool.
#[test]
fn attack_lease_left_idle_is_ended_and_its_worker_never_pooled() {
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "lease_idle_timeout_ms = {}\n{CONFIG}",
        limits::IDLE.as_millis()
    );
    let daemon = Daemon::start(dir.path(), &config, Lean::Real);
    let mut rules = Rules::default();
    let mut c = Tunnel::open(&daemon.socket);
    let (uri, v0, pid) = c.lease(HEADER);
    limits::idle_limit(&mut c, &uri, v0 + 1, &mut rules);
    limits::idle_worker_not_pooled(&daemon.socket, pid, &mut rules);
    rules.assert_all();
}
