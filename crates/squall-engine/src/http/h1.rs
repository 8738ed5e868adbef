//! A lean HTTP/1.1 exchange: write the prepared request, parse the response head with `httparse`,
//! then read the body by Content-Length, chunked encoding, or until close.
//!
//! What a server sends is read within bounds, whatever it sends; past one the request fails as
//! "too large" (counted, the connection closed) instead of the buffer growing:
//! - the head at most `MAX_HEAD` (64 KiB) and `MAX_HEADERS` (256) fields: curl takes 300 KiB,
//!   Chromium 256 KiB, nginx's proxy 4-8 KiB; no server we know of sends a 64 KiB head;
//! - a chunk's size line at most `MAX_CHUNK_LINE` (4 KiB: hex digits, then extensions httparse skips
//!   but needs whole), and the trailers at most `MAX_HEAD`, as a head;
//! - a body is counted and dropped as it arrives, unless kept for a script: then at most
//!   `MAX_KEPT_BODY` (64 MiB). A body is never allocated by its announced length;
//! - a `text/event-stream` body, when the caller watches streams (`StreamWatch`), is parsed as it
//!   arrives (`sse`): the parser keeps one event at most, `sse::MAX_EVENT` (1 MiB); the body itself is
//!   counted or kept as any other.

use super::response::{too_large_body, Response, MAX_KEPT_BODY};
use super::sse::{self, SseParser};
use super::tokens::Tokens;
use crate::net::{classify_io, Stamp, Stream};
use crate::stats::{Failure, FailureKind, Phases};
use std::cell::Cell;
use std::io;
use std::rc::Rc;
use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Header slots tried first: enough for nearly every response, and cheap to initialize per parse
/// (the whole array is zeroed each time; 96 slots cost a third of the exchange's user time).
const FEW_HEADERS: usize = 24;
/// The retry when a response has more headers than that.
const MAX_HEADERS: usize = 256;
const INITIAL_BUF: usize = 8 * 1024;
/// The largest response head (or trailer section) read.
pub const MAX_HEAD: usize = 64 * 1024;
/// The largest chunk size line read, its CRLF included: hyper allows 16 KiB of extensions over a
/// whole body; a line is a few hex digits, and its extensions (ignored) have no use we know of in a
/// response.
const MAX_CHUNK_LINE: usize = 4 * 1024;
/// What an exchange saw of where its time went (`stats::timing`), for the caller, who knows when the
/// response ended; the connect and TLS times are the opener's (`Connector::connect_timed`). Handed
/// out through `exchange_keepalive`'s `timing`, not in `Response`: 32 bytes more in it made every
/// response's move out of the exchange a `memcpy` call (callgrind: 2 a request).
#[derive(Clone, Copy, Debug, Default)]
pub struct Timing {
    /// When the request was written.
    pub written: Option<Instant>,
    /// When the response's first bytes were read, if it took more than one read: the clock before the
    /// second read, or the first read's kernel receive time on a stamping connection. A response read
    /// whole in one read has its first byte when it ends.
    pub first_byte: Option<Instant>,
}

impl Timing {
    /// The waiting and receiving of an exchange whose response ended at `end`.
    pub fn phases(&self, end: Instant) -> Phases {
        let first = self.first_byte.map_or(end, |f| f.min(end));
        Phases {
            waiting: self.written.map(|w| first.saturating_duration_since(w)),
            receiving: self.written.map(|_| end.saturating_duration_since(first)),
            ..Phases::default()
        }
    }
}

/// What of a response an exchange keeps beyond its status and sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    /// Nothing (bench): the head is parsed for the body's framing only, the body counted and dropped.
    Nothing,
    /// The Set-Cookie values and a redirect's Location (a script's request whose response nobody
    /// reads: a native user's, script/native.rs); the body is counted and dropped.
    Cookies,
    /// Everything a script may read: the header lines, Set-Cookie, Location and the body.
    All,
}

/// What an exchange tells its caller of an event stream (`text/event-stream`) as it reads it: bench
/// and scripted requests time the events (`stats::streams`); bench also pushes its timeout back while
/// bytes keep coming.
pub trait StreamWatch {
    /// Whether event streams are parsed at all: without it (`NoStreams`) the parser is left out.
    const WATCHING: bool;
    /// A response's head says its body is an event stream; read at `at`.
    fn opened(&mut self, at: Instant);
    /// More of the stream's body arrived at `at` (the clock read right after its read), completing
    /// `events` events, of which `tokens` told of a language model's output (`tokens`).
    fn progress(&mut self, at: Instant, events: u64, tokens: Tokens);
    /// `n` more bytes of the stream's body were read (bench counts those of a stream cut or still open
    /// at the run's end as received: a completed one's are its response's).
    fn read(&mut self, _n: u64) {}
    /// `n` bytes of the stream's response on the wire that are not its body: its head, as it opens, and
    /// its chunked framing (bench counts them received with the body's, as `read`'s).
    fn framing(&mut self, _n: u64) {}
    /// Whether the body's bytes go to `body` as they are read (a script's streamed response,
    /// `H1Conn::read_body`) instead of being kept or counted by the exchange: a constant, so that for
    /// every other watch the branch is compiled out.
    const TAKES_BODY: bool = false;
    /// The body's next bytes, as read (with `TAKES_BODY`); a failure ends the read (a bound passed).
    fn body(&mut self, _bytes: &[u8]) -> Result<(), Failure> {
        Ok(())
    }
}

/// Event streams read as any body.
pub struct NoStreams;

