//! From a [`Frame`] to a JSON-RPC request, or to the error answer it earns.
//!
//! Pure functions with no I/O, so the fuzz test can drive them hundreds of
//! thousands of times in-process. Every input maps to exactly one
//! [`Decoded`]; none panics.

use crate::framing::Frame;
use leanpool_protocol::{ErrorCode, Id, Request, Response};
use serde_json::Value;

/// What the server does with one frame.
#[derive(Debug, Clone, PartialEq)]
pub enum Decoded {
    /// A well-formed request to dispatch.
    Call(Request),
    /// Answer this straight away (the frame was not a usable request).
    Reply(Response),
    /// An empty or all-whitespace line: ignored, no answer (lets humans type
    /// into `socat` and tolerates `\r\n` keep-alives).
    Blank,
}

/// Decodes one frame. `max` is only used to word the too-large error.
pub fn decode(frame: &Frame, max: usize) -> Decoded {
    let line = match frame {
        Frame::TooLarge { len, prefix } => {
            return Decoded::Reply(Response::err(
                scan_id(prefix),
                ErrorCode::RequestTooLarge,
                format!("request line is {len} bytes; this daemon accepts at most {max}"),
            ))
        }
        Frame::Line(l) => l.as_slice(),
    };
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Decoded::Blank;
    }
    if let Err(e) = std::str::from_utf8(line) {
        let msg = format!("request is not valid UTF-8 (at byte {})", e.valid_up_to());
        return Decoded::Reply(Response::err(Id::Null, ErrorCode::ParseError, msg));
    }
    let value: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => {
            let msg = format!("request is not valid JSON: {e}");
            return Decoded::Reply(Response::err(Id::Null, ErrorCode::ParseError, msg));
        }
    };
    match into_request(value) {
        Ok(r) => Decoded::Call(r),
        Err(resp) => Decoded::Reply(*resp),
    }
}

/// Checks the envelope. The id is validated first so that every later
/// error can be addressed to it.
fn into_request(value: Value) -> Result<Request, Box<Response>> {
    let invalid = |id: Id, msg: &str| Box::new(Response::err(id, ErrorCode::InvalidRequest, msg));
    let mut obj = match value {
        Value::Object(o) => o,
        Value::Array(_) => return Err(invalid(
            Id::Null,
            "batch requests are not supported; pipeline single requests on one connection instead",
        )),
        _ => return Err(invalid(Id::Null, "a request must be a JSON object")),
    };
    let id = match obj.remove("id") {
        None => {
            return Err(invalid(
                Id::Null,
                "missing `id` (notifications are not supported: every request is answered)",
            ))
        }
        Some(Value::String(s)) => Id::Str(s),
        Some(Value::Number(n)) => match n.as_i64() {
            Some(i) => Id::Num(i),
            None => {
                return Err(invalid(
                    Id::Null,
                    "`id` must be a string or a 64-bit integer",
                ))
            }
        },
        Some(_) => {
            return Err(invalid(
                Id::Null,
                "`id` must be a string or a 64-bit integer",
            ))
        }
    };
    match obj.remove("jsonrpc") {
        Some(Value::String(v)) if v == "2.0" => {}
        _ => return Err(invalid(id, "`jsonrpc` must be \"2.0\"")),
    }
    let method = match obj.remove("method") {
        Some(Value::String(m)) => m,
        _ => return Err(invalid(id, "`method` must be a string")),
    };
    let params = obj.remove("params").unwrap_or(Value::Null);
    Ok(Request {
        jsonrpc: "2.0".into(),
        id,
        method,
        params,
    })
}

/// Best-effort id of a request we refused to parse whole: walks the
/// top-level keys of the object at the start of `prefix` and returns `id`'s
/// value if it is a complete string or integer before the prefix ends.
/// Anything else (id after a long `params`, bad JSON) gives `Id::Null`.
pub fn scan_id(prefix: &[u8]) -> Id {
    let mut s = Scanner { b: prefix, i: 0 };
    s.id().unwrap_or(Id::Null)
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
}

