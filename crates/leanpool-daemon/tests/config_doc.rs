//! The documents state the config's defaults as the code has them: each
//! default is written once in code (`DaemonConfig::default()` and the
//! constants it reads), and a number the docs give for it is checked here,
//! so a default changed in one place and not the other fails.
//!
//! * docs/protocol.md's example config: every key it sets has its default
//!   value (except the keys it shows as examples: `allowed_uids`,
//!   `[[pool.prewarm]]`, `[[project]]`), and every key of every table is
//!   in it (set, or commented out for a default that is absent).
//! * prose anywhere in docs/ of the form "`key` (default N unit)" or
//!   "`[table] key` ..., default N": N is the key's default.
//! * the few caps with no config key that the docs quote, by phrase.

use leanpool_daemon::DaemonConfig;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

const PROTOCOL: &str = include_str!("../../../docs/protocol.md");
const DOCS: [(&str, &str); 4] = [
    ("protocol.md", PROTOCOL),
    ("internals.md", include_str!("../../../docs/internals.md")),
    ("editors.md", include_str!("../../../docs/editors.md")),
    (
        "threat-model.md",
        include_str!("../../../docs/threat-model.md"),
    ),
];

/// Every leaf of the default config as `table.key` (top-level keys bare)
/// with its value; `null` for a default that is absent.
fn defaults() -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    let Value::Object(top) = serde_json::to_value(DaemonConfig::default()).unwrap() else {
        panic!("the config serializes as a table")
    };
    for (k, v) in top {
        match v {
            Value::Object(table) => {
                for (kk, vv) in table {
                    out.insert(format!("{k}.{kk}"), vv);
                }
            }
            v => {
                out.insert(k, v);
            }
        }
    }
    out
}

/// The body of the doc's first `toml` block: the example config.
fn example_config() -> &'static str {
    let start = PROTOCOL.find("```toml\n").expect("a toml block") + "```toml\n".len();
    &PROTOCOL[start..start + PROTOCOL[start..].find("```").unwrap()]
}

#[test]
fn example_config_sets_only_defaults() {
    let body = example_config();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("d.toml");
    std::fs::write(&p, body).unwrap();
    let mut c = DaemonConfig::load(&p).unwrap();
    // What the example shows as an example, not as the default.
    assert!(c.allowed_uids.is_some() && !c.pool.prewarm.is_empty() && !c.projects.is_empty());
    c.allowed_uids = None;
    c.pool.prewarm.clear();
    c.projects.clear();
    let shown = serde_json::to_value(&c).unwrap();
    let default = serde_json::to_value(DaemonConfig::default()).unwrap();
    for (key, value) in defaults() {
        let at = format!("/{}", key.replace('.', "/"));
        assert_eq!(
            shown.pointer(&at),
            Some(&value),
            "docs/protocol.md's example config sets `{key}` to another value than its default \
             (DaemonConfig::default()); write the default there, or mark the key as an example here"
        );
    }
    assert_eq!(shown, default);
}

#[test]
fn example_config_lists_every_key() {
    let mut table = String::new();
    let mut listed = BTreeSet::new();
    let mut commented = BTreeSet::new();
    for line in example_config().lines() {
        let line = line.trim();
        if let Some(h) = line.strip_prefix('[') {
            table = h
                .trim_start_matches('[')
                .split(']')
                .next()
                .unwrap()
                .to_string();
            // `[[pool.prewarm]]` lists `[pool] prewarm`.
            listed.insert(table.clone());
        } else if let Some(k) = assigned_key(line) {
            let key = match table.as_str() {
                "" => k.to_string(),
                t => format!("{t}.{k}"),
            };
            if line.starts_with('#') {
                commented.insert(key.clone());
            }
            listed.insert(key);
        }
    }
    let defaults = defaults();
    for k in &commented {
        // `[[project]]`'s keys are not in the default (no project).
        if let Some(v) = defaults.get(k) {
            assert!(v.is_null(), "`{k}` is commented out in docs/protocol.md's example config but has a default, {v}: show it set");
        }
    }
    let missing: Vec<&String> = defaults.keys().filter(|k| !listed.contains(*k)).collect();
    assert!(
        missing.is_empty(),
        "docs/protocol.md's example config does not list {missing:?}: every key is shown \
         (commented out when its default is absent)"
    );
}

/// `key` of a line `key = ...` or `# key = ...`.
fn assigned_key(line: &str) -> Option<&str> {
    let line = line.trim_start_matches('#').trim_start();
    let end = line
        .find(|c: char| !(c.is_ascii_lowercase() || c == '_'))
        .unwrap_or(line.len());
    let rest = line[end..].trim_start();
    (end > 0 && rest.starts_with('=')).then(|| &line[..end])
}

/// A mention "`[table] key` ... (default N unit": the table, the key, N
/// and the unit. The default must follow within 40 characters of the
/// same line, after `(`, `,` or `;`.
struct Mention<'a> {
    table: Option<&'a str>,
    key: &'a str,
    n: f64,
    unit: Option<&'a str>,
    text: &'a str,
}

