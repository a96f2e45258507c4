//! Honest work is accepted through the real request path (issue 20 part
//! 8): real model-written proofs (`../shared/proofs`, located by
//! `leanpool_testkit::data::proofs_dir`; the test fails, never skips,
//! when the data is missing) sent as `check` (each proof's whole file)
//! and `verify` (each one-theorem proof: header, statement, proof) to a
//! daemon (in-process server, real Unix socket, real pool, the daemon's
//! dispatch), so that every rule between a request and Lean runs: the
//! RPC decoding, verify's slot rules, the guard, the document build, the
//! header key, the verdict's declaration scan and the trailer assembly.
//!
//! The texts need Mathlib, which the real Lean here does not have, so the
//! workers are leanpool-testkit's FAKE Lean (`leanpool_testkit::fake_lean`,
//! a scale simulation: it answers every text in milliseconds and says
//! nothing about Lean). Only `rejected` answers count: leanpool refused
//! the text before Lean; what the fake answers otherwise is not a verdict.
//!
//! Proofs that use `native_decide` (or `+native`) are left out of the
//! rate (refused by design, and checked to be). The test fails when more
//! than 0.5 % of the rest is refused, and prints a table of refusals by
//! construct (recorded in `benches/README.md` with its command).
//!
//! `harness = false`: this executable is also the fake worker
//! (`leanpool_testkit::harness::main`).

use leanpool_daemon::{DaemonConfig, Lean};
use leanpool_protocol::{method, CheckParams, CheckStatus, VerifyParams, VerifyStatus};
use leanpool_rpc::Client;
use leanpool_testkit::daemon::Daemon;
use leanpool_testkit::harness::{fake_policies, fake_pool_config, Ctx};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The refusal rate the test allows, in percent.
const MAX_REFUSED_PERCENT: f64 = 0.5;
/// Requests in flight at once.
const WINDOW: usize = 32;

#[derive(Default)]
struct Tally {
    inputs: usize,
    /// Refused construct → ids refused for it.
    refused: BTreeMap<String, Vec<String>>,
}

impl Tally {
    fn record(&mut self, id: &str, refusal: Option<String>) {
        self.inputs += 1;
        if let Some(r) = refusal {
            self.refused.entry(r).or_default().push(id.to_string());
        }
    }
    fn refused(&self) -> usize {
        self.refused.values().map(Vec::len).sum()
    }
    fn percent(&self) -> f64 {
        100.0 * self.refused() as f64 / self.inputs.max(1) as f64
    }
    fn table(&self, name: &str) -> String {
        let mut out = format!(
            "| {name} | {} inputs | {} refused | {:.2} % |\n",
            self.inputs,
            self.refused(),
            self.percent()
        );
        for (class, ids) in &self.refused {
            let sample: Vec<&str> = ids.iter().take(3).map(String::as_str).collect();
            out.push_str(&format!(
                "| | {class} | {} | e.g. {} |\n",
                ids.len(),
                sample.join(", ")
            ));
        }
        out
    }
}

/// The refused construct of a `rejected` answer's reason (the text in
/// its first backquotes), or its start.
fn class(reason: &str) -> String {
    let mut parts = reason.split('`');
    match (parts.next(), parts.next()) {
        (Some(_), Some(c)) => c.to_string(),
        _ => reason.chars().take(60).collect(),
    }
}

fn uses_native(text: &str) -> bool {
    text.contains("native_decide") || text.contains("+native") || text.contains("native :=")
}

/// One request to send: the proof's id and the request.
enum Req {
    Check(String, CheckParams),
    Verify(String, VerifyParams),
}

