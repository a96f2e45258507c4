//! Lean's `TaggedText` as it arrives over the RPC, and subexpression
//! positions.
//!
//! Lean serializes `Lean.Widget.TaggedText α` with the derived JSON
//! encoding of an inductive type: `{"text": "…"}`, `{"append": [t, …]}`,
//! `{"tag": [α, t]}`. In a `CodeWithInfos` (goals, hypothesis types, `expr`
//! embeds of messages) `α` is a `SubexprInfo`
//! `{"info": {"p": "<rpc ref>"}, "subexprPos": "/1/0", "diffStatus"?: …}`;
//! in an interactive message `α` is a `MsgEmbed` (`{"expr": <CodeWithInfos>}`,
//! `{"goal": …}`, `{"trace": …}`, …). The parser keeps tag payloads as raw
//! JSON; [`SubexprPos::of_tag`] reads the position out of a code tag.

use serde_json::Value;
use std::fmt;

/// A parsed `TaggedText` whose tags are still raw JSON.
#[derive(Debug, Clone, PartialEq)]
pub enum Tagged {
    /// Plain text.
    Text(String),
    /// Pieces in order.
    Append(Vec<Tagged>),
    /// A tagged subterm (the tag as raw JSON).
    Tag(Value, Box<Tagged>),
}

/// The answer did not have the shape Lean's encoding gives.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unexpected TaggedText JSON: {0}")]
pub struct ShapeError(pub String);

fn shape(what: &str, v: &Value) -> ShapeError {
    let mut s = v.to_string();
    if s.len() > 200 {
        let mut cut = 200;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push('…');
    }
    ShapeError(format!("{what}: {s}"))
}

impl Tagged {
    /// Reads Lean's `TaggedText` JSON.
    pub fn parse(v: &Value) -> Result<Tagged, ShapeError> {
        let obj = v.as_object().ok_or_else(|| shape("not an object", v))?;
        if obj.len() != 1 {
            return Err(shape("expected exactly one of text/append/tag", v));
        }
        let (k, inner) = obj.iter().next().expect("len 1");
        match k.as_str() {
            "text" => Ok(Tagged::Text(
                inner
                    .as_str()
                    .ok_or_else(|| shape("text is not a string", v))?
                    .to_owned(),
            )),
            "append" => {
                let arr = inner
                    .as_array()
                    .ok_or_else(|| shape("append is not an array", v))?;
                Ok(Tagged::Append(
                    arr.iter().map(Tagged::parse).collect::<Result<_, _>>()?,
                ))
            }
            "tag" => {
                let arr = inner
                    .as_array()
                    .ok_or_else(|| shape("tag is not an array", v))?;
                if arr.len() != 2 {
                    return Err(shape("tag is not a pair", v));
                }
                Ok(Tagged::Tag(
                    arr[0].clone(),
                    Box::new(Tagged::parse(&arr[1])?),
                ))
            }
            _ => Err(shape("unknown TaggedText constructor", v)),
        }
    }

    /// The text with all tags removed (Lean's `TaggedText.stripTags`).
    pub fn strip_tags(&self) -> String {
        let mut out = String::new();
        self.strip_into(&mut out);
        out
    }

    fn strip_into(&self, out: &mut String) {
        match self {
            Tagged::Text(s) => out.push_str(s),
            Tagged::Append(xs) => xs.iter().for_each(|x| x.strip_into(out)),
            Tagged::Tag(_, t) => t.strip_into(out),
        }
    }

    /// Pre-order walk over tags (payload, body).
    pub fn visit_tags<'a>(&'a self, f: &mut impl FnMut(&'a Value, &'a Tagged)) {
        match self {
            Tagged::Text(_) => {}
            Tagged::Append(xs) => xs.iter().for_each(|x| x.visit_tags(f)),
            Tagged::Tag(v, t) => {
                f(v, t);
                t.visit_tags(f);
            }
        }
    }
}

/// `Lean.SubExpr.Pos`: the path from the root of an expression to a
/// subexpression, as child coordinates (for `app`: 0 = function,
/// 1 = argument; for binders: 0 = domain, 1 = body; `letE`: 0 type,
/// 1 value, 2 body; 3 = "the type of").
///
/// On the wire Lean sends it as `"/1/0/1"` (root = `"/"`); older servers
/// sent the raw `Nat` (`1` followed by base-4 digits), which is accepted
/// too.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct SubexprPos(pub Vec<u8>);

