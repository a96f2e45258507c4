//! The command keywords of the libraries a pool's workers import, read
//! from their `.olean`s when the pool is made (issue 20): what closes
//! the guard's residual of "a library command the static vocabulary does
//! not list, written after a term in the middle of a line".
//!
//! Every `syntax … : command` (and `macro`/`elab`/`notation` of that
//! category) of every module on `LEAN_PATH` leaves a `parser` entry of
//! category `command` in its module's `.olean`, after the tokens of its
//! syntax ([`olean`](super::olean)). The command's keyword is the first
//! word-shaped token of its syntax that is not a declaration modifier or
//! an attribute kind (`private`, `scoped`, …, which come first when the
//! syntax starts with `declModifiers`/`attrKind`); a token starting with
//! `#` makes it a `#` command (the guard's `#` allowlist judges those).
//! A keyword is a token of Lean's token table once the module is
//! imported, so it is never an identifier there: refusing it anywhere
//! refuses no honest text.
//!
//! A word is a keyword only in a document that imports its module
//! (transitively): [`LibraryCommands::words_for`] answers for one
//! document's imports (`Init` unless `prelude`), so `target` stays an
//! identifier in a document that does not import `Lake`. A word that is
//! also a token of a parser of another category in those modules
//! (`open`, a Mathlib tactic of the same name), or a keyword of Lean's
//! builtin terms ([`TERM_KEYWORDS`]: Lake's `meta if … then` command has
//! `if` after `meta`), is not taken: honest text writes it as that.
//!
//! Not covered (documented in the guard's threat model): a command whose
//! syntax starts with no keyword at all (an identifier or a term):
//! [`LibraryCommands::keywordless`] lists them; and those words.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use super::olean::{read_module, ParserEntry};
use super::readings::{oleans, Shelf};
use super::DECLARATION_MODIFIERS;

/// The command keywords a set of libraries declares (see the module
/// docs). Empty for a pool whose workers have no `LEAN_PATH`.
///
/// [`LibraryCommands::for_lean_path`] reads nothing when it is made: the
/// `.olean`s are read on first use (or [`LibraryCommands::load`], which a
/// pool calls on a blocking thread when it is made), once per process
/// for one list of directories whose `.olean`s have not changed
/// (`vocab/readings.rs`): pools with the same `LEAN_PATH` share one
/// reading.
#[derive(Debug, Default)]
pub struct LibraryCommands {
    /// The directories to read on first use (`for_lean_path`); `None`:
    /// nothing to read (empty, or `read` was set when made).
    source: Option<Vec<PathBuf>>,
    /// The reading, made on first use.
    read: OnceLock<Arc<Scanned>>,
    /// [`LibraryCommands::words_for`]'s answers, by import list.
    cache: Mutex<HashMap<Vec<String>, Imported>>,
}

/// The process's readings, one per `LEAN_PATH` ([`super::readings`]).
static READINGS: Shelf<Scanned> = Shelf::new();

/// One reading of a set of libraries' `.olean`s.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Scanned {
    modules: BTreeMap<String, ModuleWords>,
    keywordless: Vec<String>,
    /// The scan failed: every text is refused with this error.
    failed: Option<ScanError>,
}

/// [`LibraryCommands::words_for`]'s answer: the command keywords of a
/// document's imports, or why they are unknown (an imported module whose
/// `.olean` could not be read: the text is refused).
pub type Imported = Result<Arc<ImportedCommands>, String>;

/// The command keywords of one document's imports
/// ([`LibraryCommands::words_for`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportedCommands {
    /// Keywords wherever their modules are imported.
    pub global: BTreeSet<String>,
    /// Keywords of `scoped` commands (not also global), each with the
    /// namespaces it is scoped to: Lean reads the word as a keyword only
    /// where one of them is open, an identifier elsewhere.
    pub scoped: BTreeMap<String, BTreeSet<String>>,
}

impl ImportedCommands {
    /// Whether `word` is a keyword here, globally or in some scope.
    pub fn contains(&self, word: &str) -> bool {
        self.global.contains(word) || self.scoped.contains_key(word)
    }

    /// Every keyword, global or scoped, sorted.
    pub fn all(&self) -> BTreeSet<&str> {
        let scoped = self.scoped.keys();
        self.global
            .iter()
            .chain(scoped)
            .map(String::as_str)
            .collect()
    }

