//! The persistent store: one redb file, `results.redb`, in the daemon's
//! cache directory.
//!
//! **Why redb**: pure Rust (no C toolchain, ~20 s to build here against
//! SQLite's bundled C amalgamation), one file, ACID transactions with
//! copy-on-write pages and checksums, and repair of an interrupted commit
//! at open: a daemon killed mid-write loses at most the transaction it was
//! committing. It also takes an exclusive file lock, so two daemons can
//! never write one store.
//!
//! **Layout**: table `entries` maps a [`Key`] to `sha256(key ‖ answer) ‖
//! answer`; table `meta` maps it to `(last_used, size)`. The digest in
//! each entry is checked on every read: an entry is served only when its
//! bytes are positively the bytes that were written for that key;
//! anything else is deleted and counted as corrupt (a miss, never an
//! answer).
//!
//! **Size cap and LRU**: `size` is the stored entry's length; the sum over
//! entries is kept at or under `max_bytes` by evicting the entries used
//! longest ago. Recency (`last_used`) is kept in memory and written with the
//! next insert or [`Store::flush`] (a crash loses recency, never entries or
//! correctness: it only changes which entry is evicted first).
//!
//! **Damage**: at open the file is checked ([`redb::Database::check_integrity`],
//! which also repairs an interrupted commit) and fully indexed; a file
//! redb cannot open or repair, or whose index cannot be read, is moved
//! aside to `results.redb.discarded` and a new, empty store is created.
//! A panic inside redb on a damaged file is caught and treated the same.
//!
//! **Ownership**: the directory is created `0700`, the file `0600`; a
//! directory or file owned by another user, or a symlink, is refused
//! (another user could otherwise plant answers).

// redb's umbrella error (`redb::Error`) is large; results carrying it never
// leave this module (they become `StoreError`).
#![allow(clippy::result_large_err)]

use crate::key::Key;
use redb::{Database, ReadableTable, TableDefinition};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

const ENTRIES: TableDefinition<&[u8], &[u8]> = TableDefinition::new("entries");
const META: TableDefinition<&[u8], (u64, u64)> = TableDefinition::new("meta");

/// The store file's name inside the cache directory.
pub const FILE_NAME: &str = "results.redb";
/// Where a store that could not be opened or repaired is moved.
pub const DISCARDED_NAME: &str = "results.redb.discarded";
/// Bytes of the integrity digest in front of each stored answer.
const DIGEST_LEN: usize = 32;

/// Why the store cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The cache directory or file is unsafe to use.
    #[error("cache {path}: {why}; fix its ownership or choose another `[cache] dir`")]
    Unsafe {
        /// The offending path.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// A file system operation failed.
    #[error("cache {path}: {source}")]
    Io {
        /// The path operated on.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// Another process (another daemon) holds the store.
    #[error("cache {0} is in use by another process (another daemon?); give each daemon its own `[cache] dir`")]
    InUse(PathBuf),
    /// redb failed (after a discard and re-create: the store is unusable).
    #[error("cache {path}: {msg}")]
    Db {
        /// The store file.
        path: PathBuf,
        /// redb's error.
        msg: String,
    },
}

/// What opening the store found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opened {
    /// The file was new or intact.
    Intact,
    /// redb repaired an interrupted commit.
    Repaired,
    /// The file was damaged beyond repair and replaced by an empty store.
    Discarded,
}

/// The persistent answer store (see the module docs).
pub struct Store {
    db: Database,
    path: PathBuf,
    max_bytes: u64,
    index: Mutex<Index>,
    opened: Opened,
}

/// In-memory LRU index of the store's entries.
#[derive(Default)]
struct Index {
    /// key -> (last_used, size)
    meta: HashMap<Key, (u64, u64)>,
    /// last_used -> key (ticks are unique)
    order: BTreeMap<u64, Key>,
    bytes: u64,
    tick: u64,
    /// Keys whose recency changed since the last write.
    dirty: HashSet<Key>,
}

impl Index {
    fn touch(&mut self, k: Key) {
        if let Some((t, _)) = self.meta.get_mut(&k) {
            self.order.remove(t);
            self.tick += 1;
            *t = self.tick;
            self.order.insert(self.tick, k);
            self.dirty.insert(k);
        }
    }

