//! Bounded fuzzing of everything the daemon does with bytes before a
//! method runs: framing, envelope decoding, parameter decoding, and `gted`
//! (the one method that needs no Lean). Deterministic (fixed seed), >= 10^5
//! frames, a few seconds. The live-daemon counterpart is in
//! `crates/leanpool/tests/daemon_input.rs`.

use leanpool_daemon::gted::{run_gted, GtedLimits};
use leanpool_protocol::GtedParams;
use leanpool_protocol::Response;
use leanpool_rpc::framing::{Frame, FrameReader};
use leanpool_rpc::handler::params;
use leanpool_rpc::request::{decode, Decoded};

mod fuzzgen;
use fuzzgen::{frame, seeds};
use rand::rngs::StdRng;
use rand::SeedableRng;

const FRAMES: usize = 150_000;
const MAX: usize = 2048;

#[tokio::test]
async fn fuzz_framing_envelope_params_and_gted() {
    let mut rng = StdRng::seed_from_u64(0x1ea9_9001);
    let seeds = seeds();
    let mut input = Vec::new();
    let mut sent = 0usize;
    for _ in 0..FRAMES {
        input.extend(frame(&mut rng, &seeds, MAX));
        input.push(b'\n');
        sent += 1;
    }
    // An odd buffer size so that frames straddle reads.
    let mut reader = FrameReader::new(
        tokio::io::BufReader::with_capacity(4093, input.as_slice()),
        MAX,
    );
    let (mut frames, mut calls, mut replies, mut blanks, mut too_large, mut gted_ok) =
        (0, 0, 0, 0, 0, 0);
    while let Some(f) = reader.next_frame().await.unwrap() {
        frames += 1;
        if let Frame::TooLarge { len, .. } = &f {
            assert!(*len > MAX);
            too_large += 1;
        }
        match decode(&f, MAX) {
            Decoded::Blank => blanks += 1,
            Decoded::Reply(r) => {
                replies += 1;
                let back: Response =
                    serde_json::from_slice(&serde_json::to_vec(&r).unwrap()).unwrap();
                assert!(back.error.is_some() && back.result.is_none());
            }
            Decoded::Call(req) => {
                calls += 1;
                // What the daemon does next: decode params, run gted.
                let decoded = leanpool_daemon::methods::decode(&req.method, req.params.clone());
                if req.method == "gted" && decoded.is_ok() {
                    let p: GtedParams = params(&req.method, req.params.clone()).unwrap();
                    if run_gted(&p, &GtedLimits::default()).is_ok() {
                        gted_ok += 1;
                    }
                }
                // A decoded request re-encodes to one that decodes the same.
                let again = decode(&Frame::Line(serde_json::to_vec(&req).unwrap()), usize::MAX);
                assert_eq!(again, Decoded::Call(req));
            }
        }
    }
    assert_eq!(frames, sent, "every line is exactly one frame");
    assert_eq!(calls + replies + blanks, frames);
    eprintln!("{frames} frames: {calls} requests ({gted_ok} gted computed), {replies} error replies ({too_large} too large), {blanks} blank");
    // The generator must actually reach every branch, or the test proves little.
    assert!(calls > 10_000 && replies > 10_000 && too_large > 1_000 && gted_ok > 1_000);
}