    /// The scoped keywords that `text` may read as keywords: those with a
    /// namespace whose last component `text` contains anywhere. Lean
    /// activates a namespace's scoped syntax only where the text opens it
    /// (`open`, `namespace`, `… in`, a declaration named in it), and each
    /// of those writes at least the namespace's last component, plainly
    /// or `«»`-escaped: a text without it cannot have opened it (an
    /// over-approximation; a comment or string naming it counts too).
    pub fn scoped_in<'a>(&'a self, text: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.scoped
            .iter()
            .filter(|(_, namespaces)| {
                namespaces
                    .iter()
                    .any(|ns| text.contains(ns.rsplit('.').next().unwrap_or(ns)))
            })
            .map(|(w, _)| w.as_str())
    }
}

/// One module's share.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct ModuleWords {
    imports: Vec<String>,
    /// Leading keywords of its global command parsers.
    commands: BTreeSet<String>,
    /// Leading keywords of its `scoped` command parsers, each with the
    /// namespaces it is scoped to.
    scoped: BTreeMap<String, BTreeSet<String>>,
    /// Word tokens of its parsers of other categories.
    others: BTreeSet<String>,
    /// Its `.olean` starts with `olean` but could not be read: why.
    unreadable: Option<String>,
}

impl PartialEq for LibraryCommands {
    fn eq(&self, other: &Self) -> bool {
        self.scanned() == other.scanned()
    }
}

impl Eq for LibraryCommands {}

/// Keywords of Lean's builtin term syntax (compiled into Lean, so in no
/// `.olean`): never taken as a library command's keyword.
pub const TERM_KEYWORDS: &[&str] = &[
    "if", "then", "else", "fun", "have", "show", "from", "let", "do", "match", "with", "at", "by",
    "in", "using", "where", "only", "Type", "Sort", "Prop", "forall", "exists",
];

/// Why the libraries could not be read; a pool with this error refuses
/// every text (it fails closed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScanError {
    /// A directory or `.olean` could not be read, or an `.olean` does not
    /// have the layout this reader knows.
    #[error(
        "cannot read the command keywords of {path}: {reason} (leanpool reads every .olean on \
         the workers' LEAN_PATH to know the library's commands; rebuild the library with the \
         Lean it is served with, or fix LEAN_PATH)"
    )]
    Unreadable {
        /// The file or directory.
        path: String,
        /// What went wrong.
        reason: String,
    },
    /// `.olean`s were found but none had a parser extension: the format
    /// changed (a Lean this reader does not know).
    #[error(
        "none of the {0} .olean files on LEAN_PATH has Lean.Parser.parserExtension entries: an \
         .olean layout leanpool does not know (update leanpool_screen::vocab::library)"
    )]
    NoParserEntries(usize),
}

/// Words, besides [`DECLARATION_MODIFIERS`], that come before a command's
/// keyword in its syntax (`meta`, `attrKind`).
const OTHER_PREFIX_WORDS: &[&str] = &["meta", "scoped", "local", "_"];

impl LibraryCommands {
    /// Reads every `.olean` under each of `dirs` (a `LEAN_PATH`'s
    /// entries; a missing entry is skipped, as Lean skips it), now and
    /// not shared with any other reading.
    pub fn scan(dirs: &[PathBuf]) -> Result<LibraryCommands, ScanError> {
        let read = OnceLock::new();
        let _ = read.set(Arc::new(Scanned::read(dirs)?));
        Ok(LibraryCommands {
            read,
            ..LibraryCommands::default()
        })
    }

    /// The command keywords of a `LEAN_PATH` value, read on first use
    /// (see the type's docs; this reads nothing). `None`: the workers have
    /// none, nothing beyond Lean's own library to read: empty. An `.olean`
    /// that cannot be read refuses the texts importing it
    /// ([`Self::words_for`]); when the reading as a whole fails (a
    /// directory that cannot be listed, no parser entries at all), the
    /// guard refuses every text with the error (fail closed: a pool whose
    /// libraries' commands are unknown answers nothing).
    pub fn for_lean_path(lean_path: Option<&str>) -> LibraryCommands {
        LibraryCommands {
            source: lean_path.map(|p| std::env::split_paths(p).collect()),
            ..LibraryCommands::default()
        }
    }

    /// Reads the `.olean`s now if they have not been read (blocking: call
    /// it off the async threads; every other method reads them too, on
    /// first use).
    pub fn load(&self) {
        self.scanned();
    }

    /// Whether the `.olean`s have been read (nothing left to wait for).
    pub fn loaded(&self) -> bool {
        self.read.get().is_some()
    }

