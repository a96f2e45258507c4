//! The process's readings of libraries' `.olean`s (issue 20): reading
//! the WASM core library takes ~2 s in a debug build, Mathlib's more, and
//! a daemon makes one pool per project, a test binary many. A [`Shelf`]
//! keeps one reading per list of directories (a `LEAN_PATH`, in order),
//! shared by every [`LibraryCommands`](super::LibraryCommands) of that
//! list, and the walk that lists a library's `.olean`s ([`oleans`]).
//!
//! A reading is kept with a key of its validity: every `.olean` under the
//! directories with its size and modification time (one `stat` each, a
//! few milliseconds for the core library). A later use whose key differs
//! (a module rebuilt, added or removed) reads again and replaces it.
//! Users of one list wait for one reading: two pools made at once read
//! once. At most [`MAX_READINGS`] lists are kept (a daemon serves a few
//! projects); past that the oldest made is dropped (its users keep
//! theirs).

use std::collections::hash_map::DefaultHasher;
use std::collections::VecDeque;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Lists of directories whose reading a [`Shelf`] keeps.
pub(super) const MAX_READINGS: usize = 16;

/// One list's reading and the key it was made under.
type Slot<T> = Arc<Mutex<Option<(u64, Arc<T>)>>>;

/// Readings of type `T` by list of directories, oldest first.
pub(super) struct Shelf<T> {
    slots: Mutex<VecDeque<(Vec<PathBuf>, Slot<T>)>>,
}

impl<T> Shelf<T> {
    /// An empty shelf (for a `static`).
    pub(super) const fn new() -> Shelf<T> {
        Shelf {
            slots: Mutex::new(VecDeque::new()),
        }
    }

    /// The reading of `dirs`: the kept one if their `.olean`s are
    /// unchanged, else `read(dirs)` (kept). Blocking.
    pub(super) fn get(&self, dirs: &[PathBuf], read: impl FnOnce(&[PathBuf]) -> T) -> Arc<T> {
        let slot = self.slot(dirs);
        let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
        let key = validity(dirs);
        if let Some((_, kept)) = slot.as_ref().filter(|(k, _)| *k == key) {
            return kept.clone();
        }
        let fresh = Arc::new(read(dirs));
        *slot = Some((key, fresh.clone()));
        fresh
    }

    /// The slot of `dirs`, made (and the oldest dropped past the cap) if new.
    fn slot(&self, dirs: &[PathBuf]) -> Slot<T> {
        let mut all = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, s)) = all.iter().find(|(d, _)| d == dirs) {
            return s.clone();
        }
        if all.len() == MAX_READINGS {
            all.pop_front();
        }
        let s: Slot<T> = Arc::new(Mutex::new(None));
        all.push_back((dirs.to_vec(), s.clone()));
        s
    }
}

/// A digest of every `.olean` under `dirs` with its size and modification
/// time (and of a directory that cannot be listed: its error), in order.
fn validity(dirs: &[PathBuf]) -> u64 {
    let mut h = DefaultHasher::new();
    for d in dirs {
        d.hash(&mut h);
        let mut files = vec![];
        if d.is_dir() {
            if let Err((dir, e)) = oleans(d, d, &mut files) {
                (dir, e.to_string()).hash(&mut h);
            }
        }
        for (_, f) in files {
            f.hash(&mut h);
            match std::fs::metadata(&f) {
                Ok(m) => (m.len(), m.modified().ok()).hash(&mut h),
                Err(e) => e.to_string().hash(&mut h),
            }
        }
    }
    h.finish()
}

/// Every `.olean` under `dir` with its module name (its path under
/// `root`, `/` read as `.`), sorted; a directory that cannot be listed
/// is the error, with its path.
pub(super) fn oleans(
    root: &Path,
    dir: &Path,
    out: &mut Vec<(String, PathBuf)>,
) -> Result<(), (PathBuf, std::io::Error)> {
    let unreadable = |e: std::io::Error| (dir.to_path_buf(), e);
    let mut entries = std::fs::read_dir(dir)
        .map_err(unreadable)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(unreadable)?;
    entries.sort();
    for p in entries {
        if p.is_dir() {
            oleans(root, &p, out)?;
        } else if p.extension().is_some_and(|x| x == "olean") {
            let rel = p.strip_prefix(root).unwrap_or(&p).with_extension("");
            let name = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join(".");
            out.push((name, p));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::LibraryCommands;
    use std::path::{Path, PathBuf};

    /// A module declaring the command `grind_annotated` (the 64-bit
    /// fixture of `tests/vocab_oleans.rs`).
    fn fixture() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/olean64/Init/Grind/Annotated.olean")
    }

    fn add_module(dir: &Path, name: &str) {
        let f = dir.join(name.replace('.', "/")).with_extension("olean");
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::copy(fixture(), f).unwrap();
    }

    fn lib(dirs: &[&Path]) -> LibraryCommands {
        let path = std::env::join_paths(dirs).unwrap();
        LibraryCommands::for_lean_path(Some(path.to_str().unwrap()))
    }

    /// Pools with one `LEAN_PATH` share one reading, also when made at
    /// once on two threads; a changed library (a module added), another
    /// list of directories, are read again. Nothing is read when the
    /// value is made: a module that appears before the first use is seen.
    #[test]
    fn one_lean_path_is_read_once_until_its_oleans_change() {
        let tmp = std::env::temp_dir().join(format!("leanpool-readings-{}", std::process::id()));
        let (a, b) = (tmp.join("a"), tmp.join("b"));
        std::fs::create_dir_all(&b).unwrap();
        let early = lib(&[&a]);
        add_module(&a, "Init.Grind.Annotated");
        assert_eq!(early.modules(), 1, "read at first use, not when made");
        let (one, two) = (lib(&[&a]), lib(&[&a]));
        std::thread::scope(|s| {
            s.spawn(|| one.load());
            s.spawn(|| two.load());
        });
        assert!(one.shares_reading_with(&two) && one.shares_reading_with(&early));
        let other_list = lib(&[&a, &b]);
        assert!(!other_list.shares_reading_with(&one));
        add_module(&a, "Extra.Cmd");
        let changed = lib(&[&a]);
        assert!(!changed.shares_reading_with(&one));
        assert_eq!((changed.modules(), one.modules()), (2, 1));
        assert!(changed.shares_reading_with(&lib(&[&a])));
        let words = changed.words_for(&["Extra.Cmd".into()]).unwrap();
        assert!(words.contains("grind_annotated"), "{words:?}");
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}
