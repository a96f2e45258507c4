//! Regenerates the corpus fixtures: runs Lean's command line cold
//! (`lean --json FILE`, through the configured backend) on each corpus file
//! and stores what it printed next to the file as `NAME.expected.json`.
//! `tests/corpus.rs` compares leanpool's warm answers with these.
//!
//! `cargo run -p leanpool-methods --example regen_corpus -- [FILE.lean ...]`
//! (default: every `crates/leanpool-methods/tests/corpus/*.lean`). Each file
//! costs one cold Lean start (~20-60 s on the WASM backend); see
//! `scripts/regen-corpus-fixtures`.

use leanpool_lean::cold::{self, ColdMessage};
use leanpool_lean::LeanCommand;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What a fixture holds.
#[derive(Serialize)]
struct Fixture<'a> {
    /// Lean's version line, as recorded by set-up.
    lean: &'a str,
    messages: &'a [ColdMessage],
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    // `--screen`: only check that the guard accepts every file.
    let screen_only = args.first().is_some_and(|a| a == "--screen");
    if screen_only {
        args.remove(0);
    }
    let mut files: Vec<PathBuf> = args.into_iter().map(PathBuf::from).collect();
    if files.is_empty() {
        files = std::fs::read_dir(&dir)?
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "lean"))
            .collect();
        files.sort();
    }
    if screen_only {
        let mut bad = 0;
        for file in &files {
            if let Err(reason) =
                leanpool_screen::screen(&std::fs::read_to_string(file)?, &Default::default())
            {
                eprintln!("{}: rejected: {reason}", file.display());
                bad += 1;
            }
        }
        return if bad == 0 {
            Ok(())
        } else {
            Err(format!("{bad} files rejected").into())
        };
    }
    // Lean names a file's module (and so its private names,
    // `_private.«NAME».0.x`) from its path relative to the working
    // directory: run from the corpus directory, as tests/corpus.rs expects.
    let files: Vec<PathBuf> = files
        .iter()
        .map(std::fs::canonicalize)
        .collect::<Result<_, _>>()?;
    std::env::set_current_dir(&dir)?;
    let command = LeanCommand::detect()?;
    let version = command.version(Duration::from_secs(180)).await?;
    eprintln!("Lean: {version} ({})", command.source);
    for file in &files {
        let text = std::fs::read_to_string(file)?;
        // A corpus file the guard refuses would be answered `rejected`,
        // never compared: not a useful fixture.
        if let Err(reason) = leanpool_screen::screen(&text, &Default::default()) {
            return Err(format!("{}: the guard rejects it: {reason}", file.display()).into());
        }
        let t = Instant::now();
        let abs = std::fs::canonicalize(file)?;
        let mut messages = cold::run_json(&command, &abs, Duration::from_secs(600)).await?;
        let lib = cold::lean_lib(&command);
        for m in &mut messages {
            m.data = cold::hide_lean_lib(&m.data, lib.as_deref());
        }
        let out = file.with_extension("expected.json");
        let mut json = serde_json::to_string_pretty(&Fixture {
            lean: &version,
            messages: &messages,
        })?;
        json.push('\n');
        std::fs::write(&out, json)?;
        eprintln!(
            "{}: {} messages in {:.1} s",
            file.display(),
            messages.len(),
            t.elapsed().as_secs_f64()
        );
    }
    Ok(())
}
