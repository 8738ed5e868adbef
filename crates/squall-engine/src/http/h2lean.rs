//! HTTP/2 for `squall bench`, by hand: one task per connection reads and writes frames, and the
//! streams multiplexed on it wait on plain slots in a `RefCell` (one thread: no locks, no `Arc`).
//!
//! Why not the `h2` crate, which scripted users keep (they need every response header): at 10
//! connections x 10 streams over TLS to nginx, `perf` put 24% of squall's CPU in `h2` (HPACK both
//! ways, its stream store behind a mutex, a `HeaderMap` built per response) and 5% in `http`/`bytes`,
//! against 1.3% in squall's own code, and squall reached 0.89-1.07x h2load's requests per CPU-second.
//! A benchmark needs none of that per request:
//! - the request's header block is encoded once per run (`encode_head`: literals without indexing,
//!   valid on any connection, in any order), so a request is 9 bytes of frame head plus a copy;
//! - of a response's header block only `:status` is read (`status_of`), and `content-type` when the
//!   caller watches event streams (`head_of`). The others are skipped by their length prefix, never
//!   Huffman-decoded. Our SETTINGS give the server's encoder a dynamic table
//!   of 0 bytes, so a block has no state to keep in step (a server that indexes anyway is a protocol
//!   error, reported);
//! - our receive windows are as large as HTTP/2 allows, topped up every gigabyte: nothing per frame.
//!
//! What a server sends is held within bounds, whatever it sends (issue 26: an endless CONTINUATION
//! sequence once took this client to 2 GB of RSS in 2 s):
//! - a header block is at most `MAX_HEADER_BLOCK` bytes (256 KiB, Chromium's limit on a response's
//!   header list; the h2 crate's default is 16 MiB), said in our SETTINGS as
//!   SETTINGS_MAX_HEADER_LIST_SIZE. Past it, or past the CONTINUATION frames such a block needs, the
//!   connection fails as "too large", every stream on it with it;
//! - frames are at most 16 KiB (the default our SETTINGS keep), read into one fixed buffer;
//! - DATA is counted, never kept; a `text/event-stream` answer's DATA, for a caller that watches
//!   streams (`StreamWatch`), goes through the event parser as it arrives (one event at most kept,
//!   `sse::MAX_EVENT`), its events and a model's tokens handed to the stream's task with the time
//!   their frame was read;
//! - what we owe the server (PING and SETTINGS acknowledgements) is at most `MAX_OWED` frames unsent:
//!   a server that sends them without reading ours (CVE-2019-9512 and -9515) fails the connection,
//!   as nghttp2's limit of 1,000 queued control frames does, instead of growing our write buffer.
//!
//! Still the whole protocol where a server can use it: CONTINUATION, padding, priority fields,
//! informational (1xx) responses and trailers, the server's SETTINGS (concurrent streams, initial
//! window, frame size), flow control of request bodies, PING, RST_STREAM and GOAWAY. Streams the
//! server refused unprocessed (above its GOAWAY's last stream id, RFC 9113 6.8, or reset with
//! REFUSED_STREAM, 8.7), and idempotent requests left unanswered when a connection closed after its
//! GOAWAY (see `Ended::Unanswered`), go again on a new connection instead of counting as failures.

use crate::http::h1::StreamWatch;
use crate::http::sse::{self, SseParser};
use crate::http::tokens::{self, Tokens};
use crate::http::{opening, TRIES};
use crate::net::{classify_io, Connector, Stream};
use crate::stats::{Failure, FailureKind};
use bytes::{Buf, Bytes};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const RST_STREAM: u8 = 0x3;
const SETTINGS: u8 = 0x4;
const PUSH_PROMISE: u8 = 0x5;
const PING: u8 = 0x6;
const GOAWAY: u8 = 0x7;
const WINDOW_UPDATE: u8 = 0x8;
const CONTINUATION: u8 = 0x9;

const END_STREAM: u8 = 0x1;
const ACK: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
const PRIORITY: u8 = 0x20;
/// Error codes (RFC 9113 7) this client acts on or sends.
const REFUSED_STREAM: u32 = 0x7;
const CANCEL: u32 = 0x8;

/// The largest frame we accept: the default, which our SETTINGS leave alone.
const MAX_FRAME: usize = 16_384;
/// Our stream and connection receive windows: the largest HTTP/2 allows.
const WINDOW: u32 = (1 << 31) - 1;
/// A window is topped up once this much of it is used: one WINDOW_UPDATE a gigabyte.
const TOP_UP: u64 = 1 << 30;
/// Stream ids are odd and below 2^31: a connection that reaches this one takes no more streams.
const LAST_ID: u32 = (1 << 31) - 1;
/// The largest response header block we keep while its CONTINUATION frames come: Chromium's limit
/// on a header list (256 KiB; nginx's default `http2_max_header_size` was 16 KiB, the h2 crate's
/// default 16 MiB). With our HPACK table of 0 bytes a block is no smaller than the fields it carries
/// but for Huffman coding (at most 8/5 shorter), so no server within Chromium's limit is refused.
pub const MAX_HEADER_BLOCK: usize = 256 * 1024;
/// The most CONTINUATION frames one header block may take: as many as `MAX_HEADER_BLOCK` needs in
/// full frames, and a quarter more for frames not filled (the h2 crate's rule). Empty frames would
/// otherwise keep a stream waiting, without a byte to count, until its timeout.
pub const MAX_CONTINUATIONS: usize = MAX_HEADER_BLOCK / MAX_FRAME * 5 / 4;
/// The most acknowledgements (PING, SETTINGS) queued unsent at once: nghttp2's limit on its queue of
/// control frames (1,000).
const MAX_OWED: usize = 1000;

/// `:status` values of HPACK's static table, entries 8 to 14.
const STATIC_STATUS: [u16; 7] = [200, 204, 206, 304, 400, 404, 500];
/// HPACK's static table has 61 entries; with no dynamic table an index above is an error.
const STATIC_LEN: u64 = 61;

// ---- HPACK, as much as a benchmark needs -----------------------------------------------------

fn put_int(out: &mut Vec<u8>, first: u8, prefix: u32, mut value: u64) {
    let max = (1u64 << prefix) - 1;
    if value < max {
        out.push(first | value as u8);
        return;
    }
    out.push(first | max as u8);
    value -= max;
    while value >= 128 {
        out.push((value % 128) as u8 | 0x80);
        value /= 128;
    }
    out.push(value as u8);
}

fn put_string(out: &mut Vec<u8>, s: &[u8]) {
    put_int(out, 0x00, 7, s.len() as u64); // not Huffman-coded: encoded once per run, size is moot
    out.extend_from_slice(s);
}

/// A literal field: the name by its static index, or spelled out (index 0). `indexing`: with
/// incremental indexing (the server's decoder adds it to its dynamic table), else without.
fn put_literal(out: &mut Vec<u8>, indexing: bool, name_index: u64, name: &[u8], value: &[u8]) {
    match indexing {
        true => put_int(out, 0x40, 6, name_index),
        false => put_int(out, 0x00, 4, name_index),
    }
    if name_index == 0 {
        put_string(out, name);
    }
    put_string(out, value);
}

/// Static-table names a request's headers often use (RFC 7541 appendix A).
const STATIC_NAMES: [(&str, u64); 10] = [
    ("accept", 19),
    ("accept-encoding", 16),
    ("accept-language", 17),
    ("authorization", 23),
    ("cache-control", 24),
    ("content-length", 28),
    ("content-type", 31),
    ("cookie", 32),
    ("user-agent", 58),
    ("referer", 51),
];