/// The id, which method, and the refusal (if `rejected`).
async fn send(client: &Client, req: Req) -> (String, &'static str, Option<String>) {
    match req {
        Req::Check(id, p) => {
            let r = client
                .request::<method::Check>(&p)
                .await
                .expect("an answer");
            let refused = (r.status == CheckStatus::Rejected)
                .then(|| class(r.reason.as_deref().unwrap_or("")));
            (id, "check", refused)
        }
        Req::Verify(id, p) => {
            let r = client
                .request::<method::Verify>(&p)
                .await
                .expect("an answer");
            let refused = (r.status == VerifyStatus::Rejected)
                .then(|| class(r.reason.as_deref().unwrap_or("")));
            (id, "verify", refused)
        }
    }
}

fn requests() -> (Vec<Req>, Vec<String>) {
    let dir = leanpool_testkit::data::proofs_dir().unwrap_or_else(|e| panic!("{e}"));
    let text = std::fs::read_to_string(dir.join("proofs.jsonl")).expect("readable data file");
    let mut out = Vec::new();
    let mut native = Vec::new();
    for line in text.lines() {
        let r: Value = serde_json::from_str(line).expect("one JSON object per line");
        let field = |k: &str| r[k].as_str().unwrap_or_default().to_string();
        let (id, full) = (field("id"), field("full"));
        if uses_native(&full) {
            native.push(full);
            continue;
        }
        out.push(Req::Check(id.clone(), CheckParams::new(full)));
        if r["n_decls"].as_u64() == Some(1) {
            out.push(Req::Verify(
                id,
                VerifyParams::new(field("statement"), field("proof")).with_header(field("header")),
            ));
        }
    }
    (out, native)
}

async fn honest_proofs_pass_the_daemon(cx: Ctx) {
    let (reqs, native) = requests();
    let pool = leanpool_pool::PoolConfig {
        max_workers: Some(4),
        max_workers_per_key: Some(4),
        ..fake_pool_config()
    };
    let config = DaemonConfig {
        sandbox: fake_policies().sandbox,
        pool,
        ..DaemonConfig::default()
    };
    let lean = Lean::Command(cx.fake_command(&[]));
    let daemon = Daemon::in_process(cx.dir.path(), lean, config, cx.log()).await;
    let client = Arc::new(Client::connect(&daemon.socket).await.expect("connect"));
    let started = std::time::Instant::now();
    let (mut checks, mut verifies) = (Tally::default(), Tally::default());
    let mut inflight = tokio::task::JoinSet::new();
    let mut reqs = reqs.into_iter();
    loop {
        while inflight.len() < WINDOW {
            let Some(req) = reqs.next() else { break };
            let c = client.clone();
            inflight.spawn(async move { send(&c, req).await });
        }
        let Some(done) = inflight.join_next().await else {
            break;
        };
        let (id, which, refused) = done.expect("request task");
        let t = if which == "check" {
            &mut checks
        } else {
            &mut verifies
        };
        t.record(&id, refused);
    }
    println!(
        "{} requests in {:.1} s; proofs using native_decide, left out: {}\n",
        checks.inputs + verifies.inputs,
        started.elapsed().as_secs_f64(),
        native.len()
    );
    println!("| input | reason | refused | examples |\n| --- | --- | --- | --- |");
    print!("{}", checks.table("check (full), daemon"));
    print!("{}", verifies.table("verify (one theorem), daemon"));
    for (name, t) in [("check", &checks), ("verify", &verifies)] {
        assert!(
            t.inputs > 1000 && t.percent() <= MAX_REFUSED_PERCENT,
            "{name}: {} of {} honest inputs refused ({:.2} % > {MAX_REFUSED_PERCENT} %): {:?}",
            t.refused(),
            t.inputs,
            t.percent(),
            t.refused
        );
    }
    for text in native {
        let p = CheckParams::new(text);
        let r = client
            .request::<method::Check>(&p)
            .await
            .expect("an answer");
        assert_eq!(
            r.status,
            CheckStatus::Rejected,
            "native_decide passed: {r:?}"
        );
    }
    daemon.shutdown().await;
}

fn main() {
    leanpool_testkit::harness::main(leanpool_testkit::tests![honest_proofs_pass_the_daemon]);
}
