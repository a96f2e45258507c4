//! Newline-delimited frames with a size cap.
//!
//! The wire format is one JSON object per line. A reader that used
//! `read_line` would buffer a hostile 10 GB "line" whole before it could
//! refuse it, so this reader copies at most `max` bytes of a line and, once a
//! line is known to be too long, only counts the rest (keeping a short prefix
//! so the answer can still carry the request's id when it came early).

#![deny(missing_docs)]

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// How much of an oversized line is kept for [`crate::request::scan_id`].
pub const OVERSIZE_PREFIX: usize = 4096;

/// One line from the peer, without its `\n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A complete line of at most `max` bytes (a final line without `\n`
    /// before EOF counts too).
    Line(Vec<u8>),
    /// A line longer than `max`: its length and its first
    /// [`OVERSIZE_PREFIX`] bytes. The rest was read and dropped.
    TooLarge {
        /// The line's full length in bytes.
        len: usize,
        /// Its first bytes (at most [`OVERSIZE_PREFIX`]).
        prefix: Vec<u8>,
    },
}

/// Splits a byte stream into [`Frame`]s, holding at most `max` bytes of a
/// line in memory (plus the underlying reader's own buffer).
pub struct FrameReader<R> {
    inner: R,
    max: usize,
    line: Vec<u8>,
    /// Bytes of the current line seen so far (may exceed `line.len()`).
    seen: usize,
    oversize: bool,
}

impl<R: AsyncBufRead + Unpin> FrameReader<R> {
    /// A reader of `inner` that holds at most `max` bytes of a line.
    pub fn new(inner: R, max: usize) -> Self {
        FrameReader {
            inner,
            max,
            line: Vec::new(),
            seen: 0,
            oversize: false,
        }
    }

    /// The next frame, or `None` at a clean EOF.
    ///
    /// Cancel-safe: all partial state lives in `self`, and the only await is
    /// `fill_buf`, which consumes nothing; so it can sit in a `select!`.
    pub async fn next_frame(&mut self) -> std::io::Result<Option<Frame>> {
        loop {
            let avail = self.inner.fill_buf().await?;
            if avail.is_empty() {
                if self.seen == 0 && !self.oversize {
                    return Ok(None);
                }
                return Ok(Some(self.take()));
            }
            match avail.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    let (head, n) = (&avail[..i], i + 1);
                    Self::push(
                        &mut self.line,
                        &mut self.seen,
                        &mut self.oversize,
                        self.max,
                        head,
                    );
                    self.inner.consume(n);
                    return Ok(Some(self.take()));
                }
                None => {
                    let n = avail.len();
                    Self::push(
                        &mut self.line,
                        &mut self.seen,
                        &mut self.oversize,
                        self.max,
                        avail,
                    );
                    self.inner.consume(n);
                }
            }
        }
    }

    fn push(line: &mut Vec<u8>, seen: &mut usize, oversize: &mut bool, max: usize, bytes: &[u8]) {
        *seen += bytes.len();
        if !*oversize && *seen > max {
            *oversize = true;
            line.truncate(OVERSIZE_PREFIX);
        }
        let room = if *oversize {
            OVERSIZE_PREFIX.saturating_sub(line.len())
        } else {
            bytes.len()
        };
        line.extend_from_slice(&bytes[..room.min(bytes.len())]);
    }

    fn take(&mut self) -> Frame {
        let line = std::mem::take(&mut self.line);
        let frame = if self.oversize {
            Frame::TooLarge {
                len: self.seen,
                prefix: line,
            }
        } else {
            Frame::Line(line)
        };
        self.seen = 0;
        self.oversize = false;
        frame
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::BufReader;

    async fn frames(input: &[u8], max: usize, cap: usize) -> Vec<Frame> {
        let mut r = FrameReader::new(BufReader::with_capacity(cap, input), max);
        let mut out = vec![];
        while let Some(f) = r.next_frame().await.unwrap() {
            out.push(f);
        }
        out
    }

    #[tokio::test]
    async fn splits_lines_and_keeps_unterminated_tail() {
        let f = frames(b"a\nbb\n\nccc", 10, 2).await;
        assert_eq!(
            f,
            vec![
                Frame::Line(b"a".to_vec()),
                Frame::Line(b"bb".to_vec()),
                Frame::Line(vec![]),
                Frame::Line(b"ccc".to_vec())
            ]
        );
    }

    #[tokio::test]
    async fn oversized_line_is_counted_not_buffered_and_next_line_survives() {
        let mut input = vec![b'x'; 100_000];
        input.extend_from_slice(b"\nok\n");
        let f = frames(&input, 1000, 64).await;
        assert_eq!(f.len(), 2);
        match &f[0] {
            Frame::TooLarge { len, prefix } => {
                assert_eq!(*len, 100_000);
                assert_eq!(prefix.len(), OVERSIZE_PREFIX.min(100_000));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(f[1], Frame::Line(b"ok".to_vec()));
    }

    #[tokio::test]
    async fn exactly_max_is_accepted() {
        let mut input = vec![b'y'; 50];
        input.push(b'\n');
        assert_eq!(
            frames(&input, 50, 7).await,
            vec![Frame::Line(vec![b'y'; 50])]
        );
        assert!(matches!(
            frames(&input, 49, 7).await[0],
            Frame::TooLarge { len: 50, .. }
        ));
    }

    proptest::proptest! {
        /// Chunking must not change the frames: the same bytes through
        /// buffers of any size give the same lines.
        #[test]
        fn chunking_is_invisible(lines in proptest::collection::vec("[a-z{}\":,]{0,40}", 0..20), cap in 1usize..64) {
            let input = lines.iter().map(|l| format!("{l}\n")).collect::<String>();
            let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
            let got = rt.block_on(frames(input.as_bytes(), 30, cap));
            let want: Vec<Frame> = lines.iter().map(|l| {
                if l.len() > 30 { Frame::TooLarge { len: l.len(), prefix: l.as_bytes().to_vec() } }
                else { Frame::Line(l.as_bytes().to_vec()) }
            }).collect();
            proptest::prop_assert_eq!(got, want);
        }
    }
}
