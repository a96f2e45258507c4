//! The disconnect attack on the daemon's one warm worker.

use super::*;

/// Issue 10: an attacker sends a slow `decide` with a long limit and hangs
/// up; before, the request ran on to its limit and stalled every caller
/// queued behind it. Now the pool sees the caller gone, interrupts Lean
/// with a new edit (counted `cancelled`), and the same warm worker (no new
/// spawn, no time-out kill) answers the victim.
pub(crate) async fn attack_disconnect_does_not_stall_the_next_caller(d: &Daemon, c: &Client) {
    let before = status(c).await.pool;
    let victim = before
        .keys
        .iter()
        .flat_map(|k| &k.workers)
        .find_map(|w| w.pid)
        .expect("a worker") as i32;
    // A `decide` over 10^6 cases: Lean does not stop its computation on a
    // new edit (seen on WASM Lean: its threads stayed busy after the
    // interrupting edit was done).
    let slow = "theorem slow : ∀ a < 10, ∀ b < 10, ∀ c < 10, ∀ d < 10, ∀ e < 10, ∀ f < 10, \
                a + b + c + d + e + f < 100 := by decide\n";
    let attacker = Client::connect(&d.socket).await.unwrap();
    let p = CheckParams::new(slow).with_timeout_ms(600_000);
    let running = tokio::spawn(async move { attacker.request::<method::Check>(&p).await });
    // Wait for the event (the worker busy with it), not for a fixed time.
    loop {
        let s = status(c).await.pool;
        if s.keys
            .iter()
            .flat_map(|k| &k.workers)
            .any(|w| w.state == leanpool_pool::WorkerState::Busy)
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    running.abort(); // drops the attacker's connection
    let _ = running.await;
    // The next caller is answered (not after the attacker's 600 s limit)...
    let r = c
        .request::<method::Check>(&CheckParams::new(ok(7)))
        .await
        .unwrap();
    assert_eq!(r.status, CheckStatus::Ok, "{r:?}");
    let after = status(c).await.pool;
    assert_eq!(
        after.counters.cancelled,
        before.counters.cancelled + 1,
        "{after:?}"
    );
    assert_eq!(
        after.counters.timeouts, before.counters.timeouts,
        "{after:?}"
    );
    // ...and no process is left computing the departed caller's text:
    // the worker was killed (it did not go quiet within
    // `timeout_grace_ms`) and replaced, or it is kept and idle.
    if alive(victim) {
        let cpu = cpu_share(victim, Duration::from_secs(1)).await;
        assert!(cpu < 0.5, "the kept worker {victim} still computes the departed caller's text ({cpu:.2} cores): {after:?}");
        println!("disconnect attack: worker {victim} interrupted and kept, {cpu:.2} cores over 1 s after the next answer");
        assert_eq!(
            after.counters.cancel_kills, before.counters.cancel_kills,
            "{after:?}"
        );
        assert_eq!(after.counters.spawns, before.counters.spawns, "{after:?}");
    } else {
        assert_eq!(
            after.counters.cancel_kills,
            before.counters.cancel_kills + 1,
            "{after:?}"
        );
        println!("disconnect attack: worker {victim} still computing after the grace, killed and replaced");
        assert_eq!(
            after.counters.spawns,
            before.counters.spawns + 1,
            "{after:?}"
        );
    }
}

/// Cores the worker's process group (`pgid`: the worker is its group's
/// leader) used over `window`, measured as the lease's CPU budget measures
/// it (`leanpool_lean::proc::group_cpu_time`; 0 once the group is gone).
async fn cpu_share(pgid: i32, window: Duration) -> f64 {
    let cpu = || leanpool_lean::proc::group_cpu_time(pgid as u32).unwrap_or_default();
    let before = cpu();
    tokio::time::sleep(window).await;
    cpu().saturating_sub(before).as_secs_f64() / window.as_secs_f64()
}
