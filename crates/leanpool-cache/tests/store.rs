//! The result store on real files: persistence, LRU under the cap, and the
//! faults (a writer SIGKILLed mid-write, a truncated file, a corrupted file,
//! a tampered entry): the store is repaired or discarded and never gives a
//! wrong answer.

use leanpool_cache::store::{Lookup, Opened, Store, StoreError, FILE_NAME};
use leanpool_cache::Key;
use redb::ReadableTable;
use sha2::{Digest, Sha256};
use std::io::{BufRead, BufReader};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn key(i: u64) -> Key {
    Key(Sha256::digest(i.to_le_bytes()).into())
}

/// The answer stored for `i` (sizes vary; `big` makes a commit write many
/// pages).
fn answer(i: u64, big: bool) -> Vec<u8> {
    let pad = if big {
        20_000 + (i % 7) as usize * 3_000
    } else {
        (i % 50) as usize
    };
    format!(
        "{{\"status\":\"ok\",\"i\":{i},\"pad\":\"{}\"}}",
        "x".repeat(pad)
    )
    .into_bytes()
}

/// Every key is either absent or holds exactly its own answer.
fn assert_never_wrong(store: &Store, n: u64, big: bool) -> u64 {
    let mut found = 0;
    for i in 0..n {
        match store.get(&key(i)).unwrap() {
            Lookup::Hit(a) => {
                assert!(a == answer(i, big), "entry {i} came back different");
                found += 1;
            }
            Lookup::Miss | Lookup::Corrupt => {}
        }
    }
    found
}

#[test]
fn answers_persist_and_files_are_private() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cache");
    {
        let s = Store::open(&dir, 1 << 30).unwrap();
        assert_eq!(s.opened(), Opened::Intact);
        for i in 0..20 {
            assert!(s.put(&key(i), &answer(i, false)).unwrap());
        }
        assert_eq!(s.usage().0, 20);
    }
    let s = Store::open(&dir, 1 << 30).unwrap();
    assert_eq!(assert_never_wrong(&s, 20, false), 20);
    assert_eq!(s.get(&key(99)).unwrap(), Lookup::Miss);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&dir.join(FILE_NAME)), 0o600);
    // One store, one daemon: a second open while this one lives is refused.
    assert!(matches!(
        Store::open(&dir, 1 << 30),
        Err(StoreError::InUse(_))
    ));
    assert_eq!(s.clear().unwrap(), 20);
    assert_eq!(s.usage(), (0, 0));
    assert_eq!(assert_never_wrong(&s, 20, false), 0);
}

#[test]
fn least_recently_used_entries_go_first_under_the_cap() {
    let tmp = tempfile::tempdir().unwrap();
    let one = answer(0, true).len() as u64 + 32;
    // Room for 8 entries of ~20-38 KB; each is under an eighth of the cap.
    let cap = 8 * 40_000;
    let s = Store::open(tmp.path(), cap).unwrap();
    assert!(one <= cap / 8);
    for i in 0..6 {
        s.put(&key(i), &answer(i, true)).unwrap();
    }
    // 0 is used again: now the most recent.
    assert!(matches!(s.get(&key(0)).unwrap(), Lookup::Hit(_)));
    for i in 6..20 {
        s.put(&key(i), &answer(i, true)).unwrap();
        assert!(s.usage().1 <= cap, "over the cap after {i}");
    }
    // The newest survive, 1 (never used again) is long gone.
    assert!(hit(&s, 19));
    assert!(!hit(&s, 1));
    // Recency survives a reopen (written on insert and at close): 0 was
    // touched after 1..5, so it outlives them.
    let tmp2 = tempfile::tempdir().unwrap();
    {
        let s = Store::open(tmp2.path(), cap).unwrap();
        for i in 0..8 {
            s.put(&key(i), &answer(i, true)).unwrap();
        }
        s.get(&key(0)).unwrap();
    }
    let s = Store::open(tmp2.path(), cap).unwrap();
    for i in 8..12 {
        s.put(&key(i), &answer(i, true)).unwrap();
    }
    assert!(s.usage().1 <= cap);
    assert!(hit(&s, 0), "0 was used after 1");
    assert!(!hit(&s, 1), "1 is the least recently used");
    // An answer bigger than an eighth of the cap is not stored.
    let huge = vec![b'x'; cap as usize / 4];
    assert!(!s.put(&key(50), &huge).unwrap());
}