    /// The recency changes not yet written: (key, last_used, size).
    fn take_touches(&mut self) -> Vec<(Key, u64, u64)> {
        let dirty = std::mem::take(&mut self.dirty);
        dirty
            .into_iter()
            .filter_map(|k| self.meta.get(&k).map(|&(t, s)| (k, t, s)))
            .collect()
    }

    fn remove(&mut self, k: &Key) {
        if let Some((t, size)) = self.meta.remove(k) {
            self.order.remove(&t);
            self.bytes -= size;
        }
        self.dirty.remove(k);
    }
}

/// A store entry as written: digest then answer.
fn seal(k: &Key, answer: &[u8]) -> Vec<u8> {
    let mut out = entry_digest(k, answer).to_vec();
    out.extend_from_slice(answer);
    out
}

fn entry_digest(k: &Key, answer: &[u8]) -> [u8; DIGEST_LEN] {
    let mut h = Sha256::new();
    h.update(k.0);
    h.update(answer);
    h.finalize().into()
}

/// The answer of a stored entry, if its digest proves it intact.
fn unseal<'a>(k: &Key, stored: &'a [u8]) -> Option<&'a [u8]> {
    if stored.len() < DIGEST_LEN {
        return None;
    }
    let (d, answer) = stored.split_at(DIGEST_LEN);
    (d == entry_digest(k, answer)).then_some(answer)
}

fn db_error(path: &Path, e: impl std::fmt::Display) -> StoreError {
    StoreError::Db {
        path: path.to_owned(),
        msg: e.to_string(),
    }
}

impl Store {
    /// Opens (or creates) the store in `dir`, capped at `max_bytes` of
    /// entries. A damaged file is repaired or discarded (see the module
    /// docs); [`Store::opened`] says which.
    pub fn open(dir: &Path, max_bytes: u64) -> Result<Store, StoreError> {
        prepare_dir(dir)?;
        let path = dir.join(FILE_NAME);
        check_file(&path)?;
        let (db, index, opened) = match try_open(&path) {
            Ok((db, index, repaired)) => {
                let o = if repaired {
                    Opened::Repaired
                } else {
                    Opened::Intact
                };
                (db, index, o)
            }
            Err(OpenFailure::InUse) => return Err(StoreError::InUse(path)),
            Err(OpenFailure::Damaged(why)) => {
                tracing::warn!(store = %path.display(), %why, "result cache damaged beyond repair: discarded, starting empty");
                let aside = dir.join(DISCARDED_NAME);
                std::fs::rename(&path, &aside).map_err(|source| StoreError::Io {
                    path: path.clone(),
                    source,
                })?;
                match try_open(&path) {
                    Ok((db, index, _)) => (db, index, Opened::Discarded),
                    Err(OpenFailure::InUse) => return Err(StoreError::InUse(path)),
                    Err(OpenFailure::Damaged(why)) => return Err(db_error(&path, why)),
                }
            }
        };
        let store = Store {
            db,
            path,
            max_bytes,
            index: Mutex::new(index),
            opened,
        };
        store.evict_over_cap()?;
        Ok(store)
    }

    /// Whether the file was intact, repaired or discarded at open.
    pub fn opened(&self) -> Opened {
        self.opened
    }

    /// The store file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Entries and their total bytes.
    pub fn usage(&self) -> (u64, u64) {
        let i = self.index.lock().unwrap();
        (i.meta.len() as u64, i.bytes)
    }

    /// The answer stored under `k`, if any and intact (a damaged entry is
    /// removed and reported as [`Lookup::Corrupt`]).
    pub fn get(&self, k: &Key) -> Result<Lookup, StoreError> {
        let found = guarded(&self.path, || {
            let r = self.db.begin_read()?;
            let t = r.open_table(ENTRIES)?;
            let v = t.get(k.0.as_slice())?;
            Ok(v.map(|g| g.value().to_vec()))
        })?;
        let Some(stored) = found else {
            return Ok(Lookup::Miss);
        };
        match unseal(k, &stored) {
            Some(answer) => {
                self.index.lock().unwrap().touch(*k);
                Ok(Lookup::Hit(answer.to_vec()))
            }
            None => {
                tracing::warn!(key = %k.hex(), "result cache entry failed its digest: removed");
                self.remove(&[*k])?;
                Ok(Lookup::Corrupt)
            }
        }
    }

