//! The cache key: a SHA-256 digest of everything that can change an answer.
//!
//! A key is the SHA-256 of one canonical JSON document (serde_json's
//! `Value` serializes object keys sorted, numbers and strings in one
//! spelling, so equal inputs give equal bytes and JSON's own framing keeps
//! fields from running into each other):
//!
//! ```json
//! {"format": 1, "identity": "<hex>", "partition": "...", "method": "check",
//!  "params": {...}}
//! ```
//!
//! Why two requests that could get different answers never share a key,
//! field by field:
//!
//! * **`format`** ([`FORMAT_VERSION`]): the layout of stored answers and of
//!   this document. A release that changes either bumps it, so an old
//!   store's entries are never read as new ones (they are simply never
//!   found, and age out by LRU).
//! * **`identity`** ([`Identity`], digested once per daemon): what does
//!   the judging.
//!   - `backend`: the Lean backend's kind (`native`/`wasm`), its recorded
//!     version (`lean --version`) and the library's identity (Mathlib's
//!     revision from `lake-manifest.json` natively, else the SHA-256 of the
//!     olean set on `LEAN_PATH`, `leanpool_lean::provenance`). Another
//!     Lean or another Mathlib can elaborate the same text differently. A
//!     backend whose library cannot be identified gets **no cache at all**
//!     ([`Identity::new`] refuses it), since nothing would tell two
//!     libraries apart.
//!   - `policies`: the `[guard]` policy (with `[verdict]`: allowed axioms,
//!     unlisted-axiom rule) and the `[sandbox]` config, serialized whole
//!     (new fields count automatically). The guard decides what reaches
//!     Lean, the verdict policy turns Lean's messages into `ok`/`error`, the
//!     sandbox decides what code that slipped through could do.
//!   - per project: a daemon serving several projects (issue 25) gives
//!     each its own identity, digested from *that* project's backend and
//!     library (natively Mathlib's revision *and* the digest of the
//!     project's own `.olean` files, so two judge packages on one Mathlib
//!     differ; on WASM the olean set of its whole `LEAN_PATH`), passed with
//!     each request (`crate::Request::identity`). The project's name is
//!     not part of it: two projects loading byte-identical libraries give
//!     the same answers, and a renamed project keeps its entries.
//!   - `build`: the SHA-256 of the daemon's own executable. leanpool's code
//!     assembles the document, reads Lean's answer and derives the verdict;
//!     any rebuild may change that, so a rebuilt daemon starts from an
//!     empty key space rather than trust answers of another build.
//! * **`partition`**: empty by default; under `[pool] isolate_by` it is the
//!   caller's tag (`uid:N` / `conn:N`), the same tag that gives the caller
//!   its own workers. Isolation promises that no other caller's text
//!   influences a caller's answers; sharing a cached answer across callers
//!   would break that promise, so isolated callers never share entries.
//! * **`method`**: `check`, `verify`, `normalize`, `opt` answer different
//!   questions about the same text.
//! * **`params`**: the request's params *as the daemon decoded them*
//!   (decoded into the method's typed params and serialized again: unknown
//!   members dropped, defaults filled in, exactly what the pool receives),
//!   minus [`NON_ANSWER_PARAMS`]:
//!   - `timeout_ms` only decides whether an answer is `timeout`, which is
//!     never stored; a stored verdict is what Lean says when it finishes
//!     (heartbeat limits, which Lean reports as a deterministic `error`,
//!     cannot be set by a caller: the guard refuses those options).
//!   - `timings` only adds the timing fields, which are never stored (see
//!     `crate::answer`).
//!   - `cache` is the per-request switch of this layer, not an input of the
//!     answer.
//!
//!   Everything else (text, header, statement, proof, and any option a
//!   method grows later) is part of the key.

use serde::Serialize;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

/// Version of the key document and of the stored entry layout. Bump it
/// when either changes.
pub const FORMAT_VERSION: u32 = 1;

