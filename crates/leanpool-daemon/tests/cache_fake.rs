//! The result cache in a real daemon (in-process server, real Unix socket,
//! a real pool and a real store on disk) whose workers are
//! leanpool-testkit's FAKE Lean worker (`leanpool_testkit::fake_lean`).
//! The fake is used because these tests need what real Lean cannot give on
//! demand: a request that takes exactly long enough for identical ones to
//! pile up behind it, a worker that crashes mid-request, and a log of every
//! text that reached a worker. That a hit needs no worker start, across a
//! daemon restart, is tested on real Lean (`leanpool`'s `cache_lean`).
//!
//! `harness = false`: this executable is also the fake worker.

use leanpool_cache::{Cache, CacheConfig, Identity};
use leanpool_daemon::cache::CacheSlot;
use leanpool_daemon::{BackendInfo, PoolHandler};
use leanpool_pool::Pool;
use leanpool_protocol::{CacheStatus, ErrorCode};
use leanpool_rpc::{Client, Server, ServerOptions};
use leanpool_testkit::harness::{fake_pool_config, Ctx};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

struct Daemon {
    socket: PathBuf,
    pool: Pool,
}

fn daemon(cx: &Ctx) -> Daemon {
    daemon_with(cx, fake_pool_config())
}

fn daemon_with(cx: &Ctx, pool_cfg: leanpool_pool::PoolConfig) -> Daemon {
    daemon_for(cx, pool_cfg, &[])
}

/// The daemon, also letting `extra_uids` connect (socket mode 0666).
fn daemon_for(cx: &Ctx, pool_cfg: leanpool_pool::PoolConfig, extra_uids: &[u32]) -> Daemon {
    let socket = cx.dir.path().join("d.sock");
    let pool = cx.fake_pool(pool_cfg);
    let cfg = CacheConfig {
        dir: Some(cx.dir.path().join("cache")),
        ..CacheConfig::default()
    };
    let cache = Cache::open(&cfg, Identity::from_digest("fake-lean")).unwrap();
    let handler = PoolHandler::new(
        pool.clone(),
        &socket,
        BackendInfo::unavailable("fake".into()),
    )
    .with_cache(CacheSlot::On(Arc::new(cache)));
    let mut opts = ServerOptions::new(&socket);
    if !extra_uids.is_empty() {
        opts.allowed_uids.extend_from_slice(extra_uids);
        opts.socket_mode = 0o666;
    }
    let server = Server::bind(opts, handler).unwrap();
    tokio::spawn(server.run());
    Daemon { socket, pool }
}

/// How many texts ending in `tag` reached a fake worker.
fn runs(cx: &Ctx, tag: &str) -> usize {
    cx.log_text().lines().filter(|l| l.ends_with(tag)).count()
}

async fn cache_status(c: &Client) -> CacheStatus {
    let s = c.call("status", Value::Null).await.unwrap();
    serde_json::from_value(s["cache"].clone()).unwrap()
}

/// The answer's bytes without the cache's mark.
fn unmarked(raw: &str) -> String {
    raw.strip_suffix(",\"cached\":true}")
        .map(|s| format!("{s}}}"))
        .unwrap_or_else(|| raw.to_string())
}

/// Eight identical requests at once: one Lean run, seven joins, eight
/// answers that are the same bytes but for the mark.
async fn concurrent_identical_requests_share_one_lean_run(cx: Ctx) {
    let d = daemon(&cx);
    let text = "theorem t : True := trivial\n-- FAKE sleep 800\n-- dedup-8";
    let mut tasks = vec![];
    for _ in 0..8 {
        let socket = d.socket.clone();
        tasks.push(tokio::spawn(async move {
            let c = Client::connect(&socket).await.unwrap();
            c.call_raw("check", json!({"text": text}))
                .await
                .unwrap()
                .get()
                .to_string()
        }));
    }
    let mut answers = vec![];
    for t in tasks {
        answers.push(t.await.unwrap());
    }
    assert_eq!(runs(&cx, "dedup-8"), 1, "{}", cx.log_text());
    let marked = answers
        .iter()
        .filter(|a| a.ends_with(",\"cached\":true}"))
        .count();
    assert_eq!(marked, 7, "{answers:?}");
    let first = unmarked(&answers[0]);
    assert!(answers.iter().all(|a| unmarked(a) == first), "{answers:?}");
    let c = Client::connect(&d.socket).await.unwrap();
    let s = cache_status(&c).await;
    assert_eq!((s.misses, s.in_flight_joins, s.hits), (1, 7, 0), "{s:?}");
    // And now from the store: no worker.
    let again = c.call_raw("check", json!({"text": text})).await.unwrap();
    assert_eq!(unmarked(again.get()), first);
    assert_eq!(runs(&cx, "dedup-8"), 1);
    assert_eq!(cache_status(&c).await.hits, 1);
    d.pool.shutdown(Duration::from_secs(5)).await;
}