    /// Whether `self` and `other` rest on one reading of the `.olean`s
    /// (the same `LEAN_PATH`, its files unchanged between the two first
    /// uses): what the per-process sharing promises. Reads both.
    pub fn shares_reading_with(&self, other: &LibraryCommands) -> bool {
        Arc::ptr_eq(self.scanned(), other.scanned())
    }

    fn scanned(&self) -> &Arc<Scanned> {
        self.read.get_or_init(|| match &self.source {
            None => Arc::default(),
            Some(dirs) => READINGS.get(dirs, Scanned::read_or_failed),
        })
    }

    /// Why the scan failed, if it did (see [`LibraryCommands::for_lean_path`]).
    pub fn failed(&self) -> Option<&ScanError> {
        self.scanned().failed.as_ref()
    }

    /// The directories of a `LEAN_PATH` value.
    pub fn scan_lean_path(lean_path: &str) -> Result<LibraryCommands, ScanError> {
        LibraryCommands::scan(&std::env::split_paths(lean_path).collect::<Vec<_>>())
    }

    /// The command keywords of a document importing `imports` (module
    /// names; `Init` is added, since a document without `prelude`
    /// imports it): those of every module they import transitively,
    /// less the words that are tokens of those modules' other parsers or
    /// [`TERM_KEYWORDS`]. A module not on `LEAN_PATH` adds nothing (Lean
    /// refuses to import it); one whose `.olean` could not be read makes
    /// the answer `Err` (fail closed: its commands are unknown).
    pub fn words_for(&self, imports: &[String]) -> Imported {
        let mut key = imports.to_vec();
        key.sort();
        key.dedup();
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(w) = cache.get(&key) {
            return w.clone();
        }
        let mut seen = BTreeSet::new();
        let mut todo: Vec<&str> = key.iter().map(String::as_str).chain(["Init"]).collect();
        let mut words = ImportedCommands::default();
        let mut others = BTreeSet::new();
        while let Some(m) = todo.pop() {
            let Some(w) = self.scanned().modules.get(m).filter(|_| seen.insert(m)) else {
                continue;
            };
            if let Some(e) = &w.unreadable {
                return Err(e.clone());
            }
            words.global.extend(w.commands.iter().cloned());
            for (word, namespaces) in &w.scoped {
                let all = words.scoped.entry(word.clone()).or_default();
                all.extend(namespaces.iter().cloned());
            }
            others.extend(w.others.iter().cloned());
            todo.extend(w.imports.iter().map(String::as_str));
        }
        let taken = |w: &String| !others.contains(w) && !TERM_KEYWORDS.contains(&w.as_str());
        words.global.retain(taken);
        let global = &words.global;
        words.scoped.retain(|w, _| taken(w) && !global.contains(w));
        let words = Ok(Arc::new(words));
        if cache.len() < MAX_CACHED_HEADERS {
            cache.insert(key, words.clone());
        }
        words
    }

    /// Every command keyword of every module read (scoped ones too), sorted.
    pub fn words(&self) -> BTreeSet<&str> {
        self.scanned()
            .modules
            .values()
            .flat_map(|m| m.commands.iter().chain(m.scoped.keys()))
            .map(String::as_str)
            .collect()
    }

    /// How many modules were read.
    pub fn modules(&self) -> usize {
        self.scanned().modules.len()
    }

    /// The command parsers whose syntax starts with no keyword (an
    /// identifier, a term): the guard cannot refuse them by a word.
    pub fn keywordless(&self) -> &[String] {
        &self.scanned().keywordless
    }
}

impl Scanned {
    /// Reads every `.olean` under each of `dirs` (see [`LibraryCommands::scan`]).
    fn read(dirs: &[PathBuf]) -> Result<Scanned, ScanError> {
        let mut files = vec![];
        for d in dirs.iter().filter(|d| d.is_dir()) {
            oleans(d, d, &mut files).map_err(|(dir, e)| ScanError::Unreadable {
                path: dir.display().to_string(),
                reason: e.to_string(),
            })?;
        }
        let mut out = Scanned::default();
        let (mut read, mut with_entries) = (0, 0);
        for (name, f) in &files {
            let mut words = ModuleWords::default();
            match read_module(f) {
                // Not an .olean at all: Lean cannot import it either.
                Ok(None) => continue,
                Ok(Some(m)) => {
                    read += 1;
                    words.imports = m.imports;
                    if let Some(entries) = m.entries {
                        with_entries += 1;
                        words.add(&entries, &mut out.keywordless);
                    }
                }
                Err(e) => {
                    let e = ScanError::Unreadable {
                        path: f.display().to_string(),
                        reason: e.0,
                    };
                    words.unreadable = Some(e.to_string());
                }
            }
            // The first of a name on LEAN_PATH wins, as for Lean.
            out.modules.entry(name.clone()).or_insert(words);
        }
        if read > 0 && with_entries == 0 {
            return Err(ScanError::NoParserEntries(read));
        }
        Ok(out)
    }