/// Attack: an entry's bytes changed on disk (another bug, a disk error, a
/// hand edit) while the file stays a valid database. The per-entry digest
/// refuses it: the request is a miss, the entry is removed.
#[test]
fn attack_tampered_entry_is_never_served() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let s = Store::open(tmp.path(), 1 << 30).unwrap();
        s.put(&key(1), &answer(1, false)).unwrap();
        s.put(&key(2), &answer(2, false)).unwrap();
    }
    {
        let db = redb::Database::create(tmp.path().join(FILE_NAME)).unwrap();
        let t: redb::TableDefinition<&[u8], &[u8]> = redb::TableDefinition::new("entries");
        let w = db.begin_write().unwrap();
        {
            let mut e = w.open_table(t).unwrap();
            let mut v = e
                .get(key(1).0.as_slice())
                .unwrap()
                .unwrap()
                .value()
                .to_vec();
            // "ok" -> "no": a verdict flipped, digest kept.
            let at = v.len() - 12;
            v[at] ^= 1;
            e.insert(key(1).0.as_slice(), v.as_slice()).unwrap();
            // Another entry's bytes copied under key 2.
            let other = e
                .get(key(1).0.as_slice())
                .unwrap()
                .unwrap()
                .value()
                .to_vec();
            e.insert(key(2).0.as_slice(), other.as_slice()).unwrap();
        }
        w.commit().unwrap();
    }
    let s = Store::open(tmp.path(), 1 << 30).unwrap();
    assert_eq!(s.get(&key(1)).unwrap(), Lookup::Corrupt);
    assert_eq!(s.get(&key(2)).unwrap(), Lookup::Corrupt);
    assert_eq!(s.get(&key(1)).unwrap(), Lookup::Miss, "removed");
    assert_eq!(s.usage().0, 0);
}

fn hit(s: &Store, i: u64) -> bool {
    match s.get(&key(i)).unwrap() {
        Lookup::Hit(a) => {
            assert!(a == answer(i, true), "entry {i} came back different");
            true
        }
        _ => false,
    }
}

fn fill(dir: &Path, n: u64) {
    let s = Store::open(dir, 1 << 30).unwrap();
    for i in 0..n {
        s.put(&key(i), &answer(i, true)).unwrap();
    }
}

/// A truncated store file (disk full, a copy cut short): repaired or
/// discarded at open; every answer still served is exactly its own, and
/// the store works afterwards.
#[test]
fn truncated_store_is_repaired_or_discarded_never_wrong() {
    let mut outcomes = vec![];
    for keep in [0.0, 0.1, 0.5, 0.9, 0.99] {
        let tmp = tempfile::tempdir().unwrap();
        fill(tmp.path(), 40);
        let f = tmp.path().join(FILE_NAME);
        let len = std::fs::metadata(&f).unwrap().len();
        let file = std::fs::OpenOptions::new().write(true).open(&f).unwrap();
        file.set_len((len as f64 * keep) as u64).unwrap();
        drop(file);
        let s = Store::open(tmp.path(), 1 << 30).unwrap();
        let found = assert_never_wrong(&s, 40, true);
        outcomes.push((keep, s.opened(), found));
        s.put(&key(100), &answer(100, true)).unwrap();
        assert!(hit(&s, 100));
    }
    eprintln!("truncations (kept fraction, open outcome, entries left): {outcomes:?}");
    assert!(outcomes.iter().any(|(_, o, _)| *o != Opened::Intact));
}

/// Bytes overwritten in the middle of the store file: repaired or
/// discarded; never a wrong answer.
#[test]
fn corrupted_store_is_repaired_or_discarded_never_wrong() {
    let mut outcomes = vec![];
    for (n, at) in [0.0, 0.05, 0.2, 0.35, 0.5, 0.65, 0.8, 0.95]
        .iter()
        .enumerate()
    {
        let tmp = tempfile::tempdir().unwrap();
        fill(tmp.path(), 40);
        let f = tmp.path().join(FILE_NAME);
        let mut bytes = std::fs::read(&f).unwrap();
        let start = (bytes.len() as f64 * at) as usize;
        for (j, b) in bytes[start..].iter_mut().take(4096).enumerate() {
            *b ^= (0x5a + n + j) as u8 | 1;
        }
        std::fs::write(&f, &bytes).unwrap();
        let s = Store::open(tmp.path(), 1 << 30).unwrap();
        let found = assert_never_wrong(&s, 40, true);
        outcomes.push((*at, s.opened(), found));
        s.put(&key(100), &answer(100, true)).unwrap();
        assert!(hit(&s, 100));
    }
    eprintln!("corruptions (offset fraction, open outcome, entries left): {outcomes:?}");
}