impl SubexprPos {
    /// The root position.
    pub fn root() -> Self {
        SubexprPos(Vec::new())
    }

    /// Reads a `SubExpr.Pos` as Lean encodes it.
    pub fn parse(v: &Value) -> Option<SubexprPos> {
        match v {
            Value::String(s) => {
                if s == "/" {
                    return Some(SubexprPos::root());
                }
                let rest = s.strip_prefix('/')?;
                rest.split('/')
                    .map(|c| match c {
                        "0" => Some(0u8),
                        "1" => Some(1),
                        "2" => Some(2),
                        "3" => Some(3),
                        _ => None,
                    })
                    .collect::<Option<Vec<u8>>>()
                    .map(SubexprPos)
            }
            Value::Number(n) => {
                let mut n = n.as_u64()?;
                if n == 0 {
                    return None;
                }
                let mut digits = Vec::new();
                while n >= 4 {
                    digits.push((n % 4) as u8);
                    n /= 4;
                }
                if n != 1 {
                    return None;
                }
                digits.reverse();
                Some(SubexprPos(digits))
            }
            _ => None,
        }
    }

    /// The position carried by a `CodeWithInfos` tag payload.
    pub fn of_tag(tag: &Value) -> Option<SubexprPos> {
        SubexprPos::parse(tag.get("subexprPos")?)
    }

    /// `self` is a strict prefix of `other` (other lies strictly inside).
    pub fn is_strict_prefix_of(&self, other: &SubexprPos) -> bool {
        self.0.len() < other.0.len() && other.0.starts_with(&self.0)
    }

    /// The position of child `c` below this one.
    pub fn child(&self, c: u8) -> SubexprPos {
        let mut v = self.0.clone();
        v.push(c);
        SubexprPos(v)
    }
}

impl fmt::Display for SubexprPos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("/");
        }
        for c in &self.0 {
            write!(f, "/{c}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_lean_shapes() {
        let v = json!({"tag": [{"subexprPos": "/1", "info": {"p": "3"}},
            {"append": [{"text": "a"}, {"text": " + "}, {"tag": [{"subexprPos": "/1/1", "info": {"p": "4"}}, {"text": "b"}]}]}]});
        let t = Tagged::parse(&v).unwrap();
        assert_eq!(t.strip_tags(), "a + b");
        let mut poss = vec![];
        t.visit_tags(&mut |p, _| poss.push(SubexprPos::of_tag(p).unwrap().to_string()));
        assert_eq!(poss, ["/1", "/1/1"]);
    }

    #[test]
    fn rejects_bad_shapes() {
        assert!(Tagged::parse(&json!({"text": 1})).is_err());
        assert!(Tagged::parse(&json!({"tag": [1]})).is_err());
        assert!(Tagged::parse(&json!({"foo": "x"})).is_err());
        assert!(Tagged::parse(&json!([])).is_err());
    }

    #[test]
    fn positions_both_encodings() {
        assert_eq!(SubexprPos::parse(&json!("/")), Some(SubexprPos(vec![])));
        assert_eq!(
            SubexprPos::parse(&json!("/1/0/1")),
            Some(SubexprPos(vec![1, 0, 1]))
        );
        // Nat encoding: 1 then base-4 digits 1,0,1 = 0b1_01_00_01 = 64+16+1.
        assert_eq!(
            SubexprPos::parse(&json!(81)),
            Some(SubexprPos(vec![1, 0, 1]))
        );
        assert_eq!(SubexprPos::parse(&json!(1)), Some(SubexprPos(vec![])));
        assert_eq!(SubexprPos::parse(&json!("/4")), None);
        assert_eq!(SubexprPos::parse(&json!("1/0")), None);
        let p = SubexprPos(vec![1]);
        assert!(p.is_strict_prefix_of(&SubexprPos(vec![1, 0])));
        assert!(!p.is_strict_prefix_of(&p));
        assert!(!p.is_strict_prefix_of(&SubexprPos(vec![0, 1])));
    }
}