/// A time-out, a worker crash and a bypass are never answered from the
/// store; the repeat of each reaches a worker again.
async fn timeouts_failures_and_bypasses_are_not_cached(cx: Ctx) {
    let d = daemon(&cx);
    let c = Client::connect(&d.socket).await.unwrap();
    let slow = json!({"text": "theorem t : True := trivial\n-- FAKE sleep 3000\n-- slow", "timeout_ms": 300});
    for _ in 0..2 {
        let a = c.call("check", slow.clone()).await.unwrap();
        assert_eq!(a["status"], "timeout", "{a}");
        assert!(a.get("cached").is_none());
    }
    // The crash is retried once on a new worker: 2 runs per request.
    let crash = json!({"text": "theorem t : True := trivial\n-- FAKE crash\n-- crashes"});
    for _ in 0..2 {
        let e = c.call("check", crash.clone()).await.unwrap_err();
        assert_eq!(e.code(), Some(ErrorCode::WorkerFailed), "{e}");
    }
    assert_eq!(runs(&cx, "-- crashes"), 4);
    let ok = "theorem t : True := trivial\n-- bypass";
    c.call("check", json!({"text": ok})).await.unwrap();
    let b = c
        .call("check", json!({"text": ok, "cache": false}))
        .await
        .unwrap();
    assert!(b.get("cached").is_none(), "{b}");
    assert_eq!(runs(&cx, "-- bypass"), 2);
    let h = c.call("check", json!({"text": ok})).await.unwrap();
    assert_eq!(h["cached"], true);
    let bad = c
        .call("check", json!({"text": ok, "cache": "no"}))
        .await
        .unwrap_err();
    assert_eq!(bad.code(), Some(ErrorCode::InvalidParams), "{bad}");
    let s = cache_status(&c).await;
    assert_eq!((s.hits, s.bypassed, s.in_flight_joins), (1, 1, 0), "{s:?}");
    d.pool.shutdown(Duration::from_secs(5)).await;
}

