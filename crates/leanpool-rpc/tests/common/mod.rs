//! A handler that needs no Lean, for driving the real server in-process.
#![allow(dead_code)]

use leanpool_protocol::{GtedParams, RpcError};
use leanpool_rpc::handler::{method_not_found, params, result};
use leanpool_rpc::{
    CallContext, Client, Handler, Server, ServerOptions, ShutdownHandle, Tunnel, TunnelIo, Upgrade,
};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Counts started and dropped-before-finishing calls, so tests can see
/// cancellation happen.
#[derive(Default)]
pub struct Counters {
    pub started: AtomicUsize,
    pub cancelled: AtomicUsize,
    pub shutdowns: AtomicUsize,
    /// Calls running right now, and the most ever running at once.
    pub running: AtomicUsize,
    pub max_running: AtomicUsize,
}

pub struct TestHandler(pub Arc<Counters>);

#[derive(Deserialize)]
struct Sleep {
    ms: u64,
    #[serde(default)]
    value: Value,
}

struct DropFlag(Arc<Counters>, bool);
impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::SeqCst);
        if !self.1 {
            self.0.cancelled.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl Handler for TestHandler {
    async fn call(
        &self,
        method: &str,
        p: Value,
        _ctx: &CallContext,
    ) -> Result<Box<RawValue>, RpcError> {
        self.0.started.fetch_add(1, Ordering::SeqCst);
        let now = self.0.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.0.max_running.fetch_max(now, Ordering::SeqCst);
        let mut flag = DropFlag(self.0.clone(), false);
        let out = match method {
            // Answers after `ms`: lets tests reorder answers and hold
            // requests in flight.
            "sleep" => {
                let s: Sleep = params(method, p)?;
                tokio::time::sleep(Duration::from_millis(s.ms)).await;
                result(&s.value)
            }
            // Typed params (the transport knows no GTED: the trees are
            // echoed), so that bad params meet the real decoding path.
            "gted" => {
                let g: GtedParams = params(method, p)?;
                result(&json!({"a": g.a, "b": g.b}))
            }
            "status" => result(&json!({"test": true})),
            // A bug in a method (test handler only): the server must still
            // answer, INTERNAL_ERROR.
            "panic" => panic!("the test handler's `panic` method"),
            _ => Err(method_not_found(method)),
        };
        flag.1 = true;
        out
    }

    async fn shutdown(&self, _deadline: Duration) {
        self.0.shutdowns.fetch_add(1, Ordering::SeqCst);
    }

    fn upgrades(&self, method: &str) -> bool {
        matches!(method, "upgrade_panic" | "tunnel_panic")
    }

    /// Bugs in a method that takes its connection over (test handler
    /// only): `upgrade_panic` panics before answering, `tunnel_panic`
    /// answers `{"tunnel": true}`, then its tunnel panics on the first
    /// line it reads.
    async fn upgrade(
        &self,
        method: &str,
        _p: Value,
        _ctx: &CallContext,
    ) -> Result<Upgrade, RpcError> {
        match method {
            "upgrade_panic" => panic!("the test handler's `upgrade_panic` method"),
            _ => Ok(Upgrade {
                answer: result(&json!({"tunnel": true}))?,
                tunnel: Box::new(PanicTunnel),
            }),
        }
    }
}

/// A tunnel that panics on the first line it reads.
struct PanicTunnel;

impl Tunnel for PanicTunnel {
    fn run(self: Box<Self>, mut io: TunnelIo) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(async move {
            if io.incoming.recv().await.is_some() {
                panic!("the test handler's tunnel");
            }
        })
    }
}

pub struct Running {
    pub dir: tempfile::TempDir,
    pub path: PathBuf,
    pub counters: Arc<Counters>,
    pub stop: ShutdownHandle,
    pub task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Running {
    pub async fn client(&self) -> Client {
        Client::connect(&self.path).await.expect("connect")
    }
}

pub fn start(tweak: impl FnOnce(&mut ServerOptions)) -> Running {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.sock");
    let mut opts = ServerOptions::new(&path);
    tweak(&mut opts);
    let counters = Arc::new(Counters::default());
    let server = Server::bind(opts, TestHandler(counters.clone())).expect("bind");
    let stop = server.shutdown_handle();
    let task = tokio::spawn(server.run());
    Running {
        dir,
        path,
        counters,
        stop,
        task,
    }
}