/// A request's HPACK header blocks, encoded once per run: every request of a bench is the same, so
/// after the first on a connection has put its fields in the server's dynamic table, the others
/// name them by index (a GET of `/` with squall's two default headers: 6 bytes instead of 58).
#[derive(Clone, Debug)]
pub struct Head {
    /// Every field spelled out without indexing: for a server whose table cannot hold them.
    literal: Vec<u8>,
    /// The first request on a connection: the same fields, each added to the dynamic table.
    indexing: Vec<u8>,
    /// Every later one: indexed references to those entries.
    indexed: Vec<u8>,
    /// The entries' size in the server's table (RFC 7541 4.1: name, value and 32 bytes each).
    table: usize,
    /// The method is idempotent (RFC 9110 9.2.2): the request may go again if its answer never came.
    idempotent: bool,
}

/// A request field: the static index of the whole field if it has one, the static index of its
/// name (0: none), the name, the value.
type Field<'a> = (Option<u8>, u64, &'a [u8], &'a [u8]);

/// The HPACK blocks of a request: pseudo-headers from the method and URI, then the template's
/// headers (already lowercased, without the connection headers HTTP/2 forbids).
pub fn encode_head(req: &http::Request<()>) -> Head {
    let mut fields: Vec<Field> = Vec::new();
    let method = req.method().as_str();
    fields.push(match method {
        "GET" => (Some(2), 2, b":method", b"GET"),
        "POST" => (Some(3), 2, b":method", b"POST"),
        m => (None, 2, b":method", m.as_bytes()),
    });
    fields.push(match req.uri().scheme_str() {
        Some("https") => (Some(7), 6, b":scheme", b"https"),
        _ => (Some(6), 6, b":scheme", b"http"),
    });
    if let Some(a) = req.uri().authority() {
        fields.push((None, 1, b":authority", a.as_str().as_bytes()));
    }
    fields.push(match req.uri().path_and_query().map_or("/", |p| p.as_str()) {
        "/" => (Some(4), 4, b":path", b"/"),
        p => (None, 4, b":path", p.as_bytes()),
    });
    for (name, value) in req.headers() {
        let index = STATIC_NAMES.iter().find(|(n, _)| *n == name.as_str()).map_or(0, |(_, i)| *i);
        fields.push((None, index, name.as_str().as_bytes(), value.as_bytes()));
    }
    let entries: Vec<usize> = (0..fields.len()).filter(|&i| fields[i].0.is_none()).collect();
    let idempotent = ["GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"].contains(&method);
    let mut head = Head { literal: Vec::new(), indexing: Vec::new(), indexed: Vec::new(), table: 0, idempotent };
    for (i, &(whole, name_index, name, value)) in fields.iter().enumerate() {
        if let Some(index) = whole {
            for block in [&mut head.literal, &mut head.indexing, &mut head.indexed] {
                block.push(0x80 | index);
            }
            continue;
        }
        put_literal(&mut head.literal, false, name_index, name, value);
        put_literal(&mut head.indexing, true, name_index, name, value);
        // The entry added last is 62; the first of n is 61 + n.
        let added_after = entries.iter().filter(|&&j| j > i).count() as u64;
        put_int(&mut head.indexed, 0x80, 7, 62 + added_after);
        head.table += 32 + name.len() + value.len();
    }
    head
}

fn take_int(block: &mut &[u8], prefix: u32) -> Result<u64, String> {
    let max = (1u64 << prefix) - 1;
    let (&first, rest) = block.split_first().ok_or("truncated HPACK integer")?;
    *block = rest;
    let mut value = (first as u64) & max;
    if value < max {
        return Ok(value);
    }
    for shift in (0..56).step_by(7) {
        let (&b, rest) = block.split_first().ok_or("truncated HPACK integer")?;
        *block = rest;
        value += ((b & 0x7f) as u64) << shift;
        if b & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err("HPACK integer too large".into())
}

/// A string's bytes as sent, and whether they are Huffman-coded; nothing is decoded.
fn take_string<'a>(block: &mut &'a [u8]) -> Result<(&'a [u8], bool), String> {
    let huffman = block.first().ok_or("truncated HPACK string")? & 0x80 != 0;
    let len = take_int(block, 7)? as usize;
    if len > block.len() {
        return Err("truncated HPACK string".into());
    }
    let (s, rest) = block.split_at(len);
    *block = rest;
    Ok((s, huffman))
}

fn decoded(s: (&[u8], bool)) -> Result<Vec<u8>, String> {
    match s {
        (raw, false) => Ok(raw.to_vec()),
        (coded, true) => loona_hpack::huffman::HuffmanDecoder::new()
            .decode(coded)
            .map_err(|e| format!("bad Huffman code in a header: {e:?}")),
    }
}

/// The `:status` of a response header block (None for a block without one: trailers). Every field
/// is walked, to find the block malformed wherever it is; only a `:status` spelled out as a literal
/// (never the case for 200 from a server using the static table) is decoded.
pub fn status_of(block: &[u8]) -> Result<Option<u16>, String> {
    head_of(block, false).map(|(status, _)| status)
}

/// A header's value as sent: its bytes, and whether they are Huffman-coded.
type Raw<'a> = (&'a [u8], bool);

/// `status_of`, and the block's `content-type` value as sent, if it has one (looked for only when
/// `content_type`; not decoded: see `State::event_stream`).
fn head_of(mut block: &[u8], content_type: bool) -> Result<(Option<u16>, Option<Raw<'_>>), String> {
    let mut status = None;
    let mut type_value = None;
    while let Some(&first) = block.first() {
        if first & 0x80 != 0 {
            match take_int(&mut block, 7)? {
                i @ 8..=14 => status = Some(STATIC_STATUS[i as usize - 8]),
                1..=STATIC_LEN => {}
                i => return Err(format!("HPACK index {i} outside the static table (our dynamic table is 0 bytes)")),
            }
            continue;
        }
        if first & 0xe0 == 0x20 {
            match take_int(&mut block, 5)? {
                0 => continue,
                n => return Err(format!("HPACK dynamic table resized to {n} bytes (we allow 0)")),
            }
        }
        // A literal: with incremental indexing (6-bit prefix; with a 0-byte table it indexes
        // nothing), without indexing or never indexed (4-bit prefix).
        let name_index = take_int(&mut block, if first & 0x40 != 0 { 6 } else { 4 })?;
        let (is_status, is_type) = match name_index {
            0 => {
                let name = decoded(take_string(&mut block)?)?;
                (name == b":status", content_type && name == b"content-type")
            }
            8..=14 => (true, false),
            31 => (false, content_type), // content-type
            1..=STATIC_LEN => (false, false),
            i => return Err(format!("HPACK index {i} outside the static table (our dynamic table is 0 bytes)")),
        };
        let value = take_string(&mut block)?;
        if is_type {
            type_value = Some(value);
        }
        if is_status {
            let v = decoded(value)?;
            let code = std::str::from_utf8(&v).ok().filter(|s| s.len() == 3).and_then(|s| s.parse().ok());
            status = Some(code.ok_or_else(|| format!("bad :status {:?}", String::from_utf8_lossy(&v)))?);
        }
    }
    Ok((status, type_value))
}

// ---- frames ----------------------------------------------------------------------------------

fn put_frame_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    let len = len as u32;
    out.extend_from_slice(&[(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags]);
    out.extend_from_slice(&(stream & LAST_ID).to_be_bytes());
}