#[test]
fn unsafe_locations_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let real = tmp.path().join("real");
    std::fs::create_dir(&real).unwrap();
    let link = tmp.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    assert!(matches!(
        Store::open(&link, 1 << 20),
        Err(StoreError::Unsafe { .. })
    ));
    // A store file that is a symlink (to a file someone else controls).
    let d = tmp.path().join("d");
    std::fs::create_dir(&d).unwrap();
    std::os::unix::fs::symlink(tmp.path().join("elsewhere"), d.join(FILE_NAME)).unwrap();
    assert!(matches!(
        Store::open(&d, 1 << 20),
        Err(StoreError::Unsafe { .. })
    ));
    // A directory open to others is tightened to 0700.
    let open = tmp.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    Store::open(&open, 1 << 20).unwrap();
    assert_eq!(std::fs::metadata(&open).unwrap().mode() & 0o777, 0o700);
    // Owned by another user: refused (needs root to set up).
    if unsafe { libc::geteuid() } == 0 {
        let other = tmp.path().join("other");
        std::fs::create_dir(&other).unwrap();
        std::os::unix::fs::chown(&other, Some(65534), Some(65534)).unwrap();
        assert!(matches!(
            Store::open(&other, 1 << 20),
            Err(StoreError::Unsafe { .. })
        ));
    }
}

const CHILD_ENV: &str = "LEANPOOL_CACHE_TEST_WRITER_DIR";

/// Not a test on its own: the writer process of
/// `writer_sigkilled_mid_write_loses_nothing_committed`, run by it with
/// `--ignored`. Writes big entries forever, printing each committed index.
#[test]
#[ignore = "child process of writer_sigkilled_mid_write_loses_nothing_committed"]
fn sigkill_child_writer() {
    let dir = std::env::var(CHILD_ENV).expect("run by the SIGKILL test");
    let start: u64 = std::env::var("LEANPOOL_CACHE_TEST_START")
        .unwrap()
        .parse()
        .unwrap();
    let s = Store::open(Path::new(&dir), 1 << 30).unwrap();
    for i in start.. {
        s.put(&key(i), &answer(i, true)).unwrap();
        println!("{i}");
    }
}

/// A real writer process SIGKILLed while it commits entries, three times
/// on one store: every entry whose commit returned is there and intact,
/// nothing is ever wrong, and the store opens (repaired if needed).
#[test]
fn writer_sigkilled_mid_write_loses_nothing_committed() {
    let tmp = tempfile::tempdir().unwrap();
    let mut next = 0u64;
    let mut outcomes = vec![];
    for round in 0..3u64 {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--ignored",
                "--exact",
                "sigkill_child_writer",
                "--nocapture",
            ])
            .env(CHILD_ENV, tmp.path())
            .env("LEANPOOL_CACHE_TEST_START", next.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut last = None;
        let t0 = Instant::now();
        // Kill after a different number of commits each round, while the
        // writer is in the middle of its next one.
        while last.is_none_or(|l| l < next + 15 + round * 7) {
            let line = lines.next().expect("writer ended").unwrap();
            if let Ok(i) = line.trim().parse::<u64>() {
                last = Some(i);
            }
            assert!(t0.elapsed() < Duration::from_secs(60), "writer too slow");
        }
        std::thread::sleep(Duration::from_micros(300 * round));
        nix_kill(child.id());
        let _ = child.wait();
        let committed = last.unwrap();
        let s = Store::open(tmp.path(), 1 << 30).unwrap();
        for i in 0..=committed {
            assert!(hit(&s, i), "round {round}: committed entry {i} lost");
        }
        assert_never_wrong(&s, committed + 50, true);
        outcomes.push((committed, s.opened()));
        next = committed + 1;
    }
    eprintln!("kills (last committed, open outcome): {outcomes:?}");
}

fn nix_kill(pid: u32) {
    // SAFETY: kill has no memory preconditions.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
}