/// Followers of a leader that timed out get no answer from it: each runs
/// its own request with its own limit.
async fn followers_of_a_timed_out_leader_run_their_own(cx: Ctx) {
    let d = daemon(&cx);
    let text = "theorem t : True := trivial\n-- FAKE sleep 1500\n-- lead-timeout";
    let socket = d.socket.clone();
    let leader = tokio::spawn(async move {
        let c = Client::connect(&socket).await.unwrap();
        c.call("check", json!({"text": text, "timeout_ms": 200}))
            .await
            .unwrap()
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let c = Client::connect(&d.socket).await.unwrap();
    let f = c
        .call("check", json!({"text": text, "timeout_ms": 20000}))
        .await
        .unwrap();
    assert_eq!(leader.await.unwrap()["status"], "timeout");
    assert_eq!(f["status"], "ok", "{f}");
    assert!(f.get("cached").is_none(), "{f}");
    let s = cache_status(&c).await;
    assert_eq!(s.in_flight_joins, 0, "{s:?}");
    d.pool.shutdown(Duration::from_secs(5)).await;
}

/// Attack: under `[pool] isolate_by` no caller's text may influence
/// another's answers, so a cached answer is never shared across callers:
/// the second connection's identical request runs on its own worker.
async fn attack_isolated_callers_never_share_cached_answers(cx: Ctx) {
    let cfg = leanpool_pool::PoolConfig {
        isolate_by: leanpool_pool::IsolateBy::Connection,
        ..fake_pool_config()
    };
    let d = daemon_with(&cx, cfg);
    let text = json!({"text": "theorem t : True := trivial\n-- isolated"});
    let a = Client::connect(&d.socket).await.unwrap();
    let b = Client::connect(&d.socket).await.unwrap();
    assert!(a
        .call("check", text.clone())
        .await
        .unwrap()
        .get("cached")
        .is_none());
    let from_b = b.call("check", text.clone()).await.unwrap();
    assert!(from_b.get("cached").is_none(), "{from_b}");
    assert_eq!(runs(&cx, "-- isolated"), 2);
    // Each caller's own repeat is a hit.
    assert_eq!(a.call("check", text.clone()).await.unwrap()["cached"], true);
    assert_eq!(b.call("check", text).await.unwrap()["cached"], true);
    assert_eq!(runs(&cx, "-- isolated"), 2);
    d.pool.shutdown(Duration::from_secs(5)).await;
}

/// `cache_clear` empties the store of the running daemon (the next
/// identical request reaches Lean again), and only for the daemon's owner:
/// another uid the daemon lets connect is answered `UNAUTHORIZED` and the
/// entries stay.
async fn attack_cache_clear_is_for_the_owner_only(cx: Ctx) {
    let nobody = 65534u32;
    // The other uid must reach the socket in the test's dir.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(cx.dir.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    let d = daemon_for(&cx, fake_pool_config(), &[nobody]);
    let c = Client::connect(&d.socket).await.unwrap();
    let text = "theorem t : True := trivial\n-- clear-1";
    for _ in 0..2 {
        c.call_raw("check", json!({"text": text})).await.unwrap();
    }
    assert_eq!(runs(&cx, "clear-1"), 1);
    assert_eq!(cache_status(&c).await.entries, 1);
    // Another uid: refused, nothing removed.
    let socket = d.socket.clone();
    let out = tokio::task::spawn_blocking(move || {
        use std::os::unix::process::CommandExt;
        std::process::Command::new("python3")
            .args(["-c", "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b'{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"cache_clear\"}\\n'); print(s.makefile().readline())"])
            .arg(&socket)
            .uid(nobody)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let line = String::from_utf8_lossy(&out.stdout);
    assert!(
        line.contains("\"code\":-32004"),
        "{line} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(line.contains("only the daemon's owner"), "{line}");
    assert_eq!(cache_status(&c).await.entries, 1);
    // The owner: cleared, and the request runs again.
    let r = c.call("cache_clear", Value::Null).await.unwrap();
    assert_eq!(r, json!({"removed": 1}));
    assert_eq!(cache_status(&c).await.entries, 0);
    let a = c.call_raw("check", json!({"text": text})).await.unwrap();
    assert!(!a.get().contains("cached"), "{}", a.get());
    assert_eq!(runs(&cx, "clear-1"), 2);
    d.pool.shutdown(Duration::from_secs(5)).await;
}

/// A daemon without a cache answers `cache_clear` with an error that says so.
async fn cache_clear_without_a_cache_says_so(cx: Ctx) {
    let socket = cx.dir.path().join("n.sock");
    let pool = cx.fake_pool(fake_pool_config());
    let handler = PoolHandler::new(
        pool.clone(),
        &socket,
        BackendInfo::unavailable("fake".into()),
    );
    let server = Server::bind(ServerOptions::new(&socket), handler).unwrap();
    tokio::spawn(server.run());
    let c = Client::connect(&socket).await.unwrap();
    let e = c
        .call("cache_clear", Value::Null)
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("no result cache"), "{e}");
    pool.shutdown(Duration::from_secs(5)).await;
}

fn main() {
    leanpool_testkit::harness::main(leanpool_testkit::tests![
        concurrent_identical_requests_share_one_lean_run,
        timeouts_failures_and_bypasses_are_not_cached,
        followers_of_a_timed_out_leader_run_their_own,
        attack_isolated_callers_never_share_cached_answers,
        attack_cache_clear_is_for_the_owner_only,
        cache_clear_without_a_cache_says_so,
    ]);
}