fn put_window_update(out: &mut Vec<u8>, stream: u32, increment: u64) {
    put_frame_head(out, 4, WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&(increment as u32).to_be_bytes());
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// A connection error: the driver ends the connection, and every stream on it fails so.
#[derive(Debug)]
enum ConnError {
    /// The server broke the protocol.
    Protocol(String),
    /// The server sent more than we keep (see the module's bounds).
    TooLarge(String),
}

impl From<&str> for ConnError {
    fn from(m: &str) -> ConnError {
        ConnError::Protocol(m.into())
    }
}

impl From<String> for ConnError {
    fn from(m: String) -> ConnError {
        ConnError::Protocol(m)
    }
}

impl From<ConnError> for Failure {
    fn from(e: ConnError) -> Failure {
        match e {
            ConnError::Protocol(m) => Failure::new(FailureKind::Protocol, m),
            ConnError::TooLarge(m) => Failure::new(FailureKind::TooLarge, m),
        }
    }
}

/// How a stream ended short of a response.
#[derive(Clone, Debug)]
enum Ended {
    /// The connection broke (or spoke wrongly): every stream on it ends so.
    Broken(Failure),
    /// The server reset this stream.
    Reset(Failure),
    /// Never processed, by the server's word: above the last stream id of its GOAWAY, or reset with
    /// REFUSED_STREAM (RFC 9113 8.7), which one says. It can go again.
    Refused(&'static str),
    /// The connection closed after the server's GOAWAY before any of this stream's answer came: at
    /// or below the GOAWAY's last stream id, so it may have been processed, or not. nginx 1.22 left
    /// 36 of 1,000 requests so (`keepalive_requests 50` with `http2_max_concurrent_streams 4`, 10
    /// streams a connection), and its access log showed them unserved. An idempotent request goes
    /// again, as geventhttpclient and browsers retry one; any other counts as failed.
    Unanswered(Failure),
}

/// One stream in flight.
struct Slot {
    id: u32,
    status: u16,
    body_bytes: u64,
    /// Its frames' bytes as they came (HEADERS, CONTINUATION, DATA: header and payload): what the
    /// summary's "received" counts, as an HTTP/1.1 response's head, framing and body are.
    wire_bytes: u64,
    /// Received since this stream's window was last topped up.
    used: u64,
    /// The request body still to send, and what the server's window for it allows.
    body: Bytes,
    send_window: i64,
    done: Option<Result<(), Ended>>,
    waker: Option<Waker>,
    /// Whether its caller watches event streams, and the event stream being read, once its head
    /// said so.
    watching: bool,
    sse: Option<Box<SlotStream>>,
}

/// An event stream read on a stream: what the driver parsed that its task has not taken yet.
#[derive(Default)]
struct SlotStream {
    parser: SseParser,
    /// When its head was read, until the task tells its watch.
    opened: Option<Instant>,
    /// Events and tokens parsed since the task last took them, and when the last frame came.
    events: u64,
    tokens: Tokens,
    at: Option<Instant>,
}

/// A connection's state, shared by its driver task and the streams on it.
struct State {
    /// Frames to write; the driver writes them at its next turn.
    out: Vec<u8>,
    driver: Option<Waker>,
    streams: Vec<Slot>,
    /// Streams waiting for the server's concurrency limit to let them open.
    waiting: VecDeque<Waker>,
    next_id: u32,
    max_streams: usize,
    /// The server's initial stream window, its connection window for us and its largest frame.
    initial_window: i64,
    send_window: i64,
    max_frame: usize,
    /// Received since the connection's window was last topped up.
    used: u64,
    /// A header block still waiting for its CONTINUATION frames: stream, bytes, END_STREAM, and
    /// the CONTINUATION frames so far.
    continuing: Option<(u32, Vec<u8>, bool, usize)>,
    /// Acknowledgements queued in `out` since it was last written whole (see `MAX_OWED`).
    owed: usize,
    broken: Option<Failure>,
    /// No new stream goes on it (a stream was abandoned on it, or the server sent GOAWAY).
    retired: bool,
    /// The server sent GOAWAY.
    goaway: bool,
    /// The size of our fields in the server's HPACK dynamic table (0: not there; see `Head`), the
    /// table size we may use (4096, RFC 7541, until the server's SETTINGS lower it), and a size update
    /// owed at the start of our next header block after such a change (RFC 7541 4.2).
    held: usize,
    table_max: usize,
    size_update: Option<usize>,
    /// The last `content-type` value read as sent, and whether it said `text/event-stream`: a server
    /// sends the same bytes each time, so a memcmp instead of a Huffman decode a response.
    last_type: Option<(Vec<u8>, bool, bool)>,
}

impl State {
    fn new() -> State {
        let mut out = Vec::with_capacity(4096);
        out.extend_from_slice(PREFACE);
        // Table size, push, window, header list size.
        let settings: [(u16, u32); 4] = [(0x1, 0), (0x2, 0), (0x4, WINDOW), (0x6, MAX_HEADER_BLOCK as u32)];
        put_frame_head(&mut out, 6 * settings.len(), SETTINGS, 0, 0);
        for (id, value) in settings {
            out.extend_from_slice(&id.to_be_bytes());
            out.extend_from_slice(&value.to_be_bytes());
        }
        put_window_update(&mut out, 0, (WINDOW - 65_535) as u64);
        State {
            out,
            driver: None,
            streams: Vec::new(),
            waiting: VecDeque::new(),
            next_id: 1,
            max_streams: usize::MAX, // until the server's SETTINGS say otherwise
            initial_window: 65_535,
            send_window: 65_535,
            max_frame: MAX_FRAME,
            used: 0,
            continuing: None,
            owed: 0,
            broken: None,
            retired: false,
            goaway: false,
            held: 0,
            table_max: 4096,
            size_update: None,
            last_type: None,
        }
    }

    fn wake_driver(&mut self) {
        if let Some(w) = self.driver.take() {
            w.wake();
        }
    }

    fn wake_one_waiting(&mut self) {
        if let Some(w) = self.waiting.pop_front() {
            w.wake();
        }
    }

    /// Counts one more acknowledgement queued for the server (see `MAX_OWED`).
    fn owe(&mut self) -> Result<(), ConnError> {
        self.owed += 1;
        if self.owed > MAX_OWED {
            return Err(ConnError::Protocol(format!("PING or SETTINGS flood: {MAX_OWED} acknowledgements unread")));
        }
        Ok(())
    }

    fn slot(&mut self, id: u32) -> Option<&mut Slot> {
        // A linear scan: a connection carries a handful of streams (--h2-streams, 10 by default).
        self.streams.iter_mut().find(|s| s.id == id)
    }

    /// A frame of `len` bytes of payload came for stream `id` (`Slot::wire_bytes`).
    fn received(&mut self, id: u32, len: usize) {
        if let Some(s) = self.slot(id) {
            s.wire_bytes += 9 + len as u64;
        }
    }

    fn end(&mut self, id: u32, how: Result<(), Ended>) {
        if let Some(s) = self.slot(id) {
            if s.done.is_none() {
                s.done = Some(how);
                if let Some(w) = s.waker.take() {
                    w.wake();
                }
            }
        }
    }

    /// The connection is over: every stream still running ends with `failure`.
    fn break_all(&mut self, failure: Failure) {
        let ids: Vec<(u32, bool)> =
            self.streams.iter().map(|s| (s.id, self.goaway && s.status == 0 && s.body_bytes == 0)).collect();
        for (id, unanswered) in ids {
            let f = failure.clone();
            self.end(id, Err(if unanswered { Ended::Unanswered(f) } else { Ended::Broken(f) }));
        }
        self.broken.get_or_insert(failure);
        self.waiting.drain(..).for_each(Waker::wake);
    }

    /// Sends what request bodies the windows allow.
    fn pump(&mut self) {
        let (out, max_frame) = (&mut self.out, self.max_frame);
        for s in self.streams.iter_mut().filter(|s| !s.body.is_empty()) {
            while !s.body.is_empty() {
                let n = (s.body.len() as i64).min(self.send_window).min(s.send_window).min(max_frame as i64);
                if n <= 0 {
                    break;
                }
                let last = n as usize == s.body.len();
                put_frame_head(out, n as usize, DATA, if last { END_STREAM } else { 0 }, s.id);
                out.extend_from_slice(&s.body[..n as usize]);
                s.body.advance(n as usize);
                self.send_window -= n;
                s.send_window -= n;
            }
        }
    }

    /// Opens a stream: its HEADERS (and CONTINUATIONs, for a block larger than a frame) and as much
    /// of its body as the windows allow.
    fn open(&mut self, head: &Head, body: &Bytes, watching: bool) -> u32 {
        let id = self.next_id;
        self.next_id += 2;
        if self.next_id > LAST_ID {
            self.retired = true;
        }
        let block = if self.held > 0 {
            &head.indexed
        } else if head.table <= self.table_max {
            self.held = head.table;
            &head.indexing
        } else {
            &head.literal
        };
        let mut prefixed;
        let mut head = &block[..];
        if let Some(size) = self.size_update.take() {
            prefixed = Vec::with_capacity(block.len() + 4);
            put_int(&mut prefixed, 0x20, 5, size as u64);
            prefixed.extend_from_slice(block);
            head = &prefixed[..];
        }
        let end = if body.is_empty() { END_STREAM } else { 0 };
        let mut chunks = head.chunks(self.max_frame).peekable();
        let mut kind = HEADERS;
        let mut flags = end;
        // Never empty: `encode_head` always writes :method, :scheme and :path.
        while let Some(chunk) = chunks.next() {
            let last = chunks.peek().is_none();
            put_frame_head(&mut self.out, chunk.len(), kind, flags | if last { END_HEADERS } else { 0 }, id);
            self.out.extend_from_slice(chunk);
            (kind, flags) = (CONTINUATION, 0);
        }
        self.streams.push(Slot {
            id,
            status: 0,
            body_bytes: 0,
            wire_bytes: 0,
            used: 0,
            body: body.clone(),
            send_window: self.initial_window,
            done: None,
            waker: None,
            watching,
            sse: None,
        });
        self.pump();
        self.wake_driver();
        id
    }

    /// A whole header block arrived on `id`.
    fn headers(&mut self, id: u32, block: &[u8], end_stream: bool) -> Result<(), ConnError> {
        let watching = self.slot(id).is_some_and(|s| s.watching && s.status == 0);
        let (status, type_value) = head_of(block, watching)?; // decoded even for a stream we gave up on
        let event_stream = match type_value {
            Some(raw) if status.is_some_and(sse::status_streams) => self.event_stream(raw)?,
            _ => false,
        };
        let Some(s) = self.slot(id) else { return Ok(()) };
        match status {
            Some(100..=199) if s.status == 0 => {} // informational: the final answer follows
            Some(code) if s.status == 0 => {
                s.status = code;
                if event_stream && !end_stream {
                    s.sse = Some(Box::new(SlotStream { opened: Some(Instant::now()), ..SlotStream::default() }));
                    if let Some(w) = s.waker.take() {
                        w.wake();
                    }
                }
            }
            None if s.status != 0 => {} // trailers
            _ => {
                let f = Failure::new(FailureKind::Protocol, "a header block without one :status");
                self.end(id, Err(Ended::Reset(f)));
                return Ok(());
            }
        }
        if end_stream {
            self.finish(id);
        }
        Ok(())
    }

    /// Whether a `content-type` value (as sent) says `text/event-stream`.
    fn event_stream(&mut self, (bytes, huffman): Raw<'_>) -> Result<bool, String> {
        if let Some((last, h, verdict)) = &self.last_type {
            if *h == huffman && last[..] == *bytes {
                return Ok(*verdict);
            }
        }
        let verdict = sse::is_event_stream(&decoded((bytes, huffman))?);
        self.last_type = Some((bytes.to_vec(), huffman, verdict));
        Ok(verdict)
    }

    fn finish(&mut self, id: u32) {
        let final_status = self.slot(id).map(|s| s.status);
        if final_status == Some(0) {
            let f = Failure::new(FailureKind::Protocol, "stream ended without a response");
            self.end(id, Err(Ended::Reset(f)));
        } else {
            self.end(id, Ok(()));
        }
    }

    /// Handles one frame. An error is a connection error: the driver ends the connection.
    fn frame(&mut self, kind: u8, flags: u8, id: u32, payload: &[u8]) -> Result<(), ConnError> {
        if let Some((cid, ..)) = &self.continuing {
            if kind != CONTINUATION || id != *cid {
                return Err("a header block interrupted before its END_HEADERS".into());
            }
        }
        match kind {
            DATA => {
                let data = unpad(flags, payload)?;
                self.used += payload.len() as u64;
                if self.used >= TOP_UP {
                    put_window_update(&mut self.out, 0, std::mem::take(&mut self.used));
                }
                let mut top_up = None;
                let mut too_large = None;
                if let Some(s) = self.slot(id) {
                    s.body_bytes += data.len() as u64;
                    s.wire_bytes += 9 + payload.len() as u64;
                    s.used += payload.len() as u64;
                    if s.used >= TOP_UP && flags & END_STREAM == 0 {
                        top_up = Some(std::mem::take(&mut s.used));
                    }
                    if let Some(st) = s.sse.as_deref_mut().filter(|_| !data.is_empty() && s.done.is_none()) {
                        let mut t = Tokens::default();
                        match st.parser.feed(data, |e| tokens::read(&mut t, e.data)) {
                            Ok(n) => {
                                st.events += n;
                                st.tokens.chunks += t.chunks;
                                st.tokens.usage = t.usage.or(st.tokens.usage);
                                st.at = Some(Instant::now());
                                if let Some(w) = s.waker.take() {
                                    w.wake();
                                }
                            }
                            Err(f) => too_large = Some(f),
                        }
                    }
                }
                if let Some(n) = top_up {
                    put_window_update(&mut self.out, id, n);
                }
                if let Some(f) = too_large {
                    // The stream is given up: the server told to stop it, the connection serves on.
                    put_frame_head(&mut self.out, 4, RST_STREAM, 0, id);
                    self.out.extend_from_slice(&CANCEL.to_be_bytes());
                    self.end(id, Err(Ended::Reset(f)));
                    return Ok(());
                }
                if flags & END_STREAM != 0 {
                    self.finish(id);
                }
            }
            HEADERS => {
                self.received(id, payload.len());
                let mut block = unpad(flags, payload)?;
                if flags & PRIORITY != 0 {
                    block = block.get(5..).ok_or("HEADERS too short for its priority")?;
                }
                if flags & END_HEADERS != 0 {
                    self.headers(id, block, flags & END_STREAM != 0)?;
                } else {
                    self.continuing = Some((id, block.to_vec(), flags & END_STREAM != 0, 0));
                }
            }
            CONTINUATION => {
                self.received(id, payload.len());
                let (cid, mut block, end, frames) = self.continuing.take().ok_or("CONTINUATION without HEADERS")?;
                if block.len() + payload.len() > MAX_HEADER_BLOCK {
                    return Err(ConnError::TooLarge(format!(
                        "response header block above {} KiB (HTTP/2 CONTINUATION frames past it)",
                        MAX_HEADER_BLOCK / 1024
                    )));
                }
                if frames >= MAX_CONTINUATIONS && flags & END_HEADERS == 0 {
                    return Err(ConnError::TooLarge(format!(
                        "response header block in more than {MAX_CONTINUATIONS} HTTP/2 CONTINUATION frames"
                    )));
                }
                block.extend_from_slice(payload);
                if flags & END_HEADERS != 0 {
                    self.headers(cid, &block, end)?;
                } else {
                    self.continuing = Some((cid, block, end, frames + 1));
                }
            }
            RST_STREAM => {
                let code = be32(payload.get(..4).ok_or("short RST_STREAM")?);
                if code == REFUSED_STREAM {
                    self.end(id, Err(Ended::Refused("with REFUSED_STREAM")));
                } else {
                    let f =
                        Failure::new(FailureKind::Protocol, format!("stream reset by the server ({})", reason(code)));
                    self.end(id, Err(Ended::Reset(f)));
                }
            }
            SETTINGS if flags & ACK == 0 => {
                if !payload.len().is_multiple_of(6) {
                    return Err("SETTINGS of a length not a multiple of 6".into());
                }
                for s in payload.chunks(6) {
                    let value = be32(&s[2..]);
                    match u16::from_be_bytes([s[0], s[1]]) {
                        // The server's decoder allows a smaller table: ours shrinks to it, said in
                        // our next block; fields that no longer fit are spelled out again.
                        0x1 if (value as usize) < self.table_max => {
                            self.table_max = value as usize;
                            self.size_update = Some(value as usize);
                            if self.held > self.table_max {
                                self.held = 0;
                            }
                        }
                        0x3 => self.max_streams = value as usize,
                        0x4 => {
                            let delta = value as i64 - self.initial_window;
                            self.initial_window = value as i64;
                            self.streams.iter_mut().for_each(|s| s.send_window += delta);
                        }
                        0x5 => self.max_frame = (value as usize).clamp(MAX_FRAME, (1 << 24) - 1),
                        _ => {}
                    }
                }
                self.owe()?;
                put_frame_head(&mut self.out, 0, SETTINGS, ACK, 0);
                self.pump();
                let room = self.max_streams.saturating_sub(self.streams.len());
                for _ in 0..room.min(self.waiting.len()) {
                    self.wake_one_waiting();
                }
            }
            PING if flags & ACK == 0 => {
                self.owe()?;
                put_frame_head(&mut self.out, 8, PING, ACK, 0);
                self.out.extend_from_slice(payload.get(..8).ok_or("short PING")?);
            }
            GOAWAY => {
                let last = be32(payload.get(..4).ok_or("short GOAWAY")?) & LAST_ID;
                (self.retired, self.goaway) = (true, true);
                let refused: Vec<u32> = self.streams.iter().filter(|s| s.id > last).map(|s| s.id).collect();
                for id in refused {
                    self.end(id, Err(Ended::Refused("with GOAWAY")));
                }
                self.waiting.drain(..).for_each(Waker::wake);
            }
            WINDOW_UPDATE => {
                let increment = (be32(payload.get(..4).ok_or("short WINDOW_UPDATE")?) & LAST_ID) as i64;
                if id == 0 {
                    self.send_window += increment;
                } else if let Some(s) = self.slot(id) {
                    s.send_window += increment;
                }
                self.pump();
            }
            PUSH_PROMISE => return Err("PUSH_PROMISE, though our SETTINGS disable push".into()),
            _ => {} // PRIORITY, acknowledgements, extension frames: nothing to do
        }
        Ok(())
    }
}

fn unpad(flags: u8, payload: &[u8]) -> Result<&[u8], String> {
    if flags & PADDED == 0 {
        return Ok(payload);
    }
    let (&pad, rest) = payload.split_first().ok_or("padded frame without its pad length")?;
    rest.get(..rest.len().checked_sub(pad as usize).ok_or("padding longer than its frame")?)
        .ok_or_else(|| "padding longer than its frame".into())
}

/// RFC 9113's name of an error code.
fn reason(code: u32) -> String {
    const NAMES: [&str; 14] = [
        "NO_ERROR",
        "PROTOCOL_ERROR",
        "INTERNAL_ERROR",
        "FLOW_CONTROL_ERROR",
        "SETTINGS_TIMEOUT",
        "STREAM_CLOSED",
        "FRAME_SIZE_ERROR",
        "REFUSED_STREAM",
        "CANCEL",
        "COMPRESSION_ERROR",
        "CONNECT_ERROR",
        "ENHANCE_YOUR_CALM",
        "INADEQUATE_SECURITY",
        "HTTP_1_1_REQUIRED",
    ];
    NAMES.get(code as usize).map_or_else(|| format!("error code {code}"), |n| n.to_string())
}

/// One connection: its state, shared with the streams on it.
struct Conn {
    state: RefCell<State>,
}

/// The task that owns a connection's socket: it writes what the streams queued and reads frames,
/// until the connection breaks or, retired, has no stream left.
struct Driver {
    conn: Rc<Conn>,
    io: Stream,
    buf: Vec<u8>,
    /// Bytes of `buf` read and not yet parsed.
    filled: usize,
    written: usize,
    flushing: bool,
}

impl Driver {
    /// Parses the whole frames read so far.
    fn parse(&mut self, st: &mut State) -> Result<(), ConnError> {
        let mut at = 0;
        while self.filled - at >= 9 {
            let h = &self.buf[at..at + 9];
            let len = (h[0] as usize) << 16 | (h[1] as usize) << 8 | h[2] as usize;
            if len > MAX_FRAME {
                return Err(ConnError::TooLarge(format!(
                    "HTTP/2 frame of {len} bytes, above the {MAX_FRAME} we allow"
                )));
            }
            if self.filled - at < 9 + len {
                break;
            }
            let (kind, flags, id) = (h[3], h[4], be32(&h[5..9]) & LAST_ID);
            st.frame(kind, flags, id, &self.buf[at + 9..at + 9 + len])?;
            at += 9 + len;
        }
        self.buf.copy_within(at..self.filled, 0);
        self.filled -= at;
        Ok(())
    }

    /// One turn: writes, then reads; false when it could do neither.
    fn turn(&mut self, cx: &mut Context<'_>, st: &mut State) -> Poll<Result<bool, Failure>> {
        let mut progressed = false;
        while self.written < st.out.len() {
            match Pin::new(&mut self.io).poll_write(cx, &st.out[self.written..]) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(Failure::new(FailureKind::Closed, "mid-request"))),
                Poll::Ready(Ok(n)) => (self.written, progressed, self.flushing) = (self.written + n, true, true),
                Poll::Ready(Err(e)) => return Poll::Ready(Err(classify_io(&e, "mid-request"))),
                Poll::Pending => break,
            }
        }
        if self.written == st.out.len() {
            st.out.clear();
            (self.written, st.owed) = (0, 0);
        }
        if self.flushing {
            match Pin::new(&mut self.io).poll_flush(cx) {
                Poll::Ready(Ok(())) => self.flushing = false,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(classify_io(&e, "mid-request"))),
                Poll::Pending => {}
            }
        }
        let mut rb = ReadBuf::new(&mut self.buf[self.filled..]);
        match Pin::new(&mut self.io).poll_read(cx, &mut rb) {
            Poll::Ready(Ok(())) if rb.filled().is_empty() => {
                return Poll::Ready(Err(Failure::new(FailureKind::Closed, "mid-response")));
            }
            Poll::Ready(Ok(())) => {
                self.filled += rb.filled().len();
                progressed = true;
                if let Err(e) = self.parse(st) {
                    return Poll::Ready(Err(e.into()));
                }
            }
            Poll::Ready(Err(e)) => return Poll::Ready(Err(classify_io(&e, "mid-response"))),
            Poll::Pending => {}
        }
        Poll::Ready(Ok(progressed))
    }
}

