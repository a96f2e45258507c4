//! Lean's command line, run cold on one whole file: `lean --json FILE`.
//!
//! This is the reference leanpool's warm answers are checked against (the
//! corpus test in `tests/corpus.rs` and its fixtures): the same Lean, no
//! LSP, no warm document, no header split. Each run starts a fresh Lean
//! (on the WASM backend ~20-60 s, mostly V8 compiling Lean's code), so it
//! is for tests and fixture regeneration, never for serving requests.
//!
//! Lean's `--json` positions are 1-based lines and 0-based columns counted
//! in Unicode scalar values (codepoints); leanpool's are 0-based lines and
//! UTF-16 columns. [`ColdMessage::to_diagnostic`] converts.

use crate::backend::LeanCommand;
use leanpool_protocol::{Diagnostic, Position, Range, Severity};
use leanpool_screen::text::LineIndex;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Duration;

/// A position as `lean --json` prints it: 1-based line, codepoint column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColdPos {
    /// 1-based line.
    pub line: u32,
    /// 0-based column, in Unicode scalar values (codepoints).
    pub column: u32,
}

/// One message of `lean --json` (the fields leanpool compares; `fileName`
/// is dropped since it is wherever the file happened to be).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ColdMessage {
    /// `error`, `warning` or `information`.
    pub severity: String,
    /// Where the message starts.
    pub pos: ColdPos,
    /// Absent when the message has no end (then it is a point).
    #[serde(default)]
    pub end_pos: Option<ColdPos>,
    #[serde(default)]
    /// Lean's short caption of the message (often empty).
    pub caption: String,
    /// The message text.
    pub data: String,
}

#[derive(Debug, thiserror::Error)]
/// Why a cold run gave no messages.
pub enum ColdError {
    #[error("could not run Lean: {0}")]
    /// Lean could not be started (the text says why).
    Spawn(String),
    #[error("Lean ran past {0} s")]
    /// Lean ran past the limit (seconds) and was killed.
    Timeout(u64),
    #[error("Lean failed on {file} (exit {code:?}); stderr ended with:\n{stderr_tail}")]
    /// Lean exited without printing messages for the file.
    Failed {
        /// The file Lean was run on.
        file: String,
        /// Lean's exit code (`None`: killed by a signal).
        code: Option<i32>,
        /// The end of what Lean wrote to stderr.
        stderr_tail: String,
    },
    #[error("unreadable `lean --json` line {line:?}: {msg}")]
    /// A line of Lean's `--json` output that is not a message.
    BadLine {
        /// The line as printed.
        line: String,
        /// Why it could not be read.
        msg: String,
    },
}

impl ColdMessage {
    /// The message's severity; anything but `warning` or `information`
    /// counts as an error (fail closed).
    pub fn severity(&self) -> Severity {
        match self.severity.as_str() {
            "warning" => Severity::Warning,
            "information" => Severity::Information,
            _ => Severity::Error,
        }
    }

    /// In leanpool's terms for the file `text` the message is about:
    /// 0-based line, UTF-16 column, range from `pos` to `endPos` (a point
    /// when there is no end). The message text is `data`, as the LSP
    /// diagnostic's message is; a `caption` is not part of either.
    pub fn to_diagnostic(&self, text: &str) -> Diagnostic {
        let ix = LineIndex::new(text);
        let start = cold_to_position(&ix, self.pos);
        let end = self.end_pos.map_or(start, |p| cold_to_position(&ix, p));
        Diagnostic {
            severity: self.severity(),
            range: Range { start, end },
            message: self.data.clone(),
        }
    }
}

/// 1-based line + codepoint column -> 0-based line + UTF-16 column. A
/// column past the end of its line is kept as far past the end (in UTF-16
/// units, one per codepoint beyond the end), as Lean's LSP would send it.
pub fn cold_to_position(ix: &LineIndex<'_>, p: ColdPos) -> Position {
    let line = p.line.saturating_sub(1);
    let Some(bytes) = ix.line_bytes(line) else {
        return Position {
            line,
            character: p.column,
        };
    };
    let content = &ix.text()[bytes];
    let mut units = 0u32;
    let mut chars = 0u32;
    for ch in content.chars() {
        if chars == p.column {
            return Position {
                line,
                character: units,
            };
        }
        units += ch.len_utf16() as u32;
        chars += 1;
    }
    Position {
        line,
        character: units + (p.column - chars),
    }
}

/// Runs `lean --json FILE` with `command`'s program, arguments and
/// environment, and returns Lean's messages in the order it printed them.
/// The exit status is Lean's verdict (1 when a message is an error), not
/// a failure; a crash (signal, `INTERNAL PANIC`) or an unreadable line is.
pub async fn run_json(
    command: &LeanCommand,
    file: &Path,
    timeout: Duration,
) -> Result<Vec<ColdMessage>, ColdError> {
    let file_arg = file.to_string_lossy().into_owned();
    let mut c = command.command(&["--json", &file_arg]);
    c.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    c.kill_on_drop(true);
    let child = crate::proc::spawn(c).map_err(|e| ColdError::Spawn(e.to_string()))?;
    let out = tokio::time::timeout(timeout, child.wait_with_output())
        .await
        .map_err(|_| ColdError::Timeout(timeout.as_secs()))?
        .map_err(|e| ColdError::Spawn(e.to_string()))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let code = out.status.code();
    if !matches!(code, Some(0 | 1)) || stderr.contains("INTERNAL PANIC") {
        let tail: String = stderr
            .chars()
            .rev()
            .take(2000)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        return Err(ColdError::Failed {
            file: file_arg,
            code,
            stderr_tail: tail,
        });
    }
    parse_json_lines(&String::from_utf8_lossy(&out.stdout))
}