impl StreamWatch for NoStreams {
    const WATCHING: bool = false;
    fn opened(&mut self, _: Instant) {}
    fn progress(&mut self, _: Instant, _: u64, _: Tokens) {}
}

/// An error, and whether the request may be sent again on a fresh connection: a reused keep-alive
/// connection the server had already closed fails before any response byte, and the request never ran.
pub struct ExchangeError {
    pub failure: Failure,
    pub retryable: bool,
}

/// One request over HTTP/1.1 keep-alive: on the connection in `conn`, or on a new one from `open`.
/// A reused connection the server had already closed is replaced and the request sent once more.
/// Afterwards `conn` holds the connection when it may serve the next request (`reuse`, and the
/// server did not close it).
pub async fn exchange_keepalive(
    conn: &mut Option<H1Conn>,
    open: impl AsyncFnMut() -> Result<H1Conn, Failure>,
    request: &[u8],
    head_request: bool,
    keep: Keep,
    reuse: bool,
    timing: &mut Timing,
) -> Result<Response, Failure> {
    exchange_keepalive_watched(conn, open, request, head_request, keep, reuse, timing, &mut NoStreams).await
}

/// `exchange_keepalive`, telling `watch` of an event stream as it is read.
#[allow(clippy::too_many_arguments)]
pub async fn exchange_keepalive_watched<W: StreamWatch>(
    conn: &mut Option<H1Conn>,
    mut open: impl AsyncFnMut() -> Result<H1Conn, Failure>,
    request: &[u8],
    head_request: bool,
    keep: Keep,
    reuse: bool,
    timing: &mut Timing,
    watch: &mut W,
) -> Result<Response, Failure> {
    for _attempt in 0..2 {
        let c = match conn {
            Some(c) => c,
            None => conn.insert(open().await?),
        };
        match c.exchange_watched(request, head_request, keep, watch).await {
            Ok(resp) => {
                *timing = c.timing();
                if resp.close || !reuse {
                    *conn = None;
                }
                return Ok(resp);
            }
            Err(e) => {
                *conn = None;
                if !e.retryable {
                    return Err(e.failure);
                }
            }
        }
    }
    Err(Failure::new(FailureKind::Closed, "before responding"))
}

/// The body of a response whose head `H1Conn::exchange_head` read, still on the connection.
pub struct PendingBody(BodyKind);

impl PendingBody {
    /// The body's length, when its head announced one (Content-Length; 0 for a response without body).
    pub fn length(&self) -> Option<u64> {
        match self.0 {
            BodyKind::Empty => Some(0),
            BodyKind::Length(n) => Some(n),
            _ => None,
        }
    }
}

enum BodyKind {
    Empty,
    Length(u64),
    Chunked,
    UntilClose,
}

pub struct H1Conn {
    io: Stream,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// Body bytes read but not kept, for the current response.
    body_counter: u64,
    /// Exchanges completed on this connection.
    pub served: u64,
    /// Counts the exchanges whose request is sent and whose response is awaited on a stamping
    /// connection, when set: what a scripted run's engine needs to know before it defers reading
    /// (script/mod.rs `poll`).
    pub awaiting: Option<Rc<Cell<usize>>>,
    /// The current exchange's write, reads that returned bytes, and when its first one did (`Timing`).
    written: Option<Instant>,
    reads: u32,
    first_byte: Option<Instant>,
    /// The next exchange's request, already written (`send_now`), and how much of it (when: `written`).
    sent: Option<Sent>,
    /// What a read ahead of the exchange failed with (`receive_now`), for the exchange's first read.
    failed: Option<io::Error>,
    /// The current response's event stream, while one is read for a `StreamWatch`.
    sse: Option<Box<SseParser>>,
}

/// What `H1Conn::receive_now` made of what came for a request sent ahead.
pub enum Received {
    /// The whole response: its exchange is over.
    Whole(Response, Timing),
    /// Nothing yet.
    Nothing,
    /// The exchange must go on (`H1Conn::exchange`), from what was read.
    Exchange,
}

/// A request written ahead of its exchange (`H1Conn::send_now`).
struct Sent {
    request: Rc<[u8]>,
    written: usize,
}

/// One exchange counted in `H1Conn::awaiting` while it lives (a task aborted mid-exchange drops it).
struct Awaiting(Rc<Cell<usize>>);

impl Awaiting {
    fn new(count: &Rc<Cell<usize>>) -> Awaiting {
        count.set(count.get() + 1);
        Awaiting(count.clone())
    }
}

impl Drop for Awaiting {
    fn drop(&mut self) {
        self.0.set(self.0.get() - 1);
    }
}

impl H1Conn {
    pub fn new(io: Stream) -> Self {
        H1Conn {
            io,
            buf: vec![0; INITIAL_BUF],
            start: 0,
            end: 0,
            body_counter: 0,
            served: 0,
            awaiting: None,
            written: None,
            reads: 0,
            first_byte: None,
            sent: None,
            failed: None,
            sse: None,
        }
    }

    /// Writes `request` now, without waiting, as the next exchange's: for a caller that sends at a
    /// moment of its own and reads the response when it comes (`receive_now`), else has the exchange
    /// read it (which then writes only what the socket did not take). Over plain TCP whose reads the
    /// kernel stamps only, so that a response read late is still timed by its arrival. Returns when
    /// the write began (the request's time counts from it, as an exchange's does), or None if nothing
    /// was written: the exchange then sends it as usual.
    pub fn send_now(&mut self, request: &Rc<[u8]>) -> Option<Instant> {
        let Stream::Plain(tcp) = &self.io else { return None };
        if !tcp.stamps() || self.sent.is_some() || self.start != self.end {
            return None;
        }
        let at = Instant::now();
        match tcp.try_write(request) {
            Ok(n) if n > 0 => {
                self.sent = Some(Sent { request: request.clone(), written: n });
                self.io.tcp_mut().take_received(); // a stamp from before this request is not its response's
                (self.written, self.reads, self.first_byte) = (Some(at), 0, None);
                Some(at)
            }
            _ => None,
        }
    }