impl Future for Driver {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let conn = this.conn.clone();
        let mut st = conn.state.borrow_mut();
        loop {
            if st.broken.is_some() || (st.retired && st.streams.is_empty() && st.out.is_empty()) {
                return Poll::Ready(());
            }
            match this.turn(cx, &mut st) {
                Poll::Ready(Ok(true)) => continue,
                Poll::Ready(Ok(false)) | Poll::Pending => {
                    st.driver = Some(cx.waker().clone());
                    return Poll::Pending;
                }
                Poll::Ready(Err(failure)) => {
                    // A connection that ends with nothing in flight (a server closing an idle
                    // connection) fails nothing: the next stream opens a new one.
                    st.break_all(failure);
                    return Poll::Ready(());
                }
            }
        }
    }
}

/// One HTTP/2 connection slot of a bench run, shared by the workers that multiplex over it.
pub struct LeanConn {
    live: RefCell<Option<Rc<Conn>>>,
    connecting: tokio::sync::Mutex<()>,
    index: usize,
}

/// Armed while a stream is in flight: a stream dropped before it ends (its worker cancelled past the
/// timeout, or the run over) is reset, and no new request goes on its connection. A server that
/// stopped answering on one connection would otherwise time out every later request on it, where
/// HTTP/1.1 opens a new connection after a timeout.
struct InFlight<'a> {
    slot: &'a LeanConn,
    conn: &'a Rc<Conn>,
    id: u32,
    armed: bool,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let mut st = self.conn.state.borrow_mut();
        if let Some(i) = st.streams.iter().position(|s| s.id == self.id) {
            let s = st.streams.swap_remove(i);
            if s.done.is_none() {
                put_frame_head(&mut st.out, 4, RST_STREAM, 0, self.id);
                st.out.extend_from_slice(&CANCEL.to_be_bytes());
            }
        }
        st.retired = true;
        st.wake_driver();
        drop(st);
        self.slot.drop_connection(self.conn);
    }
}

