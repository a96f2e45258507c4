//! Development probe: start one worker for a header, then elaborate each
//! given file's text on it in turn, printing status, diagnostics, time,
//! and RSS. `cargo run -p leanpool-lean --example probe -- [--timeout-ms N] [--warmup] A.lean B.lean ...`
//! (all files must share a header).

use leanpool_lean::{LeanCommand, Worker, WorkerConfig};
use leanpool_methods::check_on;
use leanpool_protocol::CheckParams;
use leanpool_screen::header_key;
use std::time::{Duration, Instant};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut timeout = Duration::from_secs(120);
    let mut warmup = None;
    loop {
        match args.first().map(String::as_str) {
            Some("--timeout-ms") => {
                timeout = Duration::from_millis(args[1].parse()?);
                args.drain(..2);
            }
            Some("--warmup") => {
                warmup = Some(leanpool_lean::DEFAULT_WARMUP.to_string());
                args.remove(0);
            }
            _ => break,
        }
    }
    let texts: Vec<String> = args
        .iter()
        .map(std::fs::read_to_string)
        .collect::<Result<_, _>>()?;
    let header = header_key(texts.first().map(String::as_str).unwrap_or(""));
    let mut cfg = WorkerConfig::new(LeanCommand::detect()?);
    cfg.warmup = warmup;
    let t = Instant::now();
    let mut w = Worker::spawn(&cfg, &header).await?;
    println!(
        "spawned pid {} in {:.2} s, rss {:?} MB",
        w.pid(),
        t.elapsed().as_secs_f64(),
        w.rss_bytes().map(|b| b >> 20)
    );
    for (name, text) in args.iter().zip(&texts) {
        let t = Instant::now();
        let p = CheckParams::new(text.clone())
            .with_timeout_ms(timeout.as_millis() as u64)
            .with_timings();
        let r = check_on(&mut w, &p, timeout).await?;
        println!(
            "{name}: {:?} in {:.3} s, rss {:?} MB",
            r.status,
            t.elapsed().as_secs_f64(),
            w.rss_bytes().map(|b| b >> 20)
        );
        for d in &r.diagnostics {
            println!(
                "  {:?} {}:{}-{}:{} {}",
                d.severity,
                d.range.start.line,
                d.range.start.character,
                d.range.end.line,
                d.range.end.character,
                d.message.replace('\n', "\n    ")
            );
        }
        if let Some(reason) = &r.reason {
            println!("  reason: {reason}");
        }
        if !w.is_alive() {
            println!("worker is dead; stopping");
            return Ok(());
        }
    }
    println!(
        "lsp requests {}, server requests {}",
        w.lsp_requests(),
        w.server_requests()
    );
    w.kill().await;
    Ok(())
}
