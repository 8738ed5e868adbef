//! Server-Sent Events: the `text/event-stream` body parsed as its bytes arrive, as the WHATWG HTML
//! standard's "event stream interpretation" reads it (section 9.2.6), so that the engine can time each
//! event where it ends.
//!
//! The standard, as implemented here:
//! - a line ends at CRLF, LF or CR (a CR at the end of one read and an LF at the start of the next are
//!   one line end); a UTF-8 byte order mark at the very start is dropped;
//! - an empty line dispatches the event being built, if its data buffer is not empty (an event of
//!   only `event:` or `id:` lines is not dispatched), then resets its data and type;
//! - a line starting with `:` is a comment; otherwise the field name is up to the first `:` (the whole
//!   line if none) and the value after it, one leading space dropped;
//! - `data` appends the value and a LF to the data buffer (the last LF is removed at dispatch);
//!   `event` sets the type; `id` sets the last event id unless the value holds a NUL; `retry` sets the
//!   reconnection time if the value is ASCII digits only; other fields are ignored;
//! - at the end of the stream an event not followed by an empty line is dropped.
//!
//! Bytes are split on line ends as bytes: CR and LF never occur inside a UTF-8 sequence, so this is the
//! same as splitting the decoded text; values are decoded (lossily, as the standard's decoder does)
//! only when asked for (`Event::data`).
//!
//! Bounds: the event being built (its unfinished line and its data so far) is at most `MAX_EVENT`
//! bytes; past that the stream is refused as too large (a failure, `TooLarge`), so that a server that
//! never ends a line or an event costs at most that much. Comments and ignored fields are not kept.

use crate::stats::{Failure, FailureKind};