/// A response as a bench counts it.
pub struct Answer {
    pub status: u16,
    pub body_bytes: u64,
    /// Its frames' bytes (`Slot::wire_bytes`).
    pub wire_bytes: u64,
}

impl LeanConn {
    pub fn new(index: usize) -> Self {
        LeanConn { live: RefCell::new(None), connecting: tokio::sync::Mutex::new(()), index }
    }

    /// The slot's connection, if it can take a stream.
    fn usable(&self) -> Option<Rc<Conn>> {
        let live = self.live.borrow();
        let conn = live.as_ref()?;
        let st = conn.state.borrow();
        (st.broken.is_none() && !st.retired).then(|| conn.clone())
    }

    fn drop_connection(&self, conn: &Rc<Conn>) {
        let mut live = self.live.borrow_mut();
        if live.as_ref().is_some_and(|c| Rc::ptr_eq(c, conn)) {
            live.take();
        }
    }

    /// Opens the slot's connection (unless another stream did while this one waited for the lock);
    /// reports how long a new connect took.
    async fn connect(&self, connector: &Connector) -> Result<(Rc<Conn>, Option<Duration>), Failure> {
        let _guard = self.connecting.lock().await;
        if let Some(conn) = self.usable() {
            return Ok((conn, None));
        }
        let t0 = Instant::now();
        let io = connector.connect(self.index).await?;
        if connector.tls.is_some() && Connector::alpn(&io).as_deref() != Some(b"h2") {
            return Err(Failure::new(FailureKind::Protocol, "the server did not negotiate HTTP/2"));
        }
        let conn = Rc::new(Conn { state: RefCell::new(State::new()) });
        let buf = vec![0; 4 * (MAX_FRAME + 9)];
        let driver = Driver { conn: conn.clone(), io, buf, filled: 0, written: 0, flushing: false };
        tokio::task::spawn_local(driver);
        *self.live.borrow_mut() = Some(conn.clone());
        Ok((conn, Some(t0.elapsed())))
    }

