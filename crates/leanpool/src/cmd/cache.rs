//! `leanpool cache stats|clear`: the daemon's result cache (see "Result
//! cache" in docs/protocol.md).
//!
//! `stats --socket PATH` asks a running daemon (`status`' `cache`);
//! without `--socket` it opens the store of `--config FILE` (its `[cache]`)
//! or `--dir DIR` directly, which only works while no daemon holds it.
//! `clear --socket PATH` asks a running daemon to empty its store
//! (`cache_clear`, its owner only); `clear --config FILE` / `--dir DIR`
//! empties a store no daemon holds.

use anyhow::Context;
use leanpool_cache::{CacheConfig, CacheStatus, Store, StoreError};
use leanpool_daemon::DaemonConfig;
use leanpool_protocol::method::{self, NoParams};
use leanpool_rpc::Client;
use std::path::PathBuf;

#[derive(clap::Subcommand)]
pub enum Command {
    /// Hits, misses, in-flight joins, entries and bytes.
    Stats(Args),
    /// Remove every stored answer (a running daemon's with --socket).
    Clear(Args),
}

#[derive(clap::Args)]
pub struct Args {
    /// A running daemon's socket.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["config", "dir"])]
    pub socket: Option<PathBuf>,
    /// The daemon's config file: its `[cache]` names the store.
    #[arg(long, value_name = "FILE", conflicts_with = "dir")]
    pub config: Option<PathBuf>,
    /// The store's directory (default: `[cache] dir`'s default).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Print JSON (`status`' `cache` object).
    #[arg(long)]
    pub json: bool,
}

pub async fn run(c: Command) -> anyhow::Result<i32> {
    match c {
        Command::Stats(a) => {
            let s = match &a.socket {
                Some(socket) => remote(socket).await?,
                None => {
                    let (cfg, store) = open(&a)?;
                    let (entries, bytes) = store.usage();
                    CacheStatus {
                        enabled: cfg.enabled,
                        path: Some(store.path().display().to_string()),
                        entries,
                        bytes,
                        max_bytes: cfg.max_bytes,
                        ..CacheStatus::default()
                    }
                }
            };
            if a.json {
                println!("{}", serde_json::to_string_pretty(&s)?);
            } else {
                print!("{}", human(&s));
            }
            Ok(0)
        }
        Command::Clear(a) => {
            let (n, path) = match &a.socket {
                Some(socket) => {
                    let n = connect(socket)
                        .await?
                        .request::<method::CacheClear>(&NoParams)
                        .await?
                        .removed;
                    (n, format!("the daemon at {}", socket.display()))
                }
                None => {
                    let (_, store) = open(&a)?;
                    (store.clear()?, store.path().display().to_string())
                }
            };
            println!("removed {n} entries from {path}");
            Ok(0)
        }
    }
}

async fn connect(socket: &std::path::Path) -> anyhow::Result<Client> {
    Client::connect(socket)
        .await
        .with_context(|| format!("is `leanpool serve --socket {}` running?", socket.display()))
}

async fn remote(socket: &std::path::Path) -> anyhow::Result<CacheStatus> {
    connect(socket)
        .await?
        .request::<method::Status>(&NoParams)
        .await?
        .cache
        .context("this daemon reports no result cache")
}

fn open(a: &Args) -> anyhow::Result<(CacheConfig, Store)> {
    let mut cfg = match &a.config {
        Some(p) => DaemonConfig::load(p)?.cache,
        None => CacheConfig::default(),
    };
    if let Some(d) = &a.dir {
        cfg.dir = Some(d.clone());
    }
    let dir = cfg.dir()?;
    match Store::open(&dir, cfg.max_bytes) {
        Ok(s) => Ok((cfg, s)),
        Err(StoreError::InUse(p)) => anyhow::bail!(
            "{} is held by a running daemon: ask it with `leanpool cache stats|clear --socket PATH`",
            p.display()
        ),
        Err(e) => Err(e.into()),
    }
}

/// One line per fact, counters only when a daemon reported them.
pub fn human(s: &CacheStatus) -> String {
    let mut o = String::new();
    let state = if s.enabled { "on" } else { "off" };
    o.push_str(&format!("cache {state}"));
    if let Some(r) = &s.reason {
        o.push_str(&format!("  ({r})"));
    }
    if let Some(p) = &s.path {
        o.push_str(&format!("  store {p}"));
    }
    if let Some(op) = &s.opened {
        o.push_str(&format!("  opened {op}"));
    }
    o.push('\n');
    o.push_str(&format!(
        "entries {}  bytes {} of {}\n",
        s.entries, s.bytes, s.max_bytes
    ));
    if s.hits + s.misses + s.in_flight_joins + s.bypassed + s.corrupt > 0 {
        o.push_str(&format!(
            "hits {}  misses {}  in_flight_joins {}  bypassed {}  corrupt {}\n",
            s.hits, s.misses, s.in_flight_joins, s.bypassed, s.corrupt
        ));
    }
    o
}