    /// Reads, without waiting, what came for the request sent ahead (`send_now`), and ends its exchange
    /// when that is the whole response, of the kind nothing but its status and sizes are wanted of:
    /// a head with nothing to follow (no Set-Cookie, no Location, no close) and the body it announces,
    /// all in this one read. Anything else stays buffered for the exchange, which goes on from it as
    /// if it had read it itself (`Received::Exchange`), and so do a read's end of stream and error.
    pub fn receive_now(&mut self, head_request: bool) -> Received {
        let Some(sent) = self.sent.as_ref() else { return Received::Exchange };
        if sent.written < sent.request.len() || self.start != self.end || self.failed.is_some() {
            return Received::Exchange;
        }
        (self.start, self.end) = (0, 0);
        let n = match self.io.tcp_mut().try_read_now(&mut self.buf) {
            Ok(0) => return Received::Exchange,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Received::Nothing,
            Err(e) => {
                self.failed = Some(e); // the exchange's first read returns it
                return Received::Exchange;
            }
        };
        (self.end, self.reads) = (n, 1);
        let Ok(Head::Complete { len, status, body, close: false, kept, event_stream: false }) =
            parse_head(self.buffered(), head_request, Keep::Cookies)
        else {
            return Received::Exchange;
        };
        if kept.is_some_and(|(_, cookies, location)| !cookies.is_empty() || location.is_some()) {
            return Received::Exchange;
        }
        let body_bytes = match body {
            BodyKind::Empty => 0,
            BodyKind::Length(b) if b <= (n - len) as u64 => b,
            _ => return Received::Exchange,
        };
        self.consume(len + body_bytes as usize);
        self.sent = None;
        self.served += 1;
        let received = self.io.tcp_mut().take_received();
        let resp =
            Response { status, body_bytes, wire_bytes: len as u64 + body_bytes, received, ..Response::default() };
        Received::Whole(resp, self.timing())
    }

    /// Ready once the connection has bytes to read, or has ended; until then `cx` is woken when it
    /// does. Reads nothing.
    pub fn poll_read_ready(&self, cx: &mut std::task::Context<'_>) -> std::task::Poll<io::Result<()>> {
        self.io.tcp().poll_read_ready(cx)
    }

    /// What the last exchange saw of its phases.
    pub fn timing(&self) -> Timing {
        Timing { written: self.written, first_byte: self.first_byte }
    }

    /// From now on its reads can carry the kernel's receive time (`net::stamped`).
    pub fn stamp(&mut self) {
        self.io.tcp_mut().stamp();
    }