    /// One request on the slot's connection, opening it first if needed. A request the server
    /// refused unprocessed (GOAWAY) goes again, up to `TRIES` times in all.
    pub async fn exchange<W: StreamWatch>(
        &self,
        connector: &Connector,
        head: &Head,
        body: &Bytes,
        mut on_connect: impl FnMut(Duration),
        connecting: &Cell<bool>,
        watch: &mut W,
    ) -> Result<Answer, Failure> {
        let mut tries = 0;
        loop {
            let conn = match self.usable() {
                Some(conn) => conn,
                None => opening(connecting, &mut on_connect, self.connect(connector)).await?,
            };
            match room(&conn).await {
                Err(f) => {
                    self.drop_connection(&conn);
                    return Err(f);
                }
                Ok(false) => continue, // retired while waiting: the next turn opens another
                Ok(true) => {}
            }
            let id = conn.state.borrow_mut().open(head, body, W::WATCHING);
            let mut in_flight = InFlight { slot: self, conn: &conn, id, armed: true };
            let ended = end_of(&conn, id, watch).await;
            in_flight.armed = false;
            tries += 1;
            match ended {
                Ok(answer) => return Ok(answer),
                // Again on this connection if it still takes streams (refused past the server's
                // concurrency limit, before its SETTINGS said it), else on a new one (GOAWAY).
                Err(Ended::Refused(_)) if tries < TRIES => {}
                Err(Ended::Refused(how)) => {
                    return Err(Failure::new(FailureKind::Closed, format!("{how} (the request was not processed)")));
                }
                Err(Ended::Reset(f)) => return Err(f),
                Err(Ended::Unanswered(_)) if head.idempotent && tries < TRIES => self.drop_connection(&conn),
                Err(Ended::Broken(f) | Ended::Unanswered(f)) => {
                    self.drop_connection(&conn);
                    return Err(f);
                }
            }
        }
    }
}

/// Waits until the server's limit on concurrent streams lets one more open: true, or false if the
/// connection was retired meanwhile (a failure if it broke).
async fn room(conn: &Conn) -> Result<bool, Failure> {
    poll_fn(|cx| {
        let mut st = conn.state.borrow_mut();
        if let Some(f) = &st.broken {
            Poll::Ready(Err(f.clone()))
        } else if st.retired {
            Poll::Ready(Ok(false))
        } else if st.streams.len() < st.max_streams {
            Poll::Ready(Ok(true))
        } else {
            st.waiting.push_back(cx.waker().clone());
            Poll::Pending
        }
    })
    .await
}

/// Waits for stream `id` to end, and takes its slot; tells `watch` of its event stream meanwhile.
async fn end_of(conn: &Conn, id: u32, watch: &mut impl StreamWatch) -> Result<Answer, Ended> {
    poll_fn(|cx| {
        let mut st = conn.state.borrow_mut();
        let i = st.streams.iter().position(|s| s.id == id).expect("a stream in flight keeps its slot");
        if let Some(sse) = st.streams[i].sse.as_deref_mut() {
            let (opened, events, tokens, at) =
                (sse.opened.take(), std::mem::take(&mut sse.events), std::mem::take(&mut sse.tokens), sse.at);
            if let Some(t) = opened {
                watch.opened(t);
            }
            if let (Some(at), true) = (at, events > 0 || tokens != Tokens::default()) {
                watch.progress(at, events, tokens);
            }
        }
        let Some(how) = st.streams[i].done.take() else {
            st.streams[i].waker = Some(cx.waker().clone());
            return Poll::Pending;
        };
        let s = st.streams.swap_remove(i);
        st.wake_one_waiting();
        if st.retired && st.streams.is_empty() {
            st.wake_driver(); // to end
        }
        Poll::Ready(how.map(|()| Answer { status: s.status, body_bytes: s.body_bytes, wire_bytes: s.wire_bytes }))
    })
    .await
}