/// Top-level params that cannot change a stored answer and are left out of
/// the key (see the module docs for why each).
pub const NON_ANSWER_PARAMS: &[&str] = &["timeout_ms", "timings", "cache"];

/// A 32-byte SHA-256 cache key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key(pub [u8; 32]);

impl Key {
    /// Lower-case hex, for logs.
    pub fn hex(&self) -> String {
        hex(&self.0)
    }
}

/// Why a backend cannot be given a cache.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdentityError {
    /// The library the workers load is not known (no Mathlib revision, no
    /// olean digest): answers of two libraries could not be told apart.
    #[error("the Lean library could not be identified ({0}); the result cache is off")]
    UnknownLibrary(String),
    /// The daemon's executable could not be read to identify the build.
    #[error("cannot read the daemon's executable to identify its build: {0}")]
    Build(String),
}

/// What judges the answers of one daemon: backend, policies, build. Fixed
/// for the daemon's lifetime and digested once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    digest: String,
}

impl Identity {
    /// `backend` is `status`' backend report (its `kind`, `version` and
    /// `library` are used); `policies` the serialized guard/verdict and
    /// sandbox config; `build` identifies the daemon's code (see
    /// [`build_id`]). Refused when the backend names no library.
    pub fn new(
        backend: &leanpool_protocol::BackendInfo,
        policies: &impl Serialize,
        build: &str,
    ) -> Result<Identity, IdentityError> {
        let Some(library) = &backend.library else {
            return Err(IdentityError::UnknownLibrary(
                backend
                    .library_error
                    .clone()
                    .unwrap_or_else(|| "no library reported".into()),
            ));
        };
        let doc = json!({
            "backend": {
                "kind": backend.kind,
                "version": backend.version,
                "library": library,
            },
            "policies": to_value(policies),
            "build": build,
        });
        Ok(Identity {
            digest: sha256_hex(&canonical(&doc)),
        })
    }

    /// An identity from a ready digest (tests and benches that have no
    /// backend report).
    pub fn from_digest(digest: impl Into<String>) -> Identity {
        Identity {
            digest: digest.into(),
        }
    }

    /// The identity's hex digest.
    pub fn digest(&self) -> &str {
        &self.digest
    }
}

/// The cache key of `method` with decoded params `params` (serialized from
/// the method's typed params) for a caller in `partition`.
pub fn key(identity: &Identity, partition: &str, method: &str, params: &impl Serialize) -> Key {
    let mut p = to_value(params);
    if let Value::Object(m) = &mut p {
        for k in NON_ANSWER_PARAMS {
            m.remove(*k);
        }
    }
    let doc = json!({
        "format": FORMAT_VERSION,
        "identity": identity.digest,
        "partition": partition,
        "method": method,
        "params": p,
    });
    Key(Sha256::digest(canonical(&doc)).into())
}

/// The SHA-256 of the running executable, hex: identifies the daemon's
/// build (blocking; ~0.5 s for a 160 MB debug binary).
pub fn build_id() -> Result<String, IdentityError> {
    let exe = std::env::current_exe().map_err(|e| IdentityError::Build(e.to_string()))?;
    let mut f = std::fs::File::open(&exe)
        .map_err(|e| IdentityError::Build(format!("{}: {e}", exe.display())))?;
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h)
        .map_err(|e| IdentityError::Build(format!("{}: {e}", exe.display())))?;
    Ok(hex(&h.finalize()))
}

/// `v` as a JSON value; a type that cannot be one (never the case for the
/// config and params types here) becomes a string naming the failure, which
/// still separates it from every other value.
fn to_value(v: &impl Serialize) -> Value {
    serde_json::to_value(v).unwrap_or_else(|e| {
        let mut m = Map::new();
        m.insert("unserializable".into(), Value::String(e.to_string()));
        Value::Object(m)
    })
}

