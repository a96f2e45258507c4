//! `set_option`: an allowlist of options, each with the values it may
//! take. Everything else is refused, wherever it is (header, body,
//! `set_option … in`).
//!
//! Why an allowlist: options change what Lean checks (`debug.*`,
//! `Elab.*`, `allowUnsafeReducibility`), what it prints (every `pp.*`: a
//! verdict reads Lean's messages and leanpool's trailer, and
//! `pp.notation false` once reworded the `sorry` warning), which warnings
//! exist (`warn.sorry`), and how much it may spend. New options appear
//! with every Lean and Mathlib release; only the ones below are known to
//! be harmless, and the limits among them have caps that honest proofs fit
//! (model-written miniF2F proofs set `maxHeartbeats` to 0 or 400000; the
//! request's wall-clock timeout and the worker's memory cap bound the
//! work whatever the option says).

use super::check::{refuse, Check, Header};
use super::GuardPolicy;
use crate::lex::{Kind, Token};

/// What values an allowed option takes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Values {
    /// A decimal natural number up to the cap.
    NatUpTo(u64),
    /// `true` or `false`.
    Bool,
}

/// The options a caller may set, and their values. `maxHeartbeats 0`
/// means "no heartbeat limit" to Lean: the request's timeout still holds.
pub(crate) const ALLOWED_OPTIONS: &[(&str, Values)] = &[
    ("maxHeartbeats", Values::NatUpTo(MAX_HEARTBEATS)),
    ("maxRecDepth", Values::NatUpTo(MAX_REC_DEPTH)),
    (
        "synthInstance.maxHeartbeats",
        Values::NatUpTo(MAX_HEARTBEATS),
    ),
    ("checkBinderAnnotations", Values::Bool),
];

/// Cap on `maxHeartbeats` (and `synthInstance.maxHeartbeats`): 100 times
/// Lean's default of 200000 (0, no limit, is accepted too: the request's
/// timeout is the real bound).
pub const MAX_HEARTBEATS: u64 = 20_000_000;

/// Cap on `maxRecDepth` (Lean's default 512): deep enough for the
/// `decide`/`norm_num` proofs that raise it, shallow enough that
/// elaboration does not usually overflow the native stack (if it does, the
/// worker crashes, the request is answered and the worker replaced).
pub const MAX_REC_DEPTH: u64 = 100_000;

/// Option prefixes with a reason of their own (they are refused like any
/// option not on the allowlist; the reason says why it matters).
const REASONS: &[(&str, &str)] = &[
    ("pp.", "`pp.*` options change how Lean prints terms and messages, which the verdict reads"),
    ("warn.", "`warn.*` options silence warnings a verdict relies on (`warn.sorry false` hides `declaration uses sorry`)"),
    ("debug.", "`debug.*` options change what the kernel and elaborator check (e.g. `debug.skipKernelTC`)"),
    ("trace.", "trace output is unbounded and would be returned with the answer"),
    ("Elab.", "`Elab.*` options change how the server elaborates and reports"),
    ("linter.", "`linter.*` options change which warnings Lean reports"),
];

fn allowed_names() -> String {
    ALLOWED_OPTIONS
        .iter()
        .map(|(n, _)| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Checks the `set_option` at token `i`.
pub(crate) fn set_option(toks: &[Token], i: usize, h: &Header, policy: &GuardPolicy) -> Check {
    let t = &toks[i];
    let Some(opt) = toks.get(i + 1).filter(|n| n.kind == Kind::Ident) else {
        return refuse(
            t,
            "set_option",
            "`set_option` must be followed by an option name",
        );
    };
    let name = opt.text.as_str();
    let construct = format!("set_option {name}");
    let value = toks.get(i + 2);
    if let Some((_, values)) = ALLOWED_OPTIONS.iter().find(|(n, _)| *n == name) {
        return check_value(t, &construct, value, *values);
    }
    // `h.options` is in token order: a binary search keeps a header of n
    // `set_option`s linear-log.
    let in_header = h.options.binary_search(&i).is_ok();
    let special = REASONS.iter().find(|(p, _)| name.starts_with(p));
    if in_header && special.is_none() && policy.allow_header_options.iter().any(|o| o == name) {
        return Ok(());
    }
    let why = special.map_or(
        "options change what Lean checks, prints or spends",
        |(_, r)| r,
    );
    refuse(
        t,
        construct,
        format!(
            "`set_option {name}` is not on leanpool's allowlist of options ({}): {why}",
            allowed_names()
        ),
    )
}

fn check_value(t: &Token, construct: &str, value: Option<&Token>, values: Values) -> Check {
    let text = value.map_or("", |v| v.text.as_str());
    let ok = match values {
        Values::Bool => {
            value.is_some_and(|v| v.kind == Kind::Ident) && matches!(text, "true" | "false")
        }
        Values::NatUpTo(cap) => {
            value.is_some_and(|v| v.kind == Kind::Num)
                && text.bytes().all(|b| b.is_ascii_digit())
                && text.parse::<u64>().is_ok_and(|n| n <= cap)
        }
    };
    if ok {
        return Ok(());
    }
    let expected = match values {
        Values::Bool => "`true` or `false`".to_string(),
        Values::NatUpTo(cap) => format!("a decimal number up to {cap}"),
    };
    refuse(
        t,
        construct.to_string(),
        format!("`{construct}` takes {expected}, not `{text}`"),
    )
}
