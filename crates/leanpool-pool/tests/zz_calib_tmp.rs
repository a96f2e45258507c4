use leanpool_lean::{LeanCommand, Worker, WorkerConfig};
use std::time::{Duration, Instant};
#[tokio::test]
async fn calib() {
    let cfg = WorkerConfig::new(LeanCommand::detect().unwrap());
    let t = Instant::now();
    let mut w = Worker::spawn(&cfg, "").await.unwrap();
    eprintln!("spawn {:?}", t.elapsed());
    for (name, text) in [
        ("small", "theorem a : 2 + 2 = 4 := rfl\n".to_string()),
        ("omega1", (0..1).map(|i| format!("theorem p_{i} (a b c : Nat) (h1 : a < b) (h2 : b < c) : a + {i} < c + {i} + 1 := by omega\n")).collect::<String>()),
        ("omega1b", (0..1).map(|i| format!("theorem q_{i} (a b c : Nat) (h1 : a < b) (h2 : b < c) : a + {i} < c + {i} + 1 := by omega\n")).collect::<String>()),
        ("omega5", (0..5).map(|i| format!("theorem r_{i} (a b c : Nat) (h1 : a < b) (h2 : b < c) : a + {i} < c + {i} + 1 := by omega\n")).collect::<String>()),
        ("decide200", "example : (List.range 200).foldl (· + ·) 0 = 19900 := by decide\n".to_string()),
        ("decide_bounded", "example : ∀ n, n < 40 → n * n ≠ 2 := by decide\n".to_string()),
        ("omega20", (0..20).map(|i| format!("theorem s_{i} (a b c : Nat) (h1 : a < b) (h2 : b < c) : a + {i} < c + {i} + 1 := by omega\n")).collect::<String>()),
    ] {
        let t = Instant::now();
        let d = w.elaborate(&text, Duration::from_secs(240)).await;
        let bad = d.is_err(); eprintln!("{name}: {:?} -> {:?}", t.elapsed(), d.map(|d| d.into_iter().map(|x| x.message).collect::<Vec<_>>())); if bad { break; }
    }
    w.kill().await;
}
