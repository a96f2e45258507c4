//! The daemon's state and end: `status`, a departed client's queued requests, SIGTERM.

use super::*;

/// `status`: the one worker, with its uses counted (also by `leanpool
/// status`). Returns the worker's pid.
pub(crate) async fn status_counts_the_one_worker(d: &Daemon, c: &Client) -> i32 {
    let st = status(c).await;
    assert_eq!(st.pool.workers, 1, "{st:?}");
    let w = &st.pool.keys[0].workers[0];
    let pid = w.pid.expect("worker pid") as i32;
    let sent = 4 + 2 + 12 + 3 + 1 + 2; // batch, resumed batch, clients, determinism, Python, CLI
    assert!(st.pool.counters.requests >= sent, "{:?}", st.pool.counters);
    assert!(alive(pid));
    let human = cli_via(&d.socket, &[&"status"], 0);
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(
        text.contains(&pid.to_string()) && text.contains("check"),
        "{text}"
    );
    pid
}

/// A client that goes away: its queued requests never reach Lean. They
/// queue behind the start of a worker for a new header (tens of seconds),
/// and the client disconnects while they wait.
pub(crate) async fn departed_client_requests_are_cancelled(d: &Daemon, c: &Client) {
    let before = counters(c).await;
    queue_three_then_disconnect(d, c).await;
    let t0 = std::time::Instant::now();
    loop {
        let now = counters(c).await;
        if now.cancelled >= before.cancelled + 3 {
            assert_eq!(now.requests, before.requests + 3);
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(600),
            "queued requests of a departed client were not cancelled: {now:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Sends three checks for a new header on a raw connection, waits until
/// they are queued, and closes the connection (dropped at the end).
async fn queue_three_then_disconnect(d: &Daemon, c: &Client) {
    use tokio::io::AsyncWriteExt;
    let mut s = tokio::net::UnixStream::connect(&d.socket).await.unwrap();
    let mut lines = String::new();
    for i in 1..=3 {
        let text = format!("import Init\n{}", ok(20 + i));
        lines.push_str(&format!(
            "{}\n",
            json!({"jsonrpc": "2.0", "id": i, "method": "check", "params": {"text": text}})
        ));
    }
    s.write_all(lines.as_bytes()).await.unwrap();
    let t0 = std::time::Instant::now();
    loop {
        let st = status(c).await;
        if st
            .pool
            .keys
            .iter()
            .any(|k| k.header.contains("import Init") && k.queue_depth == 3)
        {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "requests never queued: {st:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// SIGTERM: graceful, socket removed, no Lean process left (`pid`: the
/// worker `status` reported earlier).
pub(crate) async fn sigterm_leaves_no_lean_process(d: &mut Daemon, c: Client, pid: i32) {
    let st = status(&c).await;
    let pids: Vec<i32> = st
        .pool
        .keys
        .iter()
        .flat_map(|k| k.workers.iter().filter_map(|w| w.pid.map(|p| p as i32)))
        .collect();
    drop(c);
    let spawned = children_of(d.pid());
    assert!(
        pids.iter().all(|p| spawned.contains(p)),
        "workers {pids:?} are not children of the daemon: {spawned:?}"
    );
    d.exits_cleanly_on(Signal::SIGTERM, Duration::from_secs(60));
    assert!(!d.socket.exists(), "socket left behind");
    assert!(!alive(pid), "Lean worker {pid} survived the daemon");
    assert!(
        pids.iter().all(|p| !alive(*p)),
        "workers {pids:?} survived the daemon"
    );
    assert!(
        spawned.iter().all(|p| !alive(*p)),
        "children left: {spawned:?}"
    );
}