/// The most of one event kept while it is built: its data so far and its unfinished line. 1 MiB: far
/// above an LLM token's or a notification's few hundred bytes, and an event's whole data is what a
/// script gets as one value.
pub const MAX_EVENT: usize = 1024 * 1024;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One dispatched event, borrowed from the parser until the next `feed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event<'a> {
    /// The type (`event:`), empty for the default "message".
    pub kind: &'a [u8],
    /// The data lines joined by LF (the last LF removed).
    pub data: &'a [u8],
    /// The last event id seen so far in the stream (it carries over to later events, as the standard's
    /// last event ID buffer does).
    pub id: &'a [u8],
}

impl Event<'_> {
    /// The type as the standard's `MessageEvent.type` reads: "message" when none was given.
    pub fn kind_or_message(&self) -> String {
        if self.kind.is_empty() {
            "message".into()
        } else {
            String::from_utf8_lossy(self.kind).into_owned()
        }
    }
}

/// The parser of one event stream (one response's body).
#[derive(Debug)]
pub struct SseParser {
    /// The unfinished line carried over from the last `feed`.
    line: Vec<u8>,
    /// The last byte fed was a CR: an LF starting the next `feed` belongs to that line end.
    after_cr: bool,
    /// No line has ended yet (a BOM may start the first).
    first_line: bool,
    data: Vec<u8>,
    has_data: bool,
    kind: Vec<u8>,
    id: Vec<u8>,
    /// The `retry:` value last seen, in milliseconds.
    pub retry_ms: Option<u64>,
    /// Events dispatched so far.
    pub events: u64,
}

/// The failure of an event stream whose event grew past `MAX_EVENT`.
pub fn too_large_event() -> Failure {
    Failure::new(FailureKind::TooLarge, format!("event-stream event above {} KiB", MAX_EVENT / 1024))
}

/// A parser at a stream's start, whose first line may begin with a byte order mark (a derived default
/// would have said it had seen a line already: h1's and h2lean's parsers, made by `Default`, kept the
/// mark as part of the first field's name, and lost an event that began the stream with one).
impl Default for SseParser {
    fn default() -> SseParser {
        SseParser {
            line: Vec::new(),
            after_cr: false,
            first_line: true,
            data: Vec::new(),
            has_data: false,
            kind: Vec::new(),
            id: Vec::new(),
            retry_ms: None,
            events: 0,
        }
    }
}

impl SseParser {
    pub fn new() -> SseParser {
        SseParser::default()
    }

    /// Parses the next bytes of the stream, calling `on_event` for each event they complete; returns how
    /// many that was, or the failure of an event past `MAX_EVENT`.
    pub fn feed(&mut self, mut bytes: &[u8], mut on_event: impl FnMut(Event<'_>)) -> Result<u64, Failure> {
        let before = self.events;
        // An empty read (an empty chunk, an h2 DATA frame of no bytes) leaves a CR's flag as it was:
        // the LF that may end its line is still to come.
        if self.after_cr && !bytes.is_empty() {
            self.after_cr = false;
            if let [b'\n', rest @ ..] = bytes {
                bytes = rest;
            }
        }
        while let Some(end) = bytes.iter().position(|&b| b == b'\n' || b == b'\r') {
            let (line, rest) = (&bytes[..end], &bytes[end + 1..]);
            if bytes[end] == b'\r' {
                match rest {
                    [b'\n', after @ ..] => bytes = after,
                    [] => {
                        self.after_cr = true;
                        bytes = rest;
                    }
                    _ => bytes = rest,
                }
            } else {
                bytes = rest;
            }
            if self.line.is_empty() {
                self.take_line(line, &mut on_event)?;
            } else {
                let mut whole = std::mem::take(&mut self.line);
                self.check(whole.len() + line.len())?;
                whole.extend_from_slice(line);
                self.take_line(&whole, &mut on_event)?;
                whole.clear();
                self.line = whole; // its capacity serves the next unfinished line
            }
        }
        self.check(self.line.len() + bytes.len())?;
        self.line.extend_from_slice(bytes);
        Ok(self.events - before)
    }

    /// Refuses an event that would hold more than `MAX_EVENT` bytes with an unfinished line of `line`.
    fn check(&self, line: usize) -> Result<(), Failure> {
        if line + self.data.len() > MAX_EVENT {
            return Err(too_large_event());
        }
        Ok(())
    }

    fn take_line(&mut self, mut line: &[u8], on_event: &mut impl FnMut(Event<'_>)) -> Result<(), Failure> {
        if std::mem::take(&mut self.first_line) {
            line = line.strip_prefix(BOM).unwrap_or(line);
        }
        if line.is_empty() {
            if self.has_data {
                self.data.pop(); // the last data line's LF
                self.events += 1;
                on_event(Event { kind: &self.kind, data: &self.data, id: &self.id });
            }
            self.data.clear();
            self.kind.clear();
            self.has_data = false;
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                self.check(value.len() + 1)?;
                self.data.extend_from_slice(value);
                self.data.push(b'\n');
                self.has_data = true;
            }
            b"event" => {
                self.check(value.len())?;
                self.kind.clear();
                self.kind.extend_from_slice(value);
            }
            b"id" if !value.contains(&0) => {
                self.check(value.len())?;
                self.id.clear();
                self.id.extend_from_slice(value);
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                self.retry_ms = std::str::from_utf8(value).ok().and_then(|s| s.parse().ok());
            }
            _ => {}
        }
        Ok(())
    }
}

/// Whether a response of this status may be an event stream: a 2xx's only. EventSource fails a
/// connection on any other status, so a 503 typed `text/event-stream` is a failed request, not a stream
/// begun and completed (HTTP/1.1 and both HTTP/2 clients ask it).
pub fn status_streams(status: u16) -> bool {
    (200..300).contains(&status)
}

/// Whether a Content-Type value is `text/event-stream` (its parameters, such as a charset, ignored).
pub fn is_event_stream(content_type: &[u8]) -> bool {
    let essence = content_type.split(|&b| b == b';').next().unwrap_or_default();
    essence.trim_ascii().eq_ignore_ascii_case(b"text/event-stream")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (type, data, id) of every event `input` holds, fed in pieces of `piece` bytes.
    fn events(input: &[u8], piece: usize) -> Vec<(String, String, String)> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for chunk in input.chunks(piece.max(1)) {
            p.feed(chunk, |e| {
                let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
                out.push((s(e.kind), s(e.data), s(e.id)));
            })
            .unwrap();
        }
        assert_eq!(p.events as usize, out.len());
        out
    }

    fn e(kind: &str, data: &str, id: &str) -> (String, String, String) {
        (kind.into(), data.into(), id.into())
    }

    #[test]
    fn the_standards_examples() {
        // HTML's 9.2.6 examples: two data lines joined; a comment, an id carried; an event type.
        let s = b"data: YHOO\ndata: +2\ndata: 10\n\n: test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n";
        for piece in [1, 2, 3, 7, 1000] {
            assert_eq!(
                events(s, piece),
                vec![
                    e("", "YHOO\n+2\n10", ""),
                    e("", "first event", "1"),
                    e("", "second event", ""),
                    e("", " third event", ""),
                ],
                "pieces of {piece}"
            );
        }
        // "data\n\ndata\ndata\n\ndata:" : two events, the first empty, the second one LF; the last is
        // never ended by an empty line.
        assert_eq!(events(b"data\n\ndata\ndata\n\ndata:", 1), vec![e("", "", ""), e("", "\n", "")]);
        assert_eq!(events(b"event: add\ndata: 73857293\n\n", 4), vec![e("add", "73857293", "")]);
    }

    #[test]
    fn line_ends_of_every_kind_and_a_bom() {
        let s = b"\xEF\xBB\xBFdata: a\r\n\r\ndata: b\r\rdata: c\n\n";
        for piece in 1..=s.len() {
            assert_eq!(events(s, piece), vec![e("", "a", ""), e("", "b", ""), e("", "c", "")], "pieces of {piece}");
        }
        // A BOM only at the very start; a second one is part of the field name (ignored).
        assert_eq!(events(b"\xEF\xBB\xBF\xEF\xBB\xBFdata: x\n\ndata: y\n\n", 2), vec![e("", "y", "")]);
        // A CR ending one read, then an empty read (an empty chunk or DATA frame), then its LF: one
        // line end, not two (the empty read had cleared the CR's mark: the LF made an empty line that
        // dispatched an event the stream never ended; proptest found it in CI).
        let mut p = SseParser::new();
        let mut n = 0;
        for piece in [b"data:\r".as_slice(), b"", b"\n"] {
            n += p.feed(piece, |_| {}).unwrap();
        }
        assert_eq!(n, 0);
        assert_eq!(p.feed(b"\r\n", |_| {}).unwrap(), 1);
        // A parser made by `Default` (h1's and h2lean's) is at the stream's start as `new`'s is.
        let mut p = SseParser::default();
        assert_eq!(p.feed(b"\xEF\xBB\xBFdata:\n\n", |_| {}).unwrap(), 1);
    }

    #[test]
    fn fields_without_data_dispatch_nothing_and_retry_wants_digits() {
        let mut p = SseParser::new();
        let n = p.feed(b"event: x\nid: 7\n\nretry: 15x\nretry: 2500\n\n:ping\n\n", |_| {}).unwrap();
        assert_eq!((n, p.retry_ms), (0, Some(2500)));
        assert_eq!(events(b"id: 7\n\ndata: z\n\nid: a\0b\ndata: w\n\n", 3), vec![e("", "z", "7"), e("", "w", "7")]);
    }

    #[test]
    fn an_event_past_the_bound_is_refused_and_memory_stays_bounded() {
        let mut p = SseParser::new();
        let line = vec![b'x'; 64 * 1024];
        let mut fed = 0;
        let err = loop {
            match p.feed(&line, |_| {}) {
                Ok(_) => fed += line.len(),
                Err(f) => break f,
            }
        };
        assert_eq!(err.kind, FailureKind::TooLarge);
        assert_eq!(fed, MAX_EVENT, "refused at the bound, not before");
        // Data lines add up to the bound too, each line short.
        let mut p = SseParser::new();
        let data = [b"data: ".as_slice(), &vec![b'y'; 1000], b"\n"].concat();
        let fed = (0..).take_while(|_| p.feed(&data, |_| {}).is_ok()).count();
        assert_eq!(fed, MAX_EVENT / 1001, "{fed} lines");
        assert!(p.data.capacity() <= 2 * MAX_EVENT);
        // Comments are not kept, however many.
        let mut p = SseParser::new();
        for _ in 0..10_000 {
            p.feed(b": keep-alive comment of some length\n", |_| {}).unwrap();
        }
        assert!(p.line.capacity() < 1024 && p.data.is_empty());
    }

    #[test]
    fn content_types() {
        assert!(is_event_stream(b"text/event-stream"));
        assert!(is_event_stream(b"Text/Event-Stream; charset=utf-8"));
        assert!(!is_event_stream(b"text/event-streams"));
        assert!(!is_event_stream(b"application/json"));
    }
}
