//! Import sets and callers: one worker per header, isolated callers apart, many concurrent requests over several headers.

use super::*;

pub(crate) async fn two_headers_two_workers(cx: Ctx) {
    let pool = cx.fake_pool(base_cfg());
    let (a, b) = tokio::join!(
        pool.call::<method::Check>(CheckParams::new(
            "import A\ntheorem a : True := trivial\n-- FAKE sleep 200\n"
        )),
        pool.call::<method::Check>(CheckParams::new(
            "import B\ntheorem b : True := trivial\n-- FAKE sleep 200\n"
        )),
    );
    assert_eq!(a.unwrap().status, CheckStatus::Ok);
    assert_eq!(b.unwrap().status, CheckStatus::Ok);
    let (pa, pb) = (pids(&pool, "import A\n"), pids(&pool, "import B\n"));
    assert_eq!((pa.len(), pb.len()), (1, 1));
    assert_ne!(pa, pb);
    // Same header up to comments/blank lines/trailing spaces: same worker.
    let r = pool
        .call::<method::Check>(CheckParams::new(
            "-- hi\nimport A   \n\ntheorem c : True := trivial\n-- FAKE error\n",
        ))
        .await
        .unwrap();
    assert_eq!(r.status, CheckStatus::Error);
    assert_eq!(pids(&pool, "import A\n"), pa);
    // Workers are keyed by the imports only: other header commands travel
    // with the request (issue 12 part 3).
    let r = pool
        .call::<method::Check>(CheckParams::new("import A\nopen Real Nat\nset_option maxHeartbeats 0\nuniverse u\ntheorem d : True := trivial\n"))
        .await
        .unwrap();
    assert_eq!(r.status, CheckStatus::Ok);
    assert_eq!(pids(&pool, "import A\n"), pa);
    assert_eq!(pool.status().counters.spawns, 2);
    finish(pool).await;
}

/// `[pool] isolate_by` (issue 10): a caller tagged apart (the daemon tags
/// by uid or connection) never runs on another caller's worker, whatever
/// the imports; the same tag shares its own.
pub(crate) async fn attack_isolated_callers_never_share_a_worker(cx: Ctx) {
    let pool = cx.fake_pool(PoolConfig {
        max_workers: Some(3),
        ..base_cfg()
    });
    let (alice, mallory) = (pool.as_caller("uid:1000"), pool.as_caller("uid:6666"));
    alice
        .call::<method::Check>(CheckParams::new("theorem a : True := trivial\n"))
        .await
        .unwrap();
    let pa = last_served(&cx);
    mallory
        .call::<method::Check>(CheckParams::new("theorem m : True := trivial\n"))
        .await
        .unwrap();
    let pm = last_served(&cx);
    pool.call::<method::Check>(CheckParams::new("theorem s : True := trivial\n"))
        .await
        .unwrap();
    let ps = last_served(&cx);
    assert!(pa != pm && pm != ps && pa != ps, "{pa} {pm} {ps}");
    // The same tag on another handle: the same worker again.
    pool.as_caller("uid:1000")
        .call::<method::Check>(CheckParams::new("theorem a2 : True := trivial\n"))
        .await
        .unwrap();
    assert_eq!(last_served(&cx), pa);
    let st = pool.status();
    let mut callers: Vec<_> = st.keys.iter().map(|k| k.caller.clone()).collect();
    callers.sort();
    assert_eq!(
        callers,
        [None, Some("uid:1000".into()), Some("uid:6666".into())]
    );
    assert!(st.keys.iter().all(|k| k.header.is_empty()), "{st:?}");
    finish(pool).await;
}

/// Many concurrent requests over three headers with two workers (so
/// eviction happens under load), some of them crashing once: every request
/// gets exactly its own answer.
pub(crate) async fn concurrent_mix_every_request_answered(cx: Ctx) {
    let pool = cx.fake_pool(PoolConfig {
        max_queue_per_key: 64,
        ..base_cfg()
    });
    let mut tasks = Vec::new();
    for i in 0..45 {
        let header = ["", "import A\n", "import B\n"][i % 3];
        let fault = match i % 5 {
            0 => "-- FAKE error\n".to_string(),
            1 => format!("-- FAKE crash_once {}\n", cx.path(&format!("flag{i}"))),
            _ => String::new(),
        };
        let text = format!("{header}theorem t{i} : True := trivial\n{fault}-- id {i}\n");
        let p = pool.clone();
        tasks.push(tokio::spawn(async move {
            (i, p.call::<method::Check>(CheckParams::new(text)).await)
        }));
    }
    for t in tasks {
        let (i, r) = t.await.unwrap();
        let want = if i % 5 == 0 {
            CheckStatus::Error
        } else {
            CheckStatus::Ok
        };
        assert_eq!(r.unwrap().status, want, "request {i}");
    }
    let c = pool.status().counters;
    assert_eq!(c.requests, 45);
    assert_eq!((c.crashes, c.retries, c.worker_failed), (9, 9, 0));
    finish(pool).await;
}