    /// [`Scanned::read`], or a reading that refuses every text with its
    /// error.
    pub(super) fn read_or_failed(dirs: &[PathBuf]) -> Scanned {
        Scanned::read(dirs).unwrap_or_else(|e| Scanned {
            failed: Some(e),
            ..Scanned::default()
        })
    }
}

/// Import lists remembered by [`LibraryCommands::words_for`] (a pool
/// serves few headers; past this they are recomputed).
const MAX_CACHED_HEADERS: usize = 256;

impl ModuleWords {
    fn add(&mut self, entries: &[ParserEntry], keywordless: &mut Vec<String>) {
        let mut tokens: Vec<&str> = vec![];
        for e in entries {
            match e {
                ParserEntry::Token(t) => tokens.push(t),
                ParserEntry::Parser {
                    category,
                    decl,
                    scope,
                } if category == "command" => {
                    match (leading_keyword(&tokens), scope) {
                        (Some(w), _) if w.starts_with('#') => {}
                        (Some(w), None) => {
                            self.commands.insert(w.to_string());
                        }
                        (Some(w), Some(ns)) => {
                            let namespaces = self.scoped.entry(w.to_string()).or_default();
                            namespaces.insert(ns.clone());
                        }
                        (None, _) => keywordless.push(decl.clone()),
                    }
                    tokens.clear();
                }
                ParserEntry::Parser { .. } => {
                    let words = tokens
                        .iter()
                        .filter(|t| t.starts_with(crate::lex::is_id_first));
                    self.others.extend(words.map(|t| t.to_string()));
                    tokens.clear();
                }
            }
        }
    }
}

/// The first word-shaped token (or `#` word) of a command's syntax after
/// its modifiers.
fn leading_keyword<'a>(tokens: &[&'a str]) -> Option<&'a str> {
    tokens.iter().copied().find(|t| {
        let word = t.starts_with(crate::lex::is_id_first)
            || (t.starts_with('#') && t.len() > 1 && t[1..].starts_with(crate::lex::is_id_first));
        word && !DECLARATION_MODIFIERS.contains(t) && !OTHER_PREFIX_WORDS.contains(t)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fail closed: an `.olean` on `LEAN_PATH` that cannot be read makes
    /// the guard refuse every text importing it, naming the file; a file
    /// that is no `.olean` at all (Lean cannot import it) is no module.
    #[test]
    fn an_unreadable_module_refuses_the_texts_importing_it() {
        let dir = std::env::temp_dir().join(format!("leanpool-vocab-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("Evil")).unwrap();
        std::fs::write(dir.join("Evil/Cmd.olean"), b"olean but not really").unwrap();
        std::fs::write(dir.join("Evil/Junk.olean"), b"no magic").unwrap();
        let lib = LibraryCommands::for_lean_path(Some(dir.to_str().unwrap()));
        assert!(lib.failed().is_none());
        assert_eq!(lib.modules(), 1, "Junk is no module");
        let policy = crate::GuardPolicy::default();
        let screening = crate::Screening {
            library: &lib,
            ..crate::Screening::from(&policy)
        };
        let r =
            crate::screen("import Evil.Cmd\ntheorem t : True := trivial\n", screening).unwrap_err();
        assert_eq!(r.construct, "library", "{r}");
        assert!(r.reason.contains("Evil/Cmd.olean"), "{r}");
        assert!(crate::screen("theorem t : True := trivial\n", screening).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_keyword_is_the_first_word_after_modifiers() {
        let k = |t: &[&'static str]| leading_keyword(t);
        assert_eq!(
            k(&["$", "/--", "@[", "scoped", "local", "simproc", "("]),
            Some("simproc")
        );
        assert_eq!(k(&["#check_tactic", "in", "by"]), Some("#check_tactic"));
        assert_eq!(k(&["$", "(", ":="]), None);
    }
}
