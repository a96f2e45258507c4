//! The daemon on real Lean (the WASM build installed by `scripts/setup`;
//! FAILS when it is missing): `batch` with resume, concurrent clients on
//! one worker, byte-identical answers to a repeated check, the Python
//! example, `opt`/`normalize` from the CLI, `status`, and SIGTERM leaving no Lean
//! process behind. One worker only (a WASM worker holds 6-7 GB).

mod attack;
mod batch;
mod cli;
mod clients;
#[path = "../daemon_support/mod.rs"]
mod daemon_support;
mod lifecycle;
mod verify;

use daemon_support::{
    alive, children_of, cli_json, cli_via, connect_expecting_lean, counters, status, Daemon, Lean,
    BIN,
};
use leanpool_protocol::method;
use leanpool_protocol::{CheckParams, CheckStatus, VerifyParams, VerifyStatus};
use leanpool_rpc::Client;
use nix::sys::signal::Signal;
use serde_json::{json, Value};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use attack::attack_disconnect_does_not_stall_the_next_caller;
use batch::batch_keeps_order_and_resumes;
use cli::{cli_check_exit_codes, cli_opt_and_normalize_through_the_daemon};
use clients::{
    concurrent_clients_share_one_worker, python_example_checks, repeated_check_is_byte_identical,
};
use lifecycle::{
    departed_client_requests_are_cancelled, sigterm_leaves_no_lean_process,
    status_counts_the_one_worker,
};
use verify::verify_cases;

const CONFIG: &str = "[pool]\nmax_workers = 1\nmax_workers_per_key = 1\nmax_queue_per_key = 64\nstart_timeout_ms = 600000\ndefault_timeout_ms = 300000\ntimeout_grace_ms = 5000\n";

fn ok(i: u32) -> String {
    format!("theorem ok{i} : {i} + {i} = {} := by decide", 2 * i)
}
fn bad(i: u32) -> String {
    format!("theorem bad{i} : {i} + {i} = {} := by decide", 2 * i + 1)
}

fn lines(p: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daemon_on_real_lean() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = Daemon::start(dir.path(), CONFIG, Lean::Real);
    let c = connect_expecting_lean(&d).await;
    batch_keeps_order_and_resumes(&d, dir.path());
    concurrent_clients_share_one_worker(&d).await;
    repeated_check_is_byte_identical(&d).await;
    python_example_checks(&d);
    verify_cases(&d, &c, dir.path()).await;
    attack_disconnect_does_not_stall_the_next_caller(&d, &c).await;
    cli_check_exit_codes(&d, dir.path());
    cli_opt_and_normalize_through_the_daemon(&d, dir.path());
    let pid = status_counts_the_one_worker(&d, &c).await;
    departed_client_requests_are_cancelled(&d, &c).await;
    sigterm_leaves_no_lean_process(&mut d, c, pid).await;
}