/// The message lines of `lean --json` output. The WASM build also prints
/// `[DEBUG:…]` lines (and echoes the start of the file) on stdout, so only
/// lines that are JSON objects with Lean's message fields count.
pub fn parse_json_lines(stdout: &str) -> Result<Vec<ColdMessage>, ColdError> {
    let mut msgs = vec![];
    for line in stdout.lines() {
        if !line.starts_with('{') {
            continue;
        }
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let is_message = ["severity", "pos", "data", "fileName"]
            .iter()
            .all(|k| v.get(k).is_some());
        if !is_message {
            continue;
        }
        let m: ColdMessage = serde_json::from_value(v).map_err(|e| ColdError::BadLine {
            line: line.to_string(),
            msg: e.to_string(),
        })?;
        msgs.push(m);
    }
    Ok(msgs)
}

/// What a fixture writes instead of the library directory (the first
/// `LEAN_PATH` entry): Lean names its search path in some messages (an
/// unknown import), and the directory differs between machines.
pub const LEAN_LIB_PLACEHOLDER: &str = "$LEAN_LIB";

/// The library directory [`LEAN_LIB_PLACEHOLDER`] stands for.
pub fn lean_lib(command: &LeanCommand) -> Option<String> {
    let path = command.lean_path()?;
    std::env::split_paths(&path)
        .next()
        .map(|p| p.display().to_string())
        .filter(|p| !p.is_empty())
}

/// `text` with the library directory replaced by the placeholder.
pub fn hide_lean_lib(text: &str, lib: Option<&str>) -> String {
    match lib {
        Some(lib) => text.replace(lib, LEAN_LIB_PLACEHOLDER),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pos(line: u32, character: u32) -> Position {
        Position { line, character }
    }

    #[test]
    fn codepoint_columns_become_utf16_columns() {
        // `𝔽` and `𝓝` are astral (1 codepoint, 2 UTF-16 units), `∀` is
        // BMP (1 and 1).
        let text = "def 𝔽 : Nat := 3\n∀ 𝓝𝓝 x\r\nlast";
        let ix = LineIndex::new(text);
        assert_eq!(
            cold_to_position(&ix, ColdPos { line: 1, column: 0 }),
            pos(0, 0)
        );
        // Column 5 (codepoints) is after "def 𝔽": 4 + 2 units.
        assert_eq!(
            cold_to_position(&ix, ColdPos { line: 1, column: 5 }),
            pos(0, 6)
        );
        assert_eq!(
            cold_to_position(&ix, ColdPos { line: 2, column: 2 }),
            pos(1, 2)
        );
        // After "∀ 𝓝𝓝 " (5 codepoints): 1 + 1 + 4 + 1 = 7 units.
        assert_eq!(
            cold_to_position(&ix, ColdPos { line: 2, column: 5 }),
            pos(1, 7)
        );
        // End of a CRLF line: the `\r` is not part of the content.
        assert_eq!(
            cold_to_position(&ix, ColdPos { line: 2, column: 6 }),
            pos(1, 8)
        );
        assert_eq!(
            cold_to_position(&ix, ColdPos { line: 3, column: 4 }),
            pos(2, 4)
        );
        // Past the end of the text.
        assert_eq!(
            cold_to_position(&ix, ColdPos { line: 9, column: 1 }),
            pos(8, 1)
        );
    }

    #[test]
    fn library_directory_is_hidden() {
        let msg = "unknown module prefix 'X'\n\nNo directory 'X' or file 'X.olean' in the search path entries:\n/a/lib\n/a/lib/lean";
        assert_eq!(
            hide_lean_lib(msg, Some("/a/lib")),
            "unknown module prefix 'X'\n\nNo directory 'X' or file 'X.olean' in the search path entries:\n$LEAN_LIB\n$LEAN_LIB/lean"
        );
        assert_eq!(hide_lean_lib(msg, None), msg);
    }

    #[test]
    fn parses_lean_json_among_debug_lines() {
        let out = r#"[DEBUG:A] lean_main entered
[DEBUG:F] Input file content (first 200 chars): {"not": "a message"}
{"caption":"","data":"Type mismatch\n  \"a\"","endPos":{"column":19,"line":8},"fileName":"t1.lean","isSilent":false,"keepFullRange":false,"kind":"[anonymous]","pos":{"column":16,"line":8},"severity":"error"}
{"not": "a message"}
{"caption":"","data":"declaration uses `sorry`","endPos":null,"fileName":"t1.lean","isSilent":false,"keepFullRange":false,"kind":"[anonymous]","pos":{"column":8,"line":1},"severity":"warning"}
"#;
        let m = parse_json_lines(out).unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(
            m[0].pos,
            ColdPos {
                line: 8,
                column: 16
            }
        );
        assert_eq!(
            m[0].end_pos,
            Some(ColdPos {
                line: 8,
                column: 19
            })
        );
        assert_eq!(m[1].end_pos, None);
        let text = "theorem s : True := sorry\n";
        let d = m[1].to_diagnostic(text);
        assert_eq!(d.severity, Severity::Warning);
        assert_eq!(
            d.range,
            Range {
                start: pos(0, 8),
                end: pos(0, 8)
            }
        );
    }
}