fn mentions(text: &str) -> Vec<Mention<'_>> {
    let mut out = vec![];
    let spans: Vec<(usize, &str)> = text.match_indices('`').collect();
    for w in spans.windows(2) {
        let (open, close) = (w[0].0, w[1].0);
        let quoted = &text[open + 1..close];
        let (table, key) = match quoted.strip_prefix('[').and_then(|q| q.split_once("] ")) {
            Some((t, k)) => (Some(t), k),
            None => (None, quoted),
        };
        let word = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_lowercase() || c == '_');
        if !word(key) || !table.is_none_or(word) {
            continue;
        }
        if let Some((n, unit, end)) = default_after(&text[close + 1..]) {
            out.push(Mention {
                table,
                key,
                n,
                unit,
                text: &text[open..close + 1 + end],
            });
        }
    }
    out
}

/// `(N, unit, length)` of "... (default N unit" at the start of `after`.
fn default_after(after: &str) -> Option<(f64, Option<&str>, usize)> {
    for (i, c) in after.char_indices().take_while(|&(i, _)| i < 40) {
        if c == '`' || c == '\n' {
            return None;
        }
        if !matches!(c, '(' | ',' | ';') {
            continue;
        }
        let rest = after[i + 1..].trim_start();
        let Some(rest) = rest.strip_prefix("default") else {
            continue;
        };
        let rest = rest.strip_prefix(':').unwrap_or(rest);
        if !rest.starts_with(char::is_whitespace) {
            continue;
        }
        let rest = rest.trim_start();
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == ',' || c == '.'))
            .unwrap_or(rest.len());
        let number = rest[..digits].trim_end_matches([',', '.']);
        let n: f64 = number.replace(',', "").parse().ok()?;
        let tail = rest[number.len()..].trim_start();
        let unit = ["KiB", "MiB", "GiB", "min", "ms", "s"]
            .into_iter()
            .find(|u| {
                tail.strip_prefix(u)
                    .is_some_and(|r| !r.starts_with(|c: char| c.is_ascii_alphanumeric()))
            });
        let end = after.len() - tail.len() + unit.map_or(0, str::len);
        return Some((n, unit, end));
    }
    None
}

/// `n` with `unit` in the key's own unit (bytes, milliseconds or a count).
fn amount(key: &str, n: f64, unit: Option<&str>) -> f64 {
    let factor = match unit {
        None | Some("ms") => 1.0,
        Some("KiB") => 1024.0,
        Some("MiB") => (1u64 << 20) as f64,
        Some("GiB") => (1u64 << 30) as f64,
        Some("s") => 1000.0,
        Some("min") => 60_000.0,
        Some(u) => panic!("unit {u}"),
    };
    if matches!(unit, Some("s" | "min")) {
        assert!(key.ends_with("_ms"), "`{key}` is not in milliseconds");
    }
    n * factor
}

/// Every "`key` ... (default N unit" in the docs, with the key's default.
#[test]
fn prose_defaults_are_the_configs() {
    let defaults = defaults();
    let mut checked = 0;
    for (name, text) in DOCS {
        for m in mentions(text) {
            let k = m.key;
            let key = match m.table {
                Some(t) => format!("{t}.{k}"),
                None => {
                    let hits: Vec<&String> = defaults
                        .keys()
                        .filter(|d| *d == k || d.ends_with(&format!(".{k}")))
                        .collect();
                    match hits.as_slice() {
                        [one] => (*one).clone(),
                        [] => continue, // not a config key (a param, a flag)
                        many => {
                            panic!("{name}: `{k}` is ambiguous ({many:?}): write `[table] {k}`")
                        }
                    }
                }
            };
            let Some(want) = defaults.get(&key).and_then(Value::as_f64) else {
                panic!("{name}: `{key}` has no numeric default");
            };
            let said = amount(&key, m.n, m.unit);
            assert_eq!(
                said, want,
                "{name}: {:?}: `{key}`'s default is {want} (DaemonConfig::default())",
                m.text
            );
            checked += 1;
        }
    }
    // 15 today: the transport's four caps, the gted caps, the lease caps
    // (one twice), shutdown_deadline_ms, spares_per_key,
    // rss_headroom_bytes, timeout_grace_ms. Fewer: a mention stopped
    // matching (reworded across a line break?).
    assert!(checked >= 15, "only {checked} prose defaults found");
}

/// Caps and defaults without a config key that the docs quote.
#[test]
fn quoted_constants_are_the_codes() {
    let d = DaemonConfig::default();
    let lease = leanpool_lean::leased::LeaseLimits::DEFAULT;
    let gib = |b: u64| b >> 30;
    let phrases = [
        format!(
            "clamped (not refused) to the pool's `[min_timeout_ms, max_timeout_ms]` (default {} s to {} min)",
            d.pool.min_timeout_ms / 1000,
            d.pool.max_timeout_ms / 60_000
        ),
        format!("# 0 = kill at once; at most {}", leanpool_pool::MAX_TIMEOUT_GRACE_MS),
        format!("(+{} s grace, then the lease ends)", lease.grace.as_secs()),
        format!(
            "or **{} GiB** before any worker has started",
            gib(leanpool_pool::sizing::ESTIMATED_WORKER_RSS)
        ),
        format!(
            "at least 1, at most {}",
            leanpool_pool::sizing::MAX_SIZED_WORKERS
        ),
    ];
    for p in phrases {
        let flat = PROTOCOL.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            flat.contains(&p),
            "docs/protocol.md should say {p:?} (from the code's constants)"
        );
    }
}
