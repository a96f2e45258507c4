//! The scripted FAKE Lean (`leanpool_testkit::fake_lean`) behind a real
//! daemon, for the benches that simulate scale: the bench executable is
//! itself the fake worker (started with `LEANPOOL_FAKE_LEAN=1`), a request
//! costs what its `-- FAKE sleep MS` line says, and everything between the
//! socket and the worker's pipes is the real daemon (transport, dispatch,
//! guard, pool, result cache when given one). Nothing measured with it
//! says anything about Lean.

#![allow(dead_code)]

use leanpool_cache::{Cache, CacheConfig, Identity};
use leanpool_daemon::cache::CacheSlot;
use leanpool_daemon::{BackendInfo, PoolHandler};
use leanpool_lean::{BackendKind, LeanCommand, SandboxConfig, SandboxMode};
use leanpool_pool::{Policies, Pool, PoolConfig};
use leanpool_rpc::{Server, ServerOptions};
use leanpool_testkit::fake_lean;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Call first in `main`: serves as the fake worker when started as one.
pub fn serve_if_fake() {
    if fake_lean::is_fake() {
        fake_lean::serve();
    }
}

/// This executable as the "lean" command.
pub fn command() -> LeanCommand {
    LeanCommand {
        program: std::env::current_exe().expect("own executable"),
        args: vec![],
        env: vec![(fake_lean::ENV.into(), "1".into())],
        cwd: None,
        backend: BackendKind::Native,
        version: None,
        source: "fake Lean (leanpool-testkit/src/fake_lean.rs)".into(),
    }
}

/// The default policies with the OS sandbox off (the fake is this bench's
/// executable, outside the sandbox's read paths; the sandbox is tested on
/// real Lean).
pub fn unsandboxed() -> Policies {
    Policies {
        sandbox: SandboxConfig {
            mode: SandboxMode::Off,
            ..Default::default()
        },
        ..Default::default()
    }
}

/// A daemon on `dir/d.sock` (real transport, handler and pool) whose
/// workers are the fake, with a result cache in `cache_dir` if given.
pub fn daemon(dir: &Path, cfg: PoolConfig, cache_dir: Option<PathBuf>) -> (PathBuf, Pool) {
    let socket = dir.join("d.sock");
    let pool = Pool::new(command(), cfg, Default::default(), unsandboxed());
    let mut handler = PoolHandler::new(
        pool.clone(),
        &socket,
        BackendInfo::unavailable("fake Lean (bench)".into()),
    );
    if let Some(d) = cache_dir {
        let cfg = CacheConfig {
            dir: Some(d),
            ..CacheConfig::default()
        };
        let cache = Cache::open(&cfg, Identity::from_digest("fake-lean-bench")).expect("cache");
        handler = handler.with_cache(CacheSlot::On(Arc::new(cache)));
    }
    let mut opts = ServerOptions::new(&socket);
    opts.max_inflight_per_connection = 4096;
    let server = Server::bind(opts, handler).expect("bind");
    tokio::spawn(server.run());
    (socket, pool)
}