    fn buffered(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    fn consume(&mut self, n: usize) {
        self.start += n;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// Reads more bytes into the buffer; Ok(0) at end of stream.
    async fn fill(&mut self) -> io::Result<usize> {
        if self.reads == 1 && self.first_byte.is_none() {
            // A second read: the first one's bytes were the response's first (see `Timing`).
            self.first_byte = Some(match self.io.tcp().received() {
                Stamp::At(t) => t,
                _ => Instant::now(),
            });
        }
        if self.end == self.buf.len() {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            } else {
                self.buf.resize(self.buf.len() * 2, 0);
            }
        }
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        let n = self.io.read(&mut self.buf[self.end..]).await?;
        self.end += n;
        self.reads += (n > 0) as u32;
        Ok(n)
    }

    pub async fn exchange(
        &mut self,
        request: &[u8],
        head_request: bool,
        keep: Keep,
    ) -> Result<Response, ExchangeError> {
        self.exchange_watched(request, head_request, keep, &mut NoStreams).await
    }

    /// `exchange`, telling `watch` of an event stream as it is read.
    pub async fn exchange_watched<W: StreamWatch>(
        &mut self,
        request: &[u8],
        head_request: bool,
        keep: Keep,
        watch: &mut W,
    ) -> Result<Response, ExchangeError> {
        self.sse = None;
        let reused = self.served > 0;
        let fail = |failure: Failure, retryable: bool| ExchangeError { failure, retryable };
        // A request written ahead (`send_now`) is this exchange's: the rest of it goes now, if any, and
        // what was read of its response since (`receive_now`) is its first read.
        let write = match self.sent.take() {
            None => {
                self.io.tcp_mut().take_received(); // a stamp from before this request is not its response's
                let written = write_request(&mut self.io, request).await;
                (self.written, self.reads, self.first_byte) = (Some(Instant::now()), 0, None);
                written
            }
            Some(Sent { request, written }) if written < request.len() => {
                write_request(&mut self.io, &request[written..]).await
            }
            Some(_) => Ok(()),
        };
        if let Err(e) = write {
            return Err(fail(classify_io(&e, "before responding"), reused));
        }
        let _awaiting = self.awaiting.as_ref().filter(|_| self.io.tcp().stamps()).map(Awaiting::new);
        let mut resp = Response::default();
        let body_kind = loop {
            if let Some(body) = self.take_head(head_request, keep, watch, &mut resp).map_err(|f| fail(f, false))? {
                break body;
            }
            let untouched = self.end == self.start;
            match self.fill().await {
                Ok(0) if untouched => return Err(fail(Failure::new(FailureKind::Closed, "before responding"), reused)),
                Ok(0) => return Err(fail(Failure::new(FailureKind::Closed, "mid-response"), false)),
                Ok(_) => {}
                Err(e) => return Err(fail(classify_io(&e, "before responding"), reused && untouched)),
            }
        };
        let mut body = if keep == Keep::All { Some(Vec::new()) } else { None };
        let read = match body_kind {
            BodyKind::Empty => Ok(()),
            BodyKind::Length(n) => self.read_exact_body(n, &mut body, watch).await,
            BodyKind::Chunked => self.read_chunked(&mut body, &mut resp.wire_bytes, watch).await,
            BodyKind::UntilClose => {
                resp.close = true;
                self.read_to_close(&mut body, watch).await
            }
        };
        self.sse = None;
        read.map_err(|f| fail(f, false))?;
        resp.body_bytes = match &body {
            Some(b) => b.len() as u64,
            None => self.body_counter,
        };
        self.body_counter = 0;
        resp.wire_bytes += resp.body_bytes;
        resp.body = body;
        resp.received = self.io.tcp_mut().take_received();
        self.served += 1;
        Ok(resp)
    }

    /// The response's head, if the buffer holds it whole: parsed into `resp` (an interim response
    /// skipped), its bytes consumed, and what follows it; None while more is to be read (a head past
    /// `MAX_HEAD` fails). The step `exchange_watched` and `exchange_head` share.
    #[inline(always)]
    fn take_head<W: StreamWatch>(
        &mut self,
        head_request: bool,
        keep: Keep,
        watch: &mut W,
        resp: &mut Response,
    ) -> Result<Option<BodyKind>, Failure> {
        loop {
            match parse_head(self.buffered(), head_request, keep)? {
                Head::Interim(n) => {
                    self.consume(n); // an interim response (100 Continue): the real one follows
                    continue;
                }
                Head::Complete { len, status, body, close, kept, event_stream } => {
                    if W::WATCHING && event_stream && !matches!(body, BodyKind::Empty) {
                        self.sse = Some(Box::default());
                        watch.opened(Instant::now());
                        watch.framing(len as u64);
                    }
                    resp.status = status;
                    resp.close = close;
                    if let Some((head, set_cookies, location)) = kept {
                        resp.raw_head = head;
                        resp.set_cookies = set_cookies;
                        resp.location = location;
                    }
                    resp.wire_bytes = len as u64;
                    self.consume(len);
                    return Ok(Some(body));
                }
                Head::Partial if self.end - self.start > MAX_HEAD => {
                    let f = Failure::new(FailureKind::TooLarge, format!("response head above {} KiB", MAX_HEAD / 1024));
                    return Err(f);
                }
                Head::Partial => return Ok(None),
            }
        }
    }

    /// Reads more of a response head; fails at the end of the stream or an error, retryable (`reused`)
    /// if nothing of the response came. (`exchange_watched` has these lines in its own loop: its
    /// state machine as it was before streamed exchanges, on the path of every request.)
    async fn fill_head(&mut self, reused: bool) -> Result<(), ExchangeError> {
        let fail = |failure: Failure, retryable: bool| ExchangeError { failure, retryable };
        let untouched = self.end == self.start;
        match self.fill().await {
            Ok(0) if untouched => Err(fail(Failure::new(FailureKind::Closed, "before responding"), reused)),
            Ok(0) => Err(fail(Failure::new(FailureKind::Closed, "mid-response"), false)),
            Ok(_) => Ok(()),
            Err(e) => Err(fail(classify_io(&e, "before responding"), reused && untouched)),
        }
    }

    /// A script's streamed request (script/request.rs): writes `request` and reads the response's head
    /// only; its body is left on the connection for `read_body`, which must follow before the
    /// connection serves another exchange. The exchange is not counted as awaiting (`awaiting`): its
    /// head is read when it comes.
    pub async fn exchange_head<W: StreamWatch>(
        &mut self,
        request: &[u8],
        head_request: bool,
        keep: Keep,
        watch: &mut W,
    ) -> Result<(Response, PendingBody), ExchangeError> {
        self.sse = None;
        self.sent = None; // (only a native user's connection sends ahead: `send_now`)
        let reused = self.served > 0;
        self.io.tcp_mut().take_received();
        let written = write_request(&mut self.io, request).await;
        (self.written, self.reads, self.first_byte) = (Some(Instant::now()), 0, None);
        if let Err(e) = written {
            return Err(ExchangeError { failure: classify_io(&e, "before responding"), retryable: reused });
        }
        let mut resp = Response::default();
        loop {
            let taken = self.take_head(head_request, keep, watch, &mut resp);
            if let Some(body) = taken.map_err(|failure| ExchangeError { failure, retryable: false })? {
                if matches!(body, BodyKind::UntilClose) {
                    resp.close = true;
                }
                resp.received = self.io.tcp_mut().take_received();
                return Ok((resp, PendingBody(body)));
            }
            self.fill_head(reused).await?;
        }
    }

    /// The body `exchange_head` left, read to its end: each read's bytes go to `watch` (`body`, when it
    /// takes them; else they are counted), an event stream's events too. Returns the body's bytes on
    /// the wire (its framing included); the connection may then serve the next exchange unless the
    /// response said it closes.
    pub async fn read_body<W: StreamWatch>(&mut self, pending: PendingBody, watch: &mut W) -> Result<u64, Failure> {
        let mut framing = 0;
        let mut none = None;
        let read = match pending.0 {
            BodyKind::Empty => Ok(()),
            BodyKind::Length(n) => self.read_exact_body(n, &mut none, watch).await,
            BodyKind::Chunked => self.read_chunked(&mut none, &mut framing, watch).await,
            BodyKind::UntilClose => self.read_to_close(&mut none, watch).await,
        };
        self.sse = None;
        let bytes = std::mem::take(&mut self.body_counter) + framing;
        read?;
        self.served += 1;
        Ok(bytes)
    }

    fn take_body<W: StreamWatch>(
        &mut self,
        n: usize,
        body: &mut Option<Vec<u8>>,
        watch: &mut W,
    ) -> Result<(), Failure> {
        if let Some(parser) = self.sse.as_deref_mut().filter(|_| n > 0) {
            let mut tokens = Tokens::default();
            let events =
                parser.feed(&self.buf[self.start..self.start + n], |e| super::tokens::read(&mut tokens, e.data))?;
            watch.read(n as u64);
            watch.progress(Instant::now(), events, tokens);
        }
        if W::TAKES_BODY {
            if n > 0 {
                watch.body(&self.buf[self.start..self.start + n])?;
            }
            self.body_counter += n as u64;
        } else if let Some(b) = body.as_mut() {
            if b.len() + n > MAX_KEPT_BODY {
                return Err(too_large_body());
            }
            b.extend_from_slice(&self.buf[self.start..self.start + n]);
        } else {
            self.body_counter += n as u64;
        }
        self.consume(n);
        Ok(())
    }

    async fn fill_body(&mut self) -> Result<(), Failure> {
        match self.fill().await {
            Ok(0) => Err(Failure::new(FailureKind::Closed, "mid-response")),
            Ok(_) => Ok(()),
            Err(e) => Err(classify_io(&e, "mid-response")),
        }
    }

    async fn read_exact_body(
        &mut self,
        mut left: u64,
        body: &mut Option<Vec<u8>>,
        watch: &mut impl StreamWatch,
    ) -> Result<(), Failure> {
        loop {
            let take = (self.end - self.start).min(left as usize);
            self.take_body(take, body, watch)?;
            left -= take as u64;
            if left == 0 {
                return Ok(());
            }
            self.fill_body().await?;
        }
    }

    async fn read_to_close(&mut self, body: &mut Option<Vec<u8>>, watch: &mut impl StreamWatch) -> Result<(), Failure> {
        loop {
            let n = self.end - self.start;
            self.take_body(n, body, watch)?;
            match self.fill().await {
                Ok(0) => return Ok(()),
                Ok(_) => {}
                Err(e) => return Err(classify_io(&e, "mid-response")),
            }
        }
    }

    /// `n` bytes of chunked framing read: counted in `framing`, and told to the watch of an event
    /// stream (`StreamWatch::framing`).
    #[inline(always)]
    fn framed(&self, n: usize, framing: &mut u64, watch: &mut impl StreamWatch) {
        *framing += n as u64;
        if self.sse.is_some() {
            watch.framing(n as u64);
        }
    }

    async fn read_chunked(
        &mut self,
        body: &mut Option<Vec<u8>>,
        framing: &mut u64,
        watch: &mut impl StreamWatch,
    ) -> Result<(), Failure> {
        let bad = |what: &str| Failure::new(FailureKind::Protocol, format!("bad chunked encoding ({what})"));
        let long_line = || Failure::new(FailureKind::TooLarge, format!("chunk size line above {MAX_CHUNK_LINE} bytes"));
        let long_trailers = || Failure::new(FailureKind::TooLarge, format!("trailers above {} KiB", MAX_HEAD / 1024));
        loop {
            // chunk size line
            let size = loop {
                match httparse::parse_chunk_size(self.buffered()) {
                    Ok(httparse::Status::Complete((n, _))) if n > MAX_CHUNK_LINE => return Err(long_line()),
                    Ok(httparse::Status::Complete((n, size))) => {
                        self.consume(n);
                        self.framed(n, framing, watch);
                        break size;
                    }
                    Ok(httparse::Status::Partial) if self.end - self.start >= MAX_CHUNK_LINE => return Err(long_line()),
                    Ok(httparse::Status::Partial) => self.fill_body().await?,
                    Err(_) => return Err(bad("size")),
                }
            };
            if size == 0 {
                break;
            }
            self.read_exact_body(size, body, watch).await?;
            while self.end - self.start < 2 {
                self.fill_body().await?;
            }
            if self.buffered()[..2] != *b"\r\n" {
                return Err(bad("missing CRLF after data"));
            }
            self.consume(2);
            self.framed(2, framing, watch);
        }
        // trailer section: header lines until an empty line, at most MAX_HEAD in all
        let mut trailers = 0;
        loop {
            match self.buffered().windows(2).position(|w| w == b"\r\n") {
                Some(0) => {
                    self.consume(2);
                    self.framed(2, framing, watch);
                    return Ok(());
                }
                Some(i) if trailers + i + 2 > MAX_HEAD => return Err(long_trailers()),
                Some(i) => {
                    self.consume(i + 2);
                    self.framed(i + 2, framing, watch);
                    trailers += i + 2;
                }
                // A line still coming: at least its LF is to come.
                None if trailers + self.buffered().len() + 1 > MAX_HEAD => return Err(long_trailers()),
                None => self.fill_body().await?,
            }
        }
    }
}

enum Head {
    Partial,
    /// A 1xx response of this many bytes, to skip.
    Interim(usize),
    /// `kept`: the raw header lines, Set-Cookie values and Location, when the caller keeps the response;
    /// `event_stream`: a 2xx whose Content-Type is `text/event-stream`.
    Complete {
        len: usize,
        status: u16,
        body: BodyKind,
        close: bool,
        kept: Option<Kept>,
        event_stream: bool,
    },
}

/// The header lines (with `Keep::All`), the Set-Cookie values and the Location.
type Kept = (Option<Vec<u8>>, Vec<String>, Option<String>);

fn parse_head(buf: &[u8], head_request: bool, keep: Keep) -> Result<Head, Failure> {
    match parse_head_with::<FEW_HEADERS>(buf, head_request, keep) {
        Err(httparse::Error::TooManyHeaders) => parse_head_with::<MAX_HEADERS>(buf, head_request, keep),
        other => other,
    }
    .map_err(|e| match e {
        httparse::Error::TooManyHeaders => {
            Failure::new(FailureKind::TooLarge, format!("response head of more than {MAX_HEADERS} header fields"))
        }
        e => Failure::new(FailureKind::Protocol, e.to_string()),
    })?
}

fn parse_head_with<const N: usize>(
    buf: &[u8],
    head_request: bool,
    keep: Keep,
) -> Result<Result<Head, Failure>, httparse::Error> {
    let mut slots = [httparse::EMPTY_HEADER; N];
    let mut parsed = httparse::Response::new(&mut slots);
    let len = match parsed.parse(buf)? {
        httparse::Status::Partial => return Ok(Ok(Head::Partial)),
        httparse::Status::Complete(len) => len,
    };
    let status = parsed.code.unwrap_or(0);
    if (100..200).contains(&status) && status != 101 {
        return Ok(Ok(Head::Interim(len)));
    }
    Ok(head_facts(&parsed, head_request).map(|(body, close, event_stream)| {
        let kept = (keep != Keep::Nothing).then(|| {
            let value = |v: &[u8]| String::from_utf8_lossy(v).into_owned();
            let set_cookies = parsed
                .headers
                .iter()
                .filter(|h| h.name.eq_ignore_ascii_case("set-cookie"))
                .map(|h| value(h.value))
                .collect();
            let location =
                parsed.headers.iter().find(|h| h.name.eq_ignore_ascii_case("location")).map(|h| value(h.value));
            let lines_start = buf.iter().position(|&b| b == b'\n').map_or(len, |i| i + 1);
            let lines = (keep == Keep::All).then(|| buf[lines_start.min(len)..len].to_vec());
            (lines, set_cookies, location)
        });
        Head::Complete { len, status, body, close, kept, event_stream }
    }))
}

/// Reads what the head says about the body, whether the server will close the connection, and whether
/// the body is an event stream.
fn head_facts(parsed: &httparse::Response, head_request: bool) -> Result<(BodyKind, bool, bool), Failure> {
    let status = parsed.code.unwrap_or(0);
    let mut close = parsed.version == Some(0);
    let mut length = None;
    let mut chunked = false;
    let mut event_stream = false;
    let has = |v: &[u8], token: &[u8]| v.split(|&b| b == b',').any(|t| t.trim_ascii().eq_ignore_ascii_case(token));
    for h in parsed.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            let v = std::str::from_utf8(h.value).ok().and_then(|s| s.trim().parse::<u64>().ok());
            length = Some(v.ok_or_else(|| Failure::new(FailureKind::Protocol, "bad Content-Length"))?);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = has(h.value, b"chunked");
        } else if h.name.eq_ignore_ascii_case("connection") {
            if has(h.value, b"close") {
                close = true;
            } else if has(h.value, b"keep-alive") {
                close = false;
            }
        } else if h.name.eq_ignore_ascii_case("content-type") {
            event_stream = sse::is_event_stream(h.value);
        }
    }
    let event_stream = event_stream && sse::status_streams(status);
    let body = if head_request || status == 204 || status == 304 {
        BodyKind::Empty
    } else if chunked {
        BodyKind::Chunked
    } else if let Some(n) = length {
        BodyKind::Length(n)
    } else {
        BodyKind::UntilClose
    };
    Ok((body, close, event_stream))
}