/// Whether the server at the other end of `io` speaks HTTP/2, asked before a run (`squall bench
/// --http2`'s preflight): over TLS its ALPN choice; over plain TCP (prior knowledge) its answer to the
/// connection preface and an empty SETTINGS, which must begin with its SETTINGS frame. An HTTP/1.1
/// server answers the preface with a 400 (or closes): without this, every request of the run failed
/// as "closed mid-response" or "reset by peer", and the run opened a connection for each. A server
/// that says nothing for `QUIET` (one that sends its SETTINGS only with its first response, as
/// tests/servers/hostile_server.py does) is given the benefit of the doubt.
pub async fn speaks_h2(io: &mut Stream, tls: bool) -> Result<(), String> {
    const QUIET: Duration = Duration::from_secs(1);
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    if tls {
        return match Connector::alpn(io) {
            Some(p) if p == b"h2" => Ok(()),
            Some(p) => Err(format!("it chose {} in TLS (ALPN), not h2", String::from_utf8_lossy(&p))),
            None => Err("it offered no protocol in TLS (ALPN), so not h2".into()),
        };
    }
    let mut hello = PREFACE.to_vec();
    hello.extend_from_slice(&[0, 0, 0, SETTINGS, 0, 0, 0, 0, 0]);
    io.write_all(&hello).await.map_err(|e| format!("the connection failed: {e}"))?;
    // A frame's header (9 bytes), or an HTTP/1.x status line (up to 80 bytes, to say it).
    let mut first = [0u8; 80];
    let mut got = 0;
    while got < 9 || (first.starts_with(b"HTTP/") && !first[..got].contains(&b'\n') && got < first.len()) {
        match tokio::time::timeout(QUIET, io.read(&mut first[got..])).await {
            Err(_) if got == 0 => return Ok(()), // (nothing said yet: not a refusal)
            Err(_) | Ok(Ok(0)) => break,
            Ok(Ok(n)) => got += n,
            Ok(Err(e)) if got == 0 => return Err(format!("it reset the connection ({e})")),
            Ok(Err(_)) => break,
        }
    }
    if got >= 9 && first[3] == SETTINGS {
        return Ok(());
    }
    let seen = &first[..got];
    if seen.starts_with(b"HTTP/") {
        let line = seen.split(|&b| b == b'\r' || b == b'\n').next().unwrap_or_default();
        return Err(format!("it answered as HTTP/1.x ('{}')", String::from_utf8_lossy(line)));
    }
    Err(if got == 0 { "it closed the connection".into() } else { "its first frame was not SETTINGS".into() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(headers: &[(&str, &str)]) -> http::Request<()> {
        let url = url::Url::parse("https://example.com:8443/a/b?c=d").unwrap();
        let h: Vec<(String, String)> = headers.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        crate::http::h2::build_request("POST", &url, &h).unwrap()
    }

    type Fields = Vec<(String, String)>;

    fn text(fields: Vec<(Vec<u8>, Vec<u8>)>) -> Fields {
        fields.into_iter().map(|(k, v)| (String::from_utf8(k).unwrap(), String::from_utf8(v).unwrap())).collect()
    }

    /// Our request blocks, decoded by an independent HPACK decoder (loona-hpack's), one decoder per
    /// connection as a server keeps: the first block adds the fields to its table, the later ones name
    /// them by index, and all decode to the same request.
    #[test]
    fn the_request_blocks_decode_to_the_request() {
        let head = encode_head(&template(&[("X-Long", &"v".repeat(300)), ("Connection", "close")]));
        let fields = text(loona_hpack::Decoder::new().decode(&head.literal).unwrap());
        let get = |k: &str| fields.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        assert_eq!(get(":method").as_deref(), Some("POST"));
        assert_eq!(get(":scheme").as_deref(), Some("https"));
        assert_eq!(get(":authority").as_deref(), Some("example.com:8443"));
        assert_eq!(get(":path").as_deref(), Some("/a/b?c=d"));
        assert_eq!(get("x-long").map(|v| v.len()), Some(300));
        assert!(get("user-agent").is_some_and(|v| v.starts_with("squall/")));
        assert_eq!(get("connection"), None, "HTTP/2 forbids connection headers");
        let mut server = loona_hpack::Decoder::new();
        assert_eq!(text(server.decode(&head.indexing).unwrap()), fields);
        for _ in 0..3 {
            assert_eq!(text(server.decode(&head.indexed).unwrap()), fields);
        }
        let sizes: usize =
            fields.iter().filter(|(n, _)| n != ":method" && n != ":scheme").map(|(n, v)| 32 + n.len() + v.len()).sum();
        assert_eq!(head.table, sizes);
        let plain =
            encode_head(&crate::http::h2::build_request("GET", &url::Url::parse("http://h/").unwrap(), &[]).unwrap());
        assert_eq!(plain.indexed.len(), 6, "{:x?}", plain.indexed); // method, scheme, path, then 3 entries
    }

    fn head() -> Head {
        encode_head(&template(&[]))
    }

    /// A connection's blocks: indexing first, indexed after; a server whose SETTINGS shrink its table
    /// below our fields gets a size update and literals from then on.
    #[test]
    fn blocks_follow_the_servers_table() {
        let (head, mut st, mut server) = (head(), State::new(), loona_hpack::Decoder::new());
        let mut block_of = |st: &mut State| {
            st.out.clear();
            st.open(&head, &Bytes::new(), false);
            let block = st.out[9..].to_vec();
            text(server.decode(&block).unwrap()); // decodes, in order, as the server would
            block
        };
        assert_eq!(block_of(&mut st), head.indexing);
        assert_eq!(block_of(&mut st), head.indexed);
        st.frame(SETTINGS, 0, 0, &[0, 1, 0, 0, 0x10, 0]).unwrap(); // 4096: no change
        assert_eq!(block_of(&mut st), head.indexed);
        st.frame(SETTINGS, 0, 0, &[0, 1, 0, 0, 0, 0]).unwrap(); // no dynamic table
        let mut update = vec![0x20];
        update.extend_from_slice(&head.literal);
        assert_eq!(block_of(&mut st), update);
        assert_eq!(block_of(&mut st), head.literal);
    }

    fn encoded(fields: &[(&[u8], &[u8])]) -> Vec<u8> {
        // loona-hpack's encoder indexes what it sends; its first block uses only the static table
        // and literals (with Huffman coding where shorter), which is what a 0-byte table allows.
        loona_hpack::Encoder::new().encode(fields.iter().copied())
    }

    #[test]
    fn status_is_read_from_any_representation() {
        assert_eq!(status_of(&[0x88]).unwrap(), Some(200)); // static entry 8
        assert_eq!(status_of(&[0x8d]).unwrap(), Some(404)); // static entry 13
        let date: &[u8] = b"Mon, 23 Nov 2026 19:00:00 GMT";
        for code in [200u16, 201, 404, 418, 503, 599] {
            let c = code.to_string();
            let block = encoded(&[(b":status", c.as_bytes()), (b"server", b"nginx"), (b"date", date)]);
            assert_eq!(status_of(&block).unwrap(), Some(code), "{block:x?}");
        }
        // A literal without indexing, name and value spelled out, Huffman-coded "418" (RFC 7541 B).
        let mut block = vec![0x00, 0x07];
        block.extend_from_slice(b":status");
        block.extend_from_slice(&[0x83, 0x68, 0x2f, 0x7f]);
        assert_eq!(status_of(&block).unwrap(), Some(418));
        // A table size update to 0 first, then :status, then trailers have none.
        assert_eq!(status_of(&[0x20, 0x88]).unwrap(), Some(200));
        assert_eq!(status_of(&encoded(&[(b"grpc-status", b"0")])).unwrap(), None);
    }

    #[test]
    fn a_block_that_needs_a_dynamic_table_or_is_cut_short_is_an_error() {
        assert!(status_of(&[0xbe]).is_err()); // index 62: the dynamic table we said is empty
        assert!(status_of(&[0x3f, 0xe1, 0x1f]).is_err()); // resized to 4096
        assert!(status_of(&[0x08, 0x03, b'2']).is_err()); // a value cut short
        assert!(status_of(&[0x08, 0x02, b'2', b'0']).is_err()); // a status of two digits
    }

    /// A watched stream whose head says text/event-stream has its DATA parsed as it comes (events
    /// split across frames; a model's tokens read); an unwatched one, or another type, is only counted.
    #[test]
    fn event_streams_are_parsed_from_data_frames_for_a_watching_caller() {
        let mut st = State::new();
        let (watched, plain, other) = (
            st.open(&head(), &Bytes::new(), true),
            st.open(&head(), &Bytes::new(), false),
            st.open(&head(), &Bytes::new(), true),
        );
        let sse_head = encoded(&[(b":status", b"200"), (b"content-type", b"text/event-stream; charset=utf-8")]);
        st.frame(HEADERS, END_HEADERS, watched, &sse_head).unwrap();
        st.frame(HEADERS, END_HEADERS, plain, &sse_head).unwrap();
        st.frame(HEADERS, END_HEADERS, other, &encoded(&[(b":status", b"200"), (b"content-type", b"text/plain")]))
            .unwrap();
        let chunk = br#"data: {"choices":[{"delta":{"content":"hi"}}]}"#;
        for id in [watched, plain, other] {
            st.frame(DATA, 0, id, b"data: one\n\ndata: t").unwrap();
            st.frame(DATA, 0, id, b"wo\n\n").unwrap();
            st.frame(DATA, 0, id, &[&chunk[..], b"\n\n"].concat()).unwrap();
        }
        fn sse(st: &State, id: u32) -> Option<&SlotStream> {
            st.streams.iter().find(|s| s.id == id).unwrap().sse.as_deref()
        }
        let s = sse(&st, watched).expect("parsed");
        assert_eq!((s.events, s.tokens.chunks, s.opened.is_some(), s.at.is_some()), (3, 1, true, true));
        assert!(sse(&st, plain).is_none() && sse(&st, other).is_none());
        // The same content-type bytes again: read from the cache, same verdict.
        let again = st.open(&head(), &Bytes::new(), true);
        st.frame(HEADERS, END_HEADERS, again, &sse_head).unwrap();
        assert!(sse(&st, again).is_some());
    }

    #[test]
    fn frames_end_streams_and_keep_flow_control() {
        let mut st = State::new();
        st.out.clear();
        let body = Bytes::from(vec![7u8; 100_000]);
        let id = st.open(&head(), &body, false);
        // The default windows let 65,535 bytes go: four full frames and the rest in a fifth.
        let sent: usize = 65_535;
        assert_eq!(st.streams[0].body.len(), 100_000 - sent);
        st.frame(WINDOW_UPDATE, 0, 0, &(1u32 << 20).to_be_bytes()).unwrap();
        assert_eq!(st.streams[0].body.len(), 100_000 - sent, "the stream's own window is still spent");
        st.frame(WINDOW_UPDATE, 0, id, &(1u32 << 20).to_be_bytes()).unwrap();
        assert!(st.streams[0].body.is_empty());
        // 1xx, then the answer in a padded HEADERS and CONTINUATION, data, then trailers end it.
        st.frame(HEADERS, END_HEADERS, id, &encoded(&[(b":status", b"103")])).unwrap();
        st.frame(HEADERS, PADDED, id, &[2, 0x20, 0, 0]).unwrap();
        st.frame(CONTINUATION, END_HEADERS, id, &[0x8d]).unwrap();
        st.frame(DATA, PADDED, id, &[3, b'h', b'i', 0, 0, 0]).unwrap();
        assert!(st.streams[0].done.is_none());
        st.frame(HEADERS, END_HEADERS | END_STREAM, id, &encoded(&[(b"grpc-status", b"0")])).unwrap();
        let s = &st.streams[0];
        assert!(matches!(s.done, Some(Ok(()))));
        assert_eq!((s.status, s.body_bytes), (404, 2));
    }

    /// Issue 26: a header block past 256 KiB, or in more CONTINUATION frames than that needs, ends
    /// the connection as too large; so does a flood of PINGs whose acknowledgements go unread.
    #[test]
    fn header_blocks_and_owed_acknowledgements_are_bounded() {
        let settings = &State::new().out[PREFACE.len()..];
        assert_eq!(&settings[9 + 18..9 + 24], &[0, 6, 0, 4, 0, 0], "SETTINGS_MAX_HEADER_LIST_SIZE 256 KiB");
        let too_large = |r: Result<(), ConnError>| matches!(r, Err(ConnError::TooLarge(_)));
        let mut st = State::new();
        let id = st.open(&head(), &Bytes::new(), false);
        st.frame(HEADERS, 0, id, &[0x88]).unwrap();
        let full = vec![0u8; MAX_FRAME];
        for _ in 0..MAX_HEADER_BLOCK / MAX_FRAME - 1 {
            st.frame(CONTINUATION, 0, id, &full).unwrap();
        }
        assert!(too_large(st.frame(CONTINUATION, 0, id, &full)), "one byte past 256 KiB");
        let mut st = State::new();
        let id = st.open(&head(), &Bytes::new(), false);
        st.frame(HEADERS, 0, id, &[0x88]).unwrap();
        for _ in 0..MAX_CONTINUATIONS {
            st.frame(CONTINUATION, 0, id, &[]).unwrap();
        }
        assert!(too_large(st.frame(CONTINUATION, 0, id, &[])), "empty frames without end");
        // Within both bounds, a block in many frames is whole.
        let mut st = State::new();
        let id = st.open(&head(), &Bytes::new(), false);
        st.frame(HEADERS, END_STREAM, id, &[]).unwrap();
        st.frame(CONTINUATION, 0, id, &[0x88]).unwrap();
        st.frame(CONTINUATION, END_HEADERS, id, &[]).unwrap();
        assert!(matches!(st.streams[0].done, Some(Ok(()))));
        let mut st = State::new();
        for _ in 0..MAX_OWED {
            st.frame(PING, 0, 0, &[0; 8]).unwrap();
        }
        assert!(matches!(st.frame(SETTINGS, 0, 0, &[]), Err(ConnError::Protocol(_))), "acknowledgements unread");
    }

    #[test]
    fn goaway_refuses_the_streams_above_its_last_id_and_settings_are_acknowledged() {
        let mut st = State::new();
        st.out.clear();
        let ids: Vec<u32> = (0..3).map(|_| st.open(&head(), &Bytes::new(), false)).collect();
        assert_eq!(ids, [1, 3, 5]);
        let mut goaway = 3u32.to_be_bytes().to_vec();
        goaway.extend_from_slice(&0u32.to_be_bytes());
        st.frame(GOAWAY, 0, 0, &goaway).unwrap();
        assert!(st.retired);
        assert!(matches!(st.streams[2].done, Some(Err(Ended::Refused("with GOAWAY")))));
        assert!(st.streams[0].done.is_none() && st.streams[1].done.is_none());
        st.out.clear();
        st.frame(SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 100]).unwrap();
        assert_eq!(st.max_streams, 100);
        assert_eq!(st.out, [0, 0, 0, SETTINGS, ACK, 0, 0, 0, 0]);
        st.frame(RST_STREAM, 0, 3, &REFUSED_STREAM.to_be_bytes()).unwrap();
        assert!(matches!(st.streams[1].done, Some(Err(Ended::Refused("with REFUSED_STREAM")))));
        st.break_all(Failure::new(FailureKind::Closed, "mid-response"));
        assert!(matches!(st.streams[0].done, Some(Err(Ended::Unanswered(_)))), "no answer came after GOAWAY");
        let mut st = State::new();
        st.open(&head(), &Bytes::new(), false);
        st.break_all(Failure::new(FailureKind::Closed, "mid-response"));
        assert!(matches!(st.streams[0].done, Some(Err(Ended::Broken(_)))), "no GOAWAY: a broken connection");
        assert!(st.frame(HEADERS, 0, 1, &[0x88]).is_ok());
        assert!(st.frame(DATA, 0, 1, b"x").is_err(), "a header block interrupted");
        assert!(State::new().frame(PUSH_PROMISE, 0, 1, &[0; 4]).is_err());
    }
}