    /// Stores `answer` under `k` (replacing any entry), then evicts the
    /// least recently used entries over the cap. An answer bigger than an
    /// eighth of the cap is not stored (it would evict too much).
    pub fn put(&self, k: &Key, answer: &[u8]) -> Result<bool, StoreError> {
        let sealed = seal(k, answer);
        let size = sealed.len() as u64;
        if size > self.max_bytes / 8 {
            return Ok(false);
        }
        let (tick, touches) = {
            let mut i = self.index.lock().unwrap();
            i.remove(k);
            i.tick += 1;
            let t = i.tick;
            (t, i.take_touches())
        };
        guarded(&self.path, || {
            let w = self.db.begin_write()?;
            {
                let mut e = w.open_table(ENTRIES)?;
                e.insert(k.0.as_slice(), sealed.as_slice())?;
                let mut m = w.open_table(META)?;
                m.insert(k.0.as_slice(), (tick, size))?;
                for (d, t, s) in &touches {
                    m.insert(d.0.as_slice(), (*t, *s))?;
                }
            }
            w.commit()?;
            Ok(())
        })?;
        {
            let mut i = self.index.lock().unwrap();
            i.meta.insert(*k, (tick, size));
            i.order.insert(tick, *k);
            i.bytes += size;
        }
        self.evict_over_cap()?;
        Ok(true)
    }

    /// Writes the recency of entries used since the last write.
    pub fn flush(&self) -> Result<(), StoreError> {
        let touches = self.index.lock().unwrap().take_touches();
        if touches.is_empty() {
            return Ok(());
        }
        guarded(&self.path, || {
            let w = self.db.begin_write()?;
            {
                let mut m = w.open_table(META)?;
                for (k, t, s) in &touches {
                    m.insert(k.0.as_slice(), (*t, *s))?;
                }
            }
            w.commit()?;
            Ok(())
        })
    }

    /// Removes every entry.
    pub fn clear(&self) -> Result<u64, StoreError> {
        let keys: Vec<Key> = self.index.lock().unwrap().meta.keys().copied().collect();
        self.remove(&keys)?;
        Ok(keys.len() as u64)
    }

    fn remove(&self, keys: &[Key]) -> Result<(), StoreError> {
        guarded(&self.path, || {
            let w = self.db.begin_write()?;
            {
                let mut e = w.open_table(ENTRIES)?;
                let mut m = w.open_table(META)?;
                for k in keys {
                    e.remove(k.0.as_slice())?;
                    m.remove(k.0.as_slice())?;
                }
            }
            w.commit()?;
            Ok(())
        })?;
        let mut i = self.index.lock().unwrap();
        for k in keys {
            i.remove(k);
        }
        Ok(())
    }

    fn evict_over_cap(&self) -> Result<(), StoreError> {
        let victims: Vec<Key> = {
            let i = self.index.lock().unwrap();
            let mut over = i.bytes.saturating_sub(self.max_bytes);
            let mut v = vec![];
            for (_, k) in i.order.iter() {
                if over == 0 {
                    break;
                }
                let size = i.meta[k].1;
                over = over.saturating_sub(size);
                v.push(*k);
            }
            v
        };
        if victims.is_empty() {
            return Ok(());
        }
        self.remove(&victims)
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        if let Err(e) = self.flush() {
            tracing::warn!(error = %e, "result cache: recency not saved");
        }
    }
}

/// The outcome of [`Store::get`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// The intact answer.
    Hit(Vec<u8>),
    /// No entry.
    Miss,
    /// An entry that failed its digest (now removed).
    Corrupt,
}

enum OpenFailure {
    InUse,
    Damaged(String),
}

/// Runs a redb operation, turning its errors and panics into a
/// [`StoreError`].
fn guarded<T>(path: &Path, f: impl FnOnce() -> Result<T, redb::Error>) -> Result<T, StoreError> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(db_error(path, e)),
        Err(_) => Err(db_error(path, "redb panicked on this file")),
    }
}

