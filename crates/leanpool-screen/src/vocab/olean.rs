//! A reader of the one part of a Lean 4 `.olean` that says which parsers
//! the module adds: the entries of `Lean.Parser.parserExtension`.
//!
//! An `.olean` is Lean's compacted region: a header (`olean`, format
//! version 2, flags, Lean's version and githash: 80 bytes), the address
//! the region was written for (`base`), the root object's address, then
//! the objects, each at `base + offset in the file`. Every object has
//! Lean's 8-byte header (`rc: i32`, `cs_sz: u16`, `other: u8`, `tag:
//! u8`); a constructor (`tag <= 244`) has `other` pointer fields of the
//! platform's width (4 bytes for the WASM build's 32-bit `.olean`s, 8
//! natively), a string (`249`) `size`, `capacity`, `length` then its
//! bytes, an array (`246`) `size`, `capacity` then its pointers; a
//! pointer with its low bit set is a boxed scalar. The 64-bit layout is
//! tested on a file that native Lean wrote (`tests/vocab_oleans.rs`).
//! The root is `ModuleData`, whose last pointer field is `entries : Array
//! (Name × Array EnvExtensionEntry)`. The parser
//! extension's entries are `ScopedEnvExtension.Entry`s (`global e`, tag
//! 0, or `scoped ns e`, tag 1) of `OLeanEntry`: `token s` (tag 0), `kind k` (1),
//! `category c d b` (2), `parser cat decl prio` (3). Lean adds a
//! parser's tokens, then its kinds, then the parser, so the tokens since
//! the previous `parser` entry are that parser's (in the order its syntax
//! has them).
//!
//! Everything read is bounds-checked; a file that does not have this
//! shape is an error naming the file, never a silent empty answer.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// One entry of a module's parser extension, as far as the scan needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ParserEntry {
    /// A token the module adds to the token table.
    Token(String),
    /// A parser of category `category` (`command`, `tactic`, `term`, …);
    /// `scope`: the namespace of a `scoped` parser (Lean's parser reads
    /// it only where that namespace is open), `None` for a global one.
    Parser {
        category: String,
        decl: String,
        scope: Option<String>,
    },
}

/// Why a file could not be read as an `.olean`.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Malformed(pub String);

const HEADER: u64 = 0x50;
/// The header's format version this reader knows (Lean 4.12 to at least
/// 4.35 write it for a module's data).
const FORMAT_VERSION: u8 = 2;
const NO_MAGIC: &str = "not an .olean (no `olean` magic)";
const STRING_TAG: u8 = 249;
const ARRAY_TAG: u8 = 246;
const MAX_CTOR_TAG: u8 = 244;
/// Name components followed before giving up (a cycle or a damaged file).
const MAX_NAME_PARTS: usize = 256;

/// An open `.olean`.
struct Region {
    file: File,
    len: u64,
    base: u64,
    root: u64,
    width: u64,
}

fn bad(what: impl Into<String>) -> Malformed {
    Malformed(what.into())
}

impl Region {
    fn open(path: &Path) -> Result<Region, Malformed> {
        let file = File::open(path).map_err(|e| bad(format!("cannot open: {e}")))?;
        let len = file
            .metadata()
            .map_err(|e| bad(format!("cannot stat: {e}")))?
            .len();
        let mut r = Region {
            file,
            len,
            base: 0,
            root: 0,
            width: 8,
        };
        if r.bytes(0, 5)? != b"olean" {
            return Err(bad(NO_MAGIC));
        }
        let version = r.bytes(5, 1)?[0];
        if version != FORMAT_VERSION {
            return Err(bad(format!(
                ".olean format version {version}, not {FORMAT_VERSION} (the layout this reader knows)"
            )));
        }
        let h = r.bytes(HEADER, 16)?;
        let u64_at = |i: usize| u64::from_le_bytes(h[i..i + 8].try_into().unwrap());
        let u32_at = |i: usize| u64::from(u32::from_le_bytes(h[i..i + 4].try_into().unwrap()));
        let inside = |base: u64, root: u64| root >= base && root - base < len;
        (r.base, r.root, r.width) = if inside(u64_at(0), u64_at(8)) {
            (u64_at(0), u64_at(8), 8)
        } else if inside(u32_at(0), u32_at(4)) {
            (u32_at(0), u32_at(4), 4)
        } else {
            return Err(bad(
                "unrecognised .olean layout (no root object inside the file)",
            ));
        };
        Ok(r)
    }

    fn bytes(&self, offset: u64, n: u64) -> Result<Vec<u8>, Malformed> {
        if offset.checked_add(n).is_none_or(|end| end > self.len) {
            return Err(bad(format!("an object at {offset} runs past the end")));
        }
        let mut buf = vec![0; n as usize];
        self.file
            .read_exact_at(&mut buf, offset)
            .map_err(|e| bad(format!("read failed: {e}")))?;
        Ok(buf)
    }

    fn word(&self, offset: u64) -> Result<u64, Malformed> {
        let b = self.bytes(offset, self.width)?;
        Ok(if self.width == 8 {
            u64::from_le_bytes(b[..8].try_into().unwrap())
        } else {
            u64::from(u32::from_le_bytes(b[..4].try_into().unwrap()))
        })
    }

    /// The file offset of the object at `ptr` (not a scalar), and its tag
    /// and `other` byte.
    fn header(&self, ptr: u64) -> Result<(u64, u8, u8), Malformed> {
        if ptr & 1 == 1 || ptr < self.base {
            return Err(bad(format!(
                "expected an object, found scalar/pointer {ptr:#x}"
            )));
        }
        let off = ptr - self.base;
        let h = self.bytes(off, 8)?;
        Ok((off, h[7], h[6]))
    }