async fn write_request(io: &mut Stream, request: &[u8]) -> io::Result<()> {
    io.write_all(request).await?;
    io.flush().await // a no-op for TCP; TLS needs it to push the last record out
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    /// Serves the given raw response bytes once per request it reads (one read per request).
    async fn serve(responses: Vec<&'static [u8]>) -> std::net::SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            let mut buf = [0u8; 4096];
            for r in responses {
                let _ = s.read(&mut buf).await.unwrap();
                for piece in r.chunks(7) {
                    s.write_all(piece).await.unwrap(); // split writes exercise partial parsing
                    s.flush().await.unwrap();
                }
            }
        });
        addr
    }

    async fn conn(addr: std::net::SocketAddr) -> H1Conn {
        H1Conn::new(Stream::plain(TcpStream::connect(addr).await.unwrap()))
    }

    const REQ: &[u8] = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";

    #[tokio::test]
    async fn content_length_chunked_and_keepalive() {
        let addr = serve(vec![
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nT: v\r\n\r\n",
            b"HTTP/1.1 204 No Content\r\n\r\n",
        ])
        .await;
        let mut c = conn(addr).await;
        let r = c.exchange(REQ, false, Keep::All).await.ok().unwrap();
        assert_eq!((r.status, r.body.as_deref()), (200, Some(&b"hello"[..])));
        let r = c.exchange(REQ, false, Keep::All).await.ok().unwrap();
        assert_eq!((r.status, r.body.as_deref()), (201, Some(&b"abcde"[..])));
        let r = c.exchange(REQ, false, Keep::Nothing).await.ok().unwrap();
        assert_eq!((r.status, r.body_bytes, r.close), (204, 0, false));
        assert_eq!(c.served, 3);
    }

    #[tokio::test]
    async fn many_headers_take_the_larger_parse() {
        const HEAD: &str = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n";
        let many: String = (0..60).map(|i| format!("X-H{i}: v\r\n")).collect();
        let raw: &'static [u8] = Box::leak(format!("{HEAD}{many}\r\nok").into_bytes().into_boxed_slice());
        let addr = serve(vec![raw]).await;
        let mut c = conn(addr).await;
        let r = c.exchange(REQ, false, Keep::All).await.ok().unwrap();
        let head = String::from_utf8(r.raw_head.unwrap()).unwrap();
        assert_eq!((r.status, head.lines().filter(|l| !l.is_empty()).count()), (200, 61));
        assert!(head.starts_with("Content-Length: 2\r\nX-H0: v\r\n"), "{head}");
    }

    #[tokio::test]
    async fn keeping_cookies_keeps_set_cookie_and_location_only() {
        let addr = serve(vec![
            b"HTTP/1.1 302 Found\r\nSet-Cookie: a=1\r\nLocation: /b\r\nset-cookie: c=2\r\nContent-Length: 3\r\n\r\nabc",
        ])
        .await;
        let mut c = conn(addr).await;
        let r = c.exchange(REQ, false, Keep::Cookies).await.ok().unwrap();
        assert_eq!((r.status, r.body_bytes, r.wire_bytes > 3), (302, 3, true));
        assert_eq!((r.set_cookies, r.location.as_deref()), (vec!["a=1".to_string(), "c=2".to_string()], Some("/b")));
        assert!(r.raw_head.is_none() && r.body.is_none());
    }

    #[tokio::test]
    async fn close_delimited_body_and_counting_without_keeping() {
        let addr = serve(vec![b"HTTP/1.0 200 OK\r\n\r\n0123456789"]).await;
        let mut c = conn(addr).await;
        let r = c.exchange(REQ, false, Keep::Nothing).await.ok().unwrap();
        assert_eq!((r.body_bytes, r.close, r.body.is_none()), (10, true, true));
    }

    #[tokio::test]
    async fn truncated_body_is_a_mid_response_close() {
        let addr = serve(vec![b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nonly-this"]).await;
        let mut c = conn(addr).await;
        let e = c.exchange(REQ, false, Keep::Nothing).await.err().unwrap();
        assert_eq!(e.failure.message(), "server closed the connection mid-response");
        assert!(!e.retryable);
    }

    /// A server that waits 40 ms before the head and 60 ms between the head and the body: waiting and
    /// receiving read those waits (tokio's timer sleeps at least as long, within a millisecond or so).
    #[tokio::test]
    async fn waiting_and_receiving_are_the_servers_delays() {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            let mut buf = [0u8; 4096];
            for _ in 0..2 {
                let _ = s.read(&mut buf).await.unwrap();
                tokio::time::sleep(std::time::Duration::from_millis(40)).await;
                s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n").await.unwrap();
                tokio::time::sleep(std::time::Duration::from_millis(60)).await;
                s.write_all(b"hello").await.unwrap();
            }
        });
        let mut c = conn(addr).await;
        for _ in 0..2 {
            c.exchange(REQ, false, Keep::Nothing).await.ok().unwrap();
            let p = c.timing().phases(std::time::Instant::now());
            let (w, rx) = (p.waiting.unwrap().as_micros(), p.receiving.unwrap().as_micros());
            assert!((40_000..55_000).contains(&w), "waiting {w} µs");
            assert!((60_000..75_000).contains(&rx), "receiving {rx} µs");
        }
    }

    #[tokio::test]
    async fn a_response_read_whole_has_no_receiving_time() {
        let addr = serve(vec![b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"]).await;
        let mut c = conn(addr).await;
        // (`serve` writes 7 bytes at a time: the reads may take several, so only what holds either way)
        c.exchange(REQ, false, Keep::Nothing).await.ok().unwrap();
        let end = std::time::Instant::now();
        let (t, p) = (c.timing(), c.timing().phases(end));
        assert!(p.connect.is_none() && p.tls.is_none());
        assert_eq!(t.first_byte.is_none(), p.receiving == Some(std::time::Duration::ZERO));
        assert!(p.waiting.unwrap() + p.receiving.unwrap() <= end - t.written.unwrap());
    }

    /// Serves `head`, then `x` bytes without end (until the client closes), once.
    async fn endless(head: &'static [u8]) -> std::net::SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            let _ = s.read(&mut [0u8; 4096]).await.unwrap();
            let _ = s.write_all(head).await;
            let piece = vec![b'x'; 64 * 1024];
            while s.write_all(&piece).await.is_ok() {}
        });
        addr
    }

    /// Issue 26: what a server sends without end fails the request as too large, at the bound.
    #[tokio::test]
    async fn endless_framing_and_bodies_are_too_large() {
        let cases: [(&'static [u8], Keep, &str); 6] = [
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;ext=",
                Keep::Nothing,
                "chunk size line above 4096 bytes",
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: ",
                Keep::Nothing,
                "trailers above 64 KiB",
            ),
            (b"HTTP/1.1 200 OK\r\nX-Endless: ", Keep::Nothing, "response head above 64 KiB"),
            (b"HTTP/1.1 200 OK\r\nX-Endless: ", Keep::Cookies, "response head above 64 KiB"),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000\r\n\r\n", Keep::All, "response body above 64 MiB"),
            (b"HTTP/1.1 200 OK\r\n\r\n", Keep::All, "response body above 64 MiB"),
        ];
        for (head, keep, what) in cases {
            let mut c = conn(endless(head).await).await;
            let e = c.exchange(REQ, false, keep).await.err().unwrap();
            assert_eq!(e.failure.kind, FailureKind::TooLarge, "{}", e.failure.message());
            assert!(e.failure.message().starts_with(&format!("too large: {what}")), "{}", e.failure.message());
            assert!(c.buf.len() <= 2 * MAX_HEAD, "the read buffer grew to {}", c.buf.len());
        }
        // Bench keeps no body: an endless one is only a long response (its timeout ends it).
        let mut c = conn(endless(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000\r\n\r\n").await).await;
        let long =
            tokio::time::timeout(std::time::Duration::from_millis(200), c.exchange(REQ, false, Keep::Nothing)).await;
        assert!(long.is_err(), "still reading");
    }

    /// A watch that keeps what it is told.
    #[derive(Default)]
    struct Told {
        opened: usize,
        events: Vec<u64>,
    }

    impl StreamWatch for Told {
        const WATCHING: bool = true;
        fn opened(&mut self, _: Instant) {
            self.opened += 1;
        }
        fn progress(&mut self, _: Instant, events: u64, _: Tokens) {
            self.events.push(events);
        }
    }

    /// Event streams in each framing are parsed as read (in 7-byte pieces: `serve`), and only those.
    #[tokio::test]
    async fn event_streams_are_parsed_in_every_framing() {
        let addr = serve(vec![
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 26\r\n\r\ndata: one\n\ndata: two\n\n:x\n\n",
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\nTransfer-Encoding: chunked\r\n\r\n6\r\ndata: \r\n6\r\na\n\ndat\r\n5\r\na: b\n\r\n1\r\n\n\r\n0\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 12\r\n\r\ndata: no\n\n\n\n",
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\ndata: 1\n\ndata: 2\n\ndata: 3\n\n",
        ])
        .await;
        let mut c = conn(addr).await;
        let mut counts = vec![];
        for _ in 0..4 {
            let mut told = Told::default();
            let r = c.exchange_watched(REQ, false, Keep::Nothing, &mut told).await.ok().unwrap();
            assert_eq!(r.status, 200);
            counts.push((told.opened, told.events.iter().sum::<u64>()));
        }
        assert_eq!(counts, vec![(1, 2), (1, 2), (0, 0), (1, 3)]);
    }

    /// A stream closed mid-body fails as any body does, after its events were told.
    #[tokio::test]
    async fn a_stream_closed_mid_body_fails_after_its_events() {
        let addr = serve(vec![b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n10\r\ndata: 0123456\n\n\r\n"]).await;
        let mut c = conn(addr).await;
        let mut told = Told::default();
        let e = c.exchange_watched(REQ, false, Keep::Nothing, &mut told).await.err().unwrap();
        assert_eq!(e.failure.message(), "server closed the connection mid-response");
        assert_eq!((told.opened, told.events.iter().sum::<u64>()), (1, 1));
    }

    /// A watch that takes the body as it is read (a script's streamed response).
    #[derive(Default)]
    struct Taker {
        told: Told,
        body: Vec<u8>,
        pieces: usize,
    }

    impl StreamWatch for Taker {
        const WATCHING: bool = true;
        const TAKES_BODY: bool = true;
        fn opened(&mut self, at: Instant) {
            self.told.opened(at);
        }
        fn progress(&mut self, at: Instant, events: u64, tokens: Tokens) {
            self.told.progress(at, events, tokens);
        }
        fn body(&mut self, bytes: &[u8]) -> Result<(), Failure> {
            self.body.extend_from_slice(bytes);
            self.pieces += 1;
            Ok(())
        }
    }

    /// A streamed exchange: the head alone, then the body in each framing handed over as read (in
    /// 7-byte pieces: `serve`), its events told, and the connection serving the next exchange.
    #[tokio::test]
    async fn a_streamed_body_is_handed_over_as_read_in_every_framing() {
        let addr = serve(vec![
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n6\r\ndata: \r\n6\r\na\n\ndat\r\n5\r\na: b\n\r\n1\r\n\n\r\n0\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 22\r\n\r\ndata: one\n\ndata: two\n\n",
            b"HTTP/1.1 204 No Content\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nto the end",
        ])
        .await;
        let mut c = conn(addr).await;
        let expected: [(&[u8], u64, Option<u64>, bool); 4] = [
            (b"data: a\n\ndata: b\n\n", 2, None, false),
            (b"data: one\n\ndata: two\n\n", 2, Some(22), false),
            (b"", 0, Some(0), false),
            (b"to the end", 0, None, true),
        ];
        for (body, events, length, close) in expected {
            let mut taker = Taker::default();
            let (resp, pending) = c.exchange_head(REQ, false, Keep::All, &mut taker).await.ok().unwrap();
            assert_eq!((pending.length(), resp.close, taker.body.len()), (length, close, 0));
            c.read_body(pending, &mut taker).await.unwrap();
            assert_eq!((&taker.body[..], taker.told.events.iter().sum::<u64>()), (body, events));
            assert_eq!(taker.pieces == 0, body.is_empty()); // (reads may join the server's 7-byte writes)
        }
        assert_eq!(c.served, 4);
    }

    #[tokio::test]
    async fn garbage_is_a_protocol_error() {
        let addr = serve(vec![b"SSH-2.0-OpenSSH\r\n\r\n"]).await;
        let mut c = conn(addr).await;
        let e = c.exchange(REQ, false, Keep::Nothing).await.err().unwrap();
        assert_eq!(e.failure.kind, FailureKind::Protocol);
    }
}
