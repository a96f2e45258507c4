//! LSP base-protocol framing (`Content-Length: N\r\n\r\n<N bytes>`),
//! tolerant of noise.
//!
//! The WASM build of Lean prints `[DEBUG:...]` lines on stdout, the same
//! stream that carries LSP, so the reader skips any bytes that are not a
//! header until it sees `Content-Length:` (matched case-insensitively, as
//! header names are). Other headers (`Content-Type`) are accepted and
//! ignored.

#![deny(missing_docs)]

use tokio::io::{AsyncRead, AsyncReadExt};

/// Refuse absurd lengths instead of allocating them.
pub const MAX_FRAME: usize = 512 << 20;

const CONTENT_LENGTH: &[u8] = b"content-length:";

/// Encodes one message.
pub fn encode(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

/// Why a frame could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// A malformed header block: a line without `:`, over 64 KiB, or a
    /// `Content-Length` that is not a number or is too large.
    #[error("bad LSP header: {0}")]
    BadHeader(String),
    /// The stream failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Incremental decoder: feed bytes in, take whole messages out. Kept
/// separate from the I/O so it can be tested with arbitrary splits.
#[derive(Debug, Default)]
pub struct Decoder {
    buf: Vec<u8>,
    /// Bytes skipped because they were not part of a frame (for logs).
    pub skipped: u64,
}

fn find_ci(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
}

impl Decoder {
    /// Appends bytes read from the stream.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete message body, if the buffer holds one.
    pub fn next_frame(&mut self) -> Result<Option<Vec<u8>>, FrameError> {
        let Some(start) = find_ci(&self.buf, CONTENT_LENGTH) else {
            // Keep a tail that could be the start of a split header name.
            let keep = CONTENT_LENGTH.len() - 1;
            if self.buf.len() > keep {
                let drop = self.buf.len() - keep;
                self.skipped += drop as u64;
                self.buf.drain(..drop);
            }
            return Ok(None);
        };
        if start > 0 {
            self.skipped += start as u64;
            self.buf.drain(..start);
        }
        let Some(end) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            if self.buf.len() > 64 * 1024 {
                return Err(FrameError::BadHeader(
                    "header block longer than 64 KiB".into(),
                ));
            }
            return Ok(None);
        };
        let headers = String::from_utf8_lossy(&self.buf[..end]).into_owned();
        let mut length = None;
        for h in headers.split("\r\n") {
            let Some((name, value)) = h.split_once(':') else {
                return Err(FrameError::BadHeader(h.to_string()));
            };
            if name.trim().eq_ignore_ascii_case("content-length") {
                let n: usize = value
                    .trim()
                    .parse()
                    .map_err(|_| FrameError::BadHeader(h.to_string()))?;
                if n > MAX_FRAME {
                    return Err(FrameError::BadHeader(format!(
                        "Content-Length {n} too large"
                    )));
                }
                length = Some(n);
            }
        }
        let n = length.ok_or_else(|| FrameError::BadHeader(headers.clone()))?;
        let body_start = end + 4;
        if self.buf.len() < body_start + n {
            return Ok(None);
        }
        let body = self.buf[body_start..body_start + n].to_vec();
        self.buf.drain(..body_start + n);
        Ok(Some(body))
    }
}

/// Reads frames from a byte stream.
pub struct FrameReader<R> {
    inner: R,
    decoder: Decoder,
    chunk: Vec<u8>,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    /// A reader of `inner`'s frames.
    pub fn new(inner: R) -> Self {
        FrameReader {
            inner,
            decoder: Decoder::default(),
            chunk: vec![0; 64 * 1024],
        }
    }

    /// The next message body; `Ok(None)` at end of stream.
    pub async fn next(&mut self) -> Result<Option<Vec<u8>>, FrameError> {
        loop {
            if let Some(body) = self.decoder.next_frame()? {
                return Ok(Some(body));
            }
            let n = self.inner.read(&mut self.chunk).await?;
            if n == 0 {
                return Ok(None);
            }
            self.decoder.push(&self.chunk[..n]);
        }
    }

    /// Bytes skipped so far because they were not part of a frame.
    pub fn skipped(&self) -> u64 {
        self.decoder.skipped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(input: &[u8], split_every: usize) -> Vec<Vec<u8>> {
        let mut d = Decoder::default();
        let mut out = vec![];
        for chunk in input.chunks(split_every.max(1)) {
            d.push(chunk);
            while let Some(f) = d.next_frame().unwrap() {
                out.push(f);
            }
        }
        out
    }

    #[test]
    fn roundtrip() {
        let msg = br#"{"jsonrpc":"2.0","method":"x"}"#;
        assert_eq!(frames(&encode(msg), 1000), vec![msg.to_vec()]);
    }

    #[test]
    fn garbage_before_and_between_messages_any_split() {
        let a = "{\"a\":\"∀ 𝓝\"}".as_bytes();
        let b = br#"{"b":2}"#;
        let mut input = b"[DEBUG:wasm] starting\n[DEBUG: x]\n".to_vec();
        input.extend(encode(a));
        input.extend(b"[DEBUG: between] Content-\n");
        input.extend(encode(b));
        for split in [1, 2, 3, 7, 16, 1000] {
            assert_eq!(
                frames(&input, split),
                vec![a.to_vec(), b.to_vec()],
                "split {split}"
            );
        }
    }

    #[test]
    fn multiple_headers_and_case() {
        let body = br#"{"c":3}"#;
        let mut input = format!(
            "content-length: {}\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n",
            body.len()
        )
        .into_bytes();
        input.extend(body);
        let mut input2 =
            format!("Content-Type: x\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
        input2.extend(body);
        // Content-Type before Content-Length: the skip-to-Content-Length
        // rule drops it as noise, which is harmless.
        input.extend(&input2);
        for split in [1, 5, 1000] {
            assert_eq!(frames(&input, split), vec![body.to_vec(), body.to_vec()]);
        }
    }

    #[test]
    fn several_messages_in_one_read() {
        let mut input = vec![];
        for i in 0..5 {
            input.extend(encode(format!("{{\"i\":{i}}}").as_bytes()));
        }
        assert_eq!(frames(&input, 10_000).len(), 5);
    }

    #[test]
    fn bad_length_is_an_error() {
        let mut d = Decoder::default();
        d.push(b"Content-Length: lots\r\n\r\n{}");
        assert!(d.next_frame().is_err());
        let mut d = Decoder::default();
        d.push(format!("Content-Length: {}\r\n\r\n", MAX_FRAME + 1).as_bytes());
        assert!(d.next_frame().is_err());
    }

    #[test]
    fn garbage_only_does_not_grow_the_buffer() {
        let mut d = Decoder::default();
        for _ in 0..1000 {
            d.push(b"[DEBUG: noise noise noise]\n");
            assert!(d.next_frame().unwrap().is_none());
        }
        assert!(d.buf.len() < CONTENT_LENGTH.len());
        assert!(d.skipped > 20_000);
    }

    #[tokio::test]
    async fn reader_over_a_stream() {
        let mut input = b"[DEBUG] hi\n".to_vec();
        input.extend(encode(b"{}"));
        let mut r = FrameReader::new(&input[..]);
        assert_eq!(r.next().await.unwrap(), Some(b"{}".to_vec()));
        assert_eq!(r.next().await.unwrap(), None);
        assert_eq!(r.skipped(), 11);
    }
}