impl Scanner<'_> {
    fn ws(&mut self) {
        while self.i < self.b.len() && self.b[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    fn eat(&mut self, c: u8) -> Option<()> {
        self.ws();
        (self.b.get(self.i) == Some(&c)).then(|| self.i += 1)
    }
    /// A complete string token starting at `i`; returns its raw bytes.
    fn string(&mut self) -> Option<&[u8]> {
        self.ws();
        let start = self.i;
        if self.b.get(self.i) != Some(&b'"') {
            return None;
        }
        self.i += 1;
        while self.i < self.b.len() {
            match self.b[self.i] {
                b'\\' => self.i += 2,
                b'"' => {
                    self.i += 1;
                    return Some(&self.b[start..self.i]);
                }
                _ => self.i += 1,
            }
        }
        None
    }
    /// Skips one value of any kind; `None` if the prefix ends inside it.
    fn skip_value(&mut self) -> Option<()> {
        self.ws();
        match *self.b.get(self.i)? {
            b'"' => self.string().map(|_| ()),
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match *self.b.get(self.i)? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.i += 1;
                                return Some(());
                            }
                        }
                        _ => {}
                    }
                    self.i += 1;
                }
            }
            _ => loop {
                let c = *self.b.get(self.i)?;
                if matches!(c, b',' | b'}' | b']') || c.is_ascii_whitespace() {
                    return Some(());
                }
                self.i += 1;
            },
        }
    }
    fn id(&mut self) -> Option<Id> {
        self.eat(b'{')?;
        loop {
            let key: String = serde_json::from_slice(self.string()?).ok()?;
            self.eat(b':')?;
            self.ws();
            if key == "id" {
                let start = self.i;
                if self.b.get(self.i) == Some(&b'"') {
                    let raw = self.string()?;
                    return serde_json::from_slice::<String>(raw).ok().map(Id::Str);
                }
                while self.i < self.b.len()
                    && (self.b[self.i] == b'-' || self.b[self.i].is_ascii_digit())
                {
                    self.i += 1;
                }
                self.ws();
                // The number must be visibly finished (a delimiter follows).
                if !matches!(self.b.get(self.i), Some(b',') | Some(b'}')) {
                    return None;
                }
                let text = std::str::from_utf8(&self.b[start..self.i]).ok()?.trim();
                return text.parse::<i64>().ok().map(Id::Num);
            }
            self.skip_value()?;
            self.eat(b',')?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(s: &str) -> Frame {
        Frame::Line(s.as_bytes().to_vec())
    }
    fn err_of(d: Decoded) -> (Id, ErrorCode) {
        match d {
            Decoded::Reply(r) => (r.id, r.error.unwrap().code),
            other => panic!("expected an error reply, got {other:?}"),
        }
    }

    #[test]
    fn good_request() {
        let d = decode(
            &line(r#"{"jsonrpc":"2.0","id":7,"method":"ping","params":{"a":1}}"#),
            100,
        );
        let Decoded::Call(r) = d else { panic!() };
        assert_eq!((r.id, r.method.as_str()), (Id::Num(7), "ping"));
        let d = decode(
            &line("{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"status\"}\r"),
            100,
        );
        assert!(matches!(
            d,
            Decoded::Call(Request {
                id: Id::Str(_),
                params: Value::Null,
                ..
            })
        ));
    }

    #[test]
    fn envelope_errors_are_addressed_when_possible() {
        assert_eq!(
            err_of(decode(&line("{oops"), 100)),
            (Id::Null, ErrorCode::ParseError)
        );
        assert_eq!(
            err_of(decode(&Frame::Line(vec![b'"', 0xff, b'"']), 100)),
            (Id::Null, ErrorCode::ParseError)
        );
        assert_eq!(
            err_of(decode(&line("[1]"), 100)),
            (Id::Null, ErrorCode::InvalidRequest)
        );
        assert_eq!(
            err_of(decode(&line("3"), 100)),
            (Id::Null, ErrorCode::InvalidRequest)
        );
        assert_eq!(
            err_of(decode(&line(r#"{"jsonrpc":"2.0","method":"x"}"#), 100)),
            (Id::Null, ErrorCode::InvalidRequest)
        );
        assert_eq!(
            err_of(decode(
                &line(r#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#),
                100
            )),
            (Id::Null, ErrorCode::InvalidRequest)
        );
        assert_eq!(
            err_of(decode(
                &line(r#"{"jsonrpc":"1.0","id":4,"method":"x"}"#),
                100
            )),
            (Id::Num(4), ErrorCode::InvalidRequest)
        );
        assert_eq!(
            err_of(decode(
                &line(r#"{"jsonrpc":"2.0","id":"q","method":5}"#),
                100
            )),
            (Id::Str("q".into()), ErrorCode::InvalidRequest)
        );
        assert_eq!(decode(&line("  \r"), 100), Decoded::Blank);
    }

    #[test]
    fn too_large_keeps_an_early_id() {
        let f = Frame::TooLarge {
            len: 10_000,
            prefix: br#"{"jsonrpc":"2.0","id":42,"method":"check","params":{"text":"aaaa"#.to_vec(),
        };
        assert_eq!(
            err_of(decode(&f, 100)),
            (Id::Num(42), ErrorCode::RequestTooLarge)
        );
    }

    #[test]
    fn scan_id_cases() {
        assert_eq!(
            scan_id(br#"{"id":"a\"b","method":"#),
            Id::Str("a\"b".into())
        );
        assert_eq!(
            scan_id(br#" { "jsonrpc" : "2.0" , "id" : -3 , "p"#),
            Id::Num(-3)
        );
        assert_eq!(
            scan_id(br#"{"params":{"x":[1,{"id":9}]},"id":5}"#),
            Id::Num(5)
        );
        assert_eq!(scan_id(br#"{"params":{"text":"lo"#), Id::Null);
        assert_eq!(scan_id(br#"{"id":12"#), Id::Null, "number not finished");
        assert_eq!(scan_id(br#"{"a":true,"b":null,"id":1}"#), Id::Num(1));
        assert_eq!(scan_id(b"\xff\xfe"), Id::Null);
    }
}