    /// A constructor's tag and pointer fields.
    fn ctor(&self, ptr: u64) -> Result<(u8, Vec<u64>), Malformed> {
        let (off, tag, n) = self.header(ptr)?;
        if tag > MAX_CTOR_TAG {
            return Err(bad(format!("expected a constructor, found tag {tag}")));
        }
        let fields = (0..u64::from(n))
            .map(|i| self.word(off + 8 + i * self.width))
            .collect::<Result<_, _>>()?;
        Ok((tag, fields))
    }

    fn array(&self, ptr: u64) -> Result<Vec<u64>, Malformed> {
        let (off, tag, _) = self.header(ptr)?;
        if tag != ARRAY_TAG {
            return Err(bad(format!("expected an array, found tag {tag}")));
        }
        let size = self.word(off + 8)?;
        if size > self.len / self.width {
            return Err(bad("an array larger than the file"));
        }
        let data = off + 8 + 2 * self.width;
        (0..size)
            .map(|i| self.word(data + i * self.width))
            .collect()
    }

    fn string(&self, ptr: u64) -> Result<String, Malformed> {
        let (off, tag, _) = self.header(ptr)?;
        if tag != STRING_TAG {
            return Err(bad(format!("expected a string, found tag {tag}")));
        }
        let size = self.word(off + 8)?;
        let bytes = self.bytes(off + 8 + 3 * self.width, size.saturating_sub(1))?;
        String::from_utf8(bytes).map_err(|_| bad("a string that is not UTF-8"))
    }

    /// A `Lean.Name`, dotted (`Name.num` components printed as numbers).
    fn name(&self, mut ptr: u64) -> Result<String, Malformed> {
        let mut parts = vec![];
        while ptr != 1 {
            if parts.len() == MAX_NAME_PARTS {
                return Err(bad("a name with too many components"));
            }
            let (prefix, part) = self.name_part(ptr)?;
            parts.push(part);
            ptr = prefix;
        }
        parts.reverse();
        Ok(parts.join("."))
    }

    /// A non-anonymous name's prefix and last component.
    fn name_part(&self, ptr: u64) -> Result<(u64, String), Malformed> {
        let (tag, f) = self.ctor(ptr)?;
        match (tag, f.as_slice()) {
            (1, &[p, s]) => Ok((p, self.string(s)?)),
            (2, &[p, n]) if n & 1 == 1 => Ok((p, (n >> 1).to_string())),
            _ => Err(bad(format!("expected a name, found constructor {tag}"))),
        }
    }
}

/// What the scan reads of one module.
#[derive(Debug, Clone, Default)]
pub(crate) struct Module {
    /// The modules it imports (`ModuleData.imports`: each `Import`'s
    /// first field is the module's name).
    pub imports: Vec<String>,
    /// Its parser-extension entries, in order (global and scoped alike);
    /// `None` if the module has no parser extension entry at all.
    pub entries: Option<Vec<ParserEntry>>,
}

/// Reads the module at `path`; `None` for a file that does not start with
/// `olean` (Lean refuses to import it: no module).
pub(crate) fn read_module(path: &Path) -> Result<Option<Module>, Malformed> {
    let r = match Region::open(path) {
        Err(Malformed(m)) if m == NO_MAGIC => return Ok(None),
        r => r?,
    };
    let (_, module) = r.ctor(r.root)?;
    let (Some(&imports), Some(&entries)) = (module.first(), module.last()) else {
        return Err(bad("the root object (ModuleData) has no fields"));
    };
    let imports = r
        .array(imports)?
        .into_iter()
        .map(|i| {
            let (_, f) = r.ctor(i)?;
            r.name(
                *f.first()
                    .ok_or_else(|| bad("an import without a module name"))?,
            )
        })
        .collect::<Result<_, _>>()?;
    for pair in r.array(entries)? {
        let (_, f) = r.ctor(pair)?;
        let [ext, list] = f[..] else {
            return Err(bad("an extension entry that is not a pair"));
        };
        // The last component first: one read for most extensions.
        if r.name_part(ext)?.1 != "parserExtension" || r.name(ext)? != EXTENSION {
            continue;
        }
        let entries = r
            .array(list)?
            .into_iter()
            .map(|e| entry(&r, e))
            .filter_map(Result::transpose)
            .collect::<Result<_, _>>()?;
        return Ok(Some(Module {
            imports,
            entries: Some(entries),
        }));
    }
    Ok(Some(Module {
        imports,
        entries: None,
    }))
}

/// The parser extension's name.
const EXTENSION: &str = "Lean.Parser.parserExtension";

fn entry(r: &Region, ptr: u64) -> Result<Option<ParserEntry>, Malformed> {
    // `ScopedEnvExtension.Entry`: `global e` (tag 0) or `scoped ns e` (1).
    let (inner, scope) = match r.ctor(ptr)? {
        (0, f) if f.len() == 1 => (f[0], None),
        (1, f) if f.len() == 2 => (f[1], Some(f[0])),
        (tag, _) => return Err(bad(format!("a scoped entry of unknown shape (tag {tag})"))),
    };
    let (tag, f) = r.ctor(inner)?;
    Ok(match (tag, f.as_slice()) {
        (0, [s]) => Some(ParserEntry::Token(r.string(*s)?)),
        (3, [cat, decl, _]) => Some(ParserEntry::Parser {
            category: r.name(*cat)?,
            decl: r.name(*decl)?,
            scope: scope.map(|ns| r.name(ns)).transpose()?,
        }),
        (1, [_]) | (2, [_, _]) => None,
        _ => return Err(bad(format!("a parser entry of unknown shape (tag {tag})"))),
    })
}
