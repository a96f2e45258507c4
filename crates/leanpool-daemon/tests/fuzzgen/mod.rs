//! Frame generator shared by the in-process fuzz test and the live-daemon
//! one: valid requests mutated structurally (random JSON replacing random
//! nodes) and textually (bit flips, insertions of JSON-significant or
//! invalid-UTF-8 bytes, deletions, truncation, deep nesting, oversize).
#![allow(dead_code)]

use rand::rngs::StdRng;
use rand::Rng;
use serde_json::{json, Value};

pub fn seeds() -> Vec<Value> {
    let tree = json!({"content": "theorem", "children": [{"content": " _ + _ ", "children": [
        {"content": "a", "variable_freecost": true}, {"content": "b", "variable_freecost": true}]}]});
    let ours = json!({"label": "∀ _, _", "kind": "op", "children": [
        {"label": "x", "kind": "bound_var", "scope": 0}, {"label": "True", "kind": "atom"}]});
    vec![
        json!({"jsonrpc": "2.0", "id": 1, "method": "check", "params": {"text": "theorem t : 1 + 1 = 2 := by decide", "timeout_ms": 5000}}),
        json!({"jsonrpc": "2.0", "id": "n", "method": "normalize", "params": {"text": "import Init\ntheorem t (a : Nat) : a = a := rfl"}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "opt", "params": {"text": "example : ∀ n : ℕ, n ≤ n + 1 := sorry"}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "gted", "params": {"a": tree, "b": ours, "mode": "paper"}}),
        json!({"jsonrpc": "2.0", "id": 5, "method": "gted", "params": {"a": tree, "b": tree}}),
        json!({"jsonrpc": "2.0", "id": 6, "method": "status"}),
        json!({"jsonrpc": "2.0", "id": 7, "method": "ping", "params": [1, 2, {"x": null}]}),
        json!({"jsonrpc": "2.0", "id": -8, "method": "shutdown", "params": {}}),
    ]
}

fn random_value(rng: &mut StdRng, depth: u32) -> Value {
    match rng.gen_range(0..if depth > 3 { 5 } else { 8 }) {
        0 => Value::Null,
        1 => json!(rng.gen::<bool>()),
        2 => json!(rng.gen::<i64>()),
        3 => json!(rng.gen::<f64>() * 1e300),
        4 => {
            let n = rng.gen_range(0..12);
            json!((0..n)
                .map(|_| char::from_u32(rng.gen_range(0..0x3000)).unwrap_or('?'))
                .collect::<String>())
        }
        5 => Value::Array(
            (0..rng.gen_range(0..4))
                .map(|_| random_value(rng, depth + 1))
                .collect(),
        ),
        6 => {
            let keys = [
                "text",
                "a",
                "b",
                "mode",
                "content",
                "children",
                "label",
                "kind",
                "timeout_ms",
                "id",
                "x",
            ];
            Value::Object(
                (0..rng.gen_range(0..4))
                    .map(|_| {
                        (
                            keys[rng.gen_range(0..keys.len())].to_string(),
                            random_value(rng, depth + 1),
                        )
                    })
                    .collect(),
            )
        }
        _ => json!(
            [
                "alpha",
                "paper",
                "plain",
                "op",
                "atom",
                "bound_var",
                "2.0",
                "check",
                "gted"
            ][rng.gen_range(0..9)]
        ),
    }
}

/// Replaces one random node of the JSON tree with a random value.
fn mutate_value(rng: &mut StdRng, v: &mut Value) {
    let children: usize = match v {
        Value::Array(a) => a.len(),
        Value::Object(o) => o.len(),
        _ => 0,
    };
    if children == 0 || rng.gen_ratio(1, 4) {
        *v = random_value(rng, 0);
        return;
    }
    let i = rng.gen_range(0..children);
    match v {
        Value::Array(a) => mutate_value(rng, &mut a[i]),
        Value::Object(o) => {
            if rng.gen_ratio(1, 5) {
                let k = o.keys().nth(i).unwrap().clone();
                o.remove(&k);
            } else {
                mutate_value(rng, o.values_mut().nth(i).unwrap())
            }
        }
        _ => unreachable!(),
    }
}

const TOKENS: &[&[u8]] = &[
    b"null",
    b"[",
    b"{",
    b"}",
    b"\"",
    b"\\u0000",
    b"\\ud800",
    b"1e999",
    b"-",
    b"\xff\xfe",
    b"\xc3",
    b"\"id\":",
    b":",
    b",",
    b"\r",
    b"\x00",
    b"\"params\":",
];

/// One frame: a seed mutated structurally, textually, or both.
pub fn frame(rng: &mut StdRng, seeds: &[Value], max: usize) -> Vec<u8> {
    let mut v = seeds[rng.gen_range(0..seeds.len())].clone();
    if rng.gen_ratio(2, 3) {
        for _ in 0..rng.gen_range(1..4) {
            mutate_value(rng, &mut v);
        }
    }
    let mut b = serde_json::to_vec(&v).unwrap();
    let ops = if rng.gen_ratio(1, 2) {
        0
    } else {
        rng.gen_range(1..5)
    };
    for _ in 0..ops {
        let at = rng.gen_range(0..=b.len());
        match rng.gen_range(0..7) {
            0 if !b.is_empty() => {
                let i = rng.gen_range(0..b.len());
                b[i] ^= 1 << rng.gen_range(0..8);
            }
            1 => b.insert(at, rng.gen()),
            2 => {
                let end = (at + rng.gen_range(0..8)).min(b.len());
                b.drain(at..end);
            }
            3 => b.truncate(at),
            4 => {
                let t = TOKENS[rng.gen_range(0..TOKENS.len())];
                b.splice(at..at, t.iter().copied());
            }
            5 => {
                // Deep nesting, past serde_json's recursion limit.
                let d = rng.gen_range(100..400);
                b.splice(at..at, vec![b'['; d]);
            }
            _ => {
                // Oversized: pad a string far past the cap.
                b.splice(at..at, vec![b'a'; rng.gen_range(max / 2..max * 3)]);
            }
        }
    }
    b.retain(|&c| c != b'\n');
    b
}