/// Opens, checks and indexes the file; `true` when redb repaired it.
fn try_open(path: &Path) -> Result<(Database, Index, bool), OpenFailure> {
    let attempt = catch_unwind(AssertUnwindSafe(|| -> Result<_, OpenFailure> {
        let repaired = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = repaired.clone();
        let mut db = match Database::builder()
            .set_repair_callback(move |_| flag.store(true, std::sync::atomic::Ordering::Relaxed))
            .create(path)
        {
            Ok(db) => db,
            Err(redb::DatabaseError::DatabaseAlreadyOpen) => return Err(OpenFailure::InUse),
            Err(e) => return Err(OpenFailure::Damaged(e.to_string())),
        };
        let intact = db
            .check_integrity()
            .map_err(|e| OpenFailure::Damaged(e.to_string()))?;
        let repaired = !intact || repaired.load(std::sync::atomic::Ordering::Relaxed);
        let index = load_index(&db).map_err(|e| OpenFailure::Damaged(e.to_string()))?;
        Ok((db, index, repaired))
    }));
    let r = attempt.unwrap_or_else(|_| Err(OpenFailure::Damaged("redb panicked".into())));
    if r.is_ok() {
        if let Err(e) = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)) {
            return Err(OpenFailure::Damaged(e.to_string()));
        }
    }
    r
}

/// Creates both tables if needed and reads `meta` into an [`Index`].
/// A key present in one table and not the other (or malformed) is
/// deleted from both.
fn load_index(db: &Database) -> Result<Index, redb::Error> {
    let w = db.begin_write()?;
    w.open_table(ENTRIES)?;
    w.open_table(META)?;
    w.commit()?;
    let r = db.begin_read()?;
    let mut orphans: Vec<Vec<u8>> = vec![];
    let mut stored: HashSet<Key> = HashSet::new();
    for item in r.open_table(ENTRIES)?.iter()? {
        let (k, _) = item?;
        match <[u8; 32]>::try_from(k.value()) {
            Ok(b) => drop(stored.insert(Key(b))),
            Err(_) => orphans.push(k.value().to_vec()),
        }
    }
    let mut seen: Vec<(u64, Key, u64)> = vec![];
    for item in r.open_table(META)?.iter()? {
        let (k, v) = item?;
        match <[u8; 32]>::try_from(k.value()) {
            Ok(b) if stored.remove(&Key(b)) => {
                let (t, size) = v.value();
                seen.push((t, Key(b), size));
            }
            _ => orphans.push(k.value().to_vec()),
        }
    }
    orphans.extend(stored.iter().map(|k| k.0.to_vec()));
    drop(r);
    let mut index = Index::default();
    // Ticks are renumbered 1..=n in their stored order (unique again even
    // if two were written equal).
    seen.sort();
    for (tick, (_, k, size)) in (1u64..).zip(seen) {
        index.meta.insert(k, (tick, size));
        index.order.insert(tick, k);
        index.bytes += size;
        index.tick = tick;
    }
    if !orphans.is_empty() {
        let w = db.begin_write()?;
        {
            let mut e = w.open_table(ENTRIES)?;
            let mut m = w.open_table(META)?;
            for k in &orphans {
                e.remove(k.as_slice())?;
                m.remove(k.as_slice())?;
            }
        }
        w.commit()?;
    }
    Ok(index)
}

/// Creates `dir` (0700) or checks an existing one: a real directory owned
/// by this user, not writable by others (tightened to 0700 if it is).
fn prepare_dir(dir: &Path) -> Result<(), StoreError> {
    let io = |source| StoreError::Io {
        path: dir.to_owned(),
        source,
    };
    let unsafe_ = |why: &str| StoreError::Unsafe {
        path: dir.to_owned(),
        why: why.into(),
    };
    if !dir.exists() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let md = std::fs::symlink_metadata(dir).map_err(io)?;
    if md.file_type().is_symlink() {
        return Err(unsafe_("is a symlink"));
    }
    if !md.is_dir() {
        return Err(unsafe_("is not a directory"));
    }
    if md.uid() != euid() {
        return Err(unsafe_("is owned by another user"));
    }
    if md.mode() & 0o777 != 0o700 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(io)?;
    }
    Ok(())
}

/// An existing store file must be a regular file owned by this user.
fn check_file(path: &Path) -> Result<(), StoreError> {
    let md = match std::fs::symlink_metadata(path) {
        Ok(md) => md,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(source) => {
            return Err(StoreError::Io {
                path: path.to_owned(),
                source,
            })
        }
    };
    let why = if !md.file_type().is_file() {
        "is not a regular file"
    } else if md.uid() != euid() {
        "is owned by another user"
    } else {
        return Ok(());
    };
    Err(StoreError::Unsafe {
        path: path.to_owned(),
        why: why.into(),
    })
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}