/// Canonical bytes of a JSON value: keys sorted (serde_json's map is
/// ordered by key), compact.
pub fn canonical(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).expect("a JSON value always serializes")
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use leanpool_protocol::{BackendInfo, BackendInfoKind, CheckParams, LibraryIdentity};

    fn backend(lib: Option<&str>) -> BackendInfo {
        BackendInfo {
            kind: BackendInfoKind::Wasm,
            version: Some("4.28.0-pre".into()),
            error: None,
            library: lib.map(|d| LibraryIdentity {
                kind: "oleans".into(),
                mathlib_rev: None,
                manifest: None,
                oleans_sha256: Some(d.into()),
                olean_files: Some(3),
            }),
            library_error: None,
            sandbox: None,
        }
    }

    fn id(lib: &str, policy: &str, build: &str) -> Identity {
        Identity::new(&backend(Some(lib)), &json!({"guard": policy}), build).unwrap()
    }

    #[test]
    fn every_answer_input_changes_the_key() {
        let base = id("aa", "p", "b");
        let k = key(&base, "", "check", &CheckParams::new("t"));
        // Each field that can change an answer gives another key.
        assert_ne!(
            k,
            key(&id("ab", "p", "b"), "", "check", &CheckParams::new("t"))
        );
        assert_ne!(
            k,
            key(&id("aa", "q", "b"), "", "check", &CheckParams::new("t"))
        );
        assert_ne!(
            k,
            key(&id("aa", "p", "c"), "", "check", &CheckParams::new("t"))
        );
        assert_ne!(k, key(&base, "uid:1", "check", &CheckParams::new("t")));
        assert_ne!(k, key(&base, "", "opt", &CheckParams::new("t")));
        assert_ne!(k, key(&base, "", "check", &CheckParams::new("t ")));
        let mut v = backend(Some("aa"));
        v.version = Some("4.29.0".into());
        let other = Identity::new(&v, &json!({"guard": "p"}), "b").unwrap();
        assert_ne!(k, key(&other, "", "check", &CheckParams::new("t")));
        // A param the method grows later counts too.
        let extra = json!({"text": "t", "mode": "x"});
        assert_ne!(k, key(&base, "", "check", &extra));
    }

    #[test]
    fn timing_limit_and_switch_do_not_change_the_key() {
        let base = id("aa", "p", "b");
        let k = key(&base, "", "check", &CheckParams::new("t"));
        assert_eq!(
            k,
            key(
                &base,
                "",
                "check",
                &CheckParams::new("t").with_timeout_ms(5).with_timings()
            )
        );
        let with_switch = json!({"text": "t", "cache": false, "timeout_ms": 9});
        assert_eq!(k, key(&base, "", "check", &with_switch));
        // Member order does not matter: the document is canonical.
        let a = json!({"header": "h", "statement": "s", "proof": "p"});
        let b: Value =
            serde_json::from_str(r#"{"proof":"p","statement":"s","header":"h"}"#).unwrap();
        assert_eq!(key(&base, "", "verify", &a), key(&base, "", "verify", &b));
    }

    #[test]
    fn fields_cannot_run_into_each_other() {
        let base = id("aa", "p", "b");
        // "ab" + "c" vs "a" + "bc" across partition and text.
        assert_ne!(
            key(&base, "ab", "check", &CheckParams::new("c")),
            key(&base, "a", "check", &CheckParams::new("bc"))
        );
    }

    #[test]
    fn an_unidentified_library_gets_no_cache() {
        let e = Identity::new(&backend(None), &json!({}), "b").unwrap_err();
        assert!(matches!(e, IdentityError::UnknownLibrary(_)));
        assert!(e.to_string().contains("cache is off"), "{e}");
    }

    #[test]
    fn build_id_is_the_executable_digest() {
        let a = build_id().unwrap();
        assert_eq!(a.len(), 64);
        assert_eq!(a, build_id().unwrap());
    }
}
