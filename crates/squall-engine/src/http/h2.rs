//! HTTP/2 through the `h2` crate: one connection shared by several concurrent streams, reconnected
//! lazily when it fails. ALPN "h2" over TLS, prior knowledge (h2c) over plain TCP.
//!
//! Bounds on what a server sends, as bench's own client keeps them (`h2lean`): a response's header
//! list at most `MAX_HEADER_BLOCK` (256 KiB, Chromium's limit, where the crate's default is 16 MiB;
//! a larger one is a stream error), and the body kept for a script at most `MAX_KEPT_BODY` (64 MiB,
//! as over HTTP/1.1). The crate itself bounds the rest: CONTINUATION frames per block, its send
//! buffer, one PING acknowledgement pending before it reads on.
//!
//! A `text/event-stream` answer is parsed as its DATA frames arrive when the caller watches streams
//! (`StreamWatch`, as over HTTP/1.1): its events and a model's tokens timed by the caller.

use crate::http::h1::StreamWatch;
use crate::http::h2lean::MAX_HEADER_BLOCK;
use crate::http::request::RequestSpec;
use crate::http::response::{too_large_body, Response, MAX_KEPT_BODY};
use crate::http::sse::{self, SseParser};
use crate::http::tokens::{self, Tokens};
use crate::http::{opening, TRIES};
use crate::net::classify_io;
use crate::net::Connector;
use crate::stats::{Failure, FailureKind};
use bytes::Bytes;
use h2::client::SendRequest;
use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant};

/// Headers HTTP/2 forbids or carries as pseudo-headers.
const CONNECTION_HEADERS: [&str; 6] =
    ["host", "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"];

/// Bench's request head: its content-length is the body's, as over HTTP/1.1 (HTTP/2 does not need
/// one, but servers read it: nginx's `$content_length` is empty without it).
pub fn request_template(spec: &RequestSpec) -> Result<http::Request<()>, String> {
    let mut headers: Vec<(String, String)> =
        spec.headers.iter().filter(|(k, _)| !k.eq_ignore_ascii_case("content-length")).cloned().collect();
    if !spec.body.is_empty() {
        headers.push(("content-length".into(), spec.body.len().to_string()));
    }
    build_request(&spec.method, &spec.url, &headers)
}

/// An HTTP/2 request head: squall's default user-agent and accept unless given, the caller's headers
/// lowercased, and none of the connection-specific headers HTTP/2 forbids.
pub fn build_request(method: &str, url: &url::Url, headers: &[(String, String)]) -> Result<http::Request<()>, String> {
    let mut b = http::Request::builder().method(method).uri(url.as_str());
    let has = |n: &str| headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(n));
    if !has("user-agent") {
        b = b.header("user-agent", format!("squall/{}", crate::types::VERSION));
    }
    if !has("accept") {
        b = b.header("accept", "*/*");
    }
    for (k, v) in headers {
        if !CONNECTION_HEADERS.iter().any(|c| k.eq_ignore_ascii_case(c)) {
            b = b.header(k.to_ascii_lowercase(), v);
        }
    }
    b.body(()).map_err(|e| format!("cannot build the HTTP/2 request: {e}"))
}

/// A stream's failure; whether it broke the whole connection rather than one stream; and whether
/// the server refused it unprocessed (its GOAWAY's last stream id is below it, or the connection was
/// already going away when it was to open: RFC 9113 6.8), so that it can go again on a new one.
struct Failed {
    failure: Failure,
    broken: bool,
    refused: bool,
}

impl From<h2::Error> for Failed {
    fn from(e: h2::Error) -> Failed {
        let text = e.to_string();
        let failure = match e.get_io() {
            Some(io) => classify_io(io, "mid-response"),
            // The crate's own GOAWAY for a header block past our bound (its debug data names it).
            None if ["too_many_continuations", "header_list_way_too_large"].iter().any(|d| text.contains(d)) => {
                let what = format!("response header block above {} KiB ({text})", MAX_HEADER_BLOCK / 1024);
                Failure::new(FailureKind::TooLarge, what)
            }
            None if e.is_go_away() && e.is_remote() => Failure::new(FailureKind::Closed, format!("with GOAWAY ({e})")),
            // The crate resets a stream whose response is malformed, or whose header list is above
            // our bound (it tells the two apart only in its logs).
            None if e.is_reset() && e.is_library() && e.reason() == Some(h2::Reason::PROTOCOL_ERROR) => {
                let what = format!("a malformed response, or its header list above {} KiB", MAX_HEADER_BLOCK / 1024);
                Failure::new(FailureKind::Protocol, what)
            }
            None => Failure::new(FailureKind::Protocol, text),
        };
        Failed { failure, broken: !e.is_reset() || e.is_go_away(), refused: e.is_go_away() && e.is_remote() }
    }
}

/// The live connection of a slot, numbered so that a stream can drop the very one it used.
type Live = (u64, SendRequest<Bytes>);

/// One HTTP/2 connection slot, shared by the workers that multiplex over it.
pub struct H2Conn {
    sender: RefCell<Option<Live>>,
    /// Connections opened on this slot so far: the number of the next one.
    opened: Cell<u64>,
    connecting: tokio::sync::Mutex<()>,
    index: usize,
}

/// Armed while a stream is in flight: a stream dropped before it ends (its worker cancelled past the
/// timeout, or the run over) leaves the connection it was on to its other streams, but no new request
/// goes on it. A server that stopped answering on one connection would otherwise time out every later
/// request on it, where HTTP/1.1 opens a new connection after a timeout.
struct InFlight<'a> {
    conn: &'a H2Conn,
    number: u64,
    armed: bool,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.conn.drop_connection(self.number);
        }
    }
}

impl H2Conn {
    pub fn new(index: usize) -> Self {
        H2Conn { sender: RefCell::new(None), opened: Cell::new(0), connecting: tokio::sync::Mutex::new(()), index }
    }

    fn current(&self) -> Option<Live> {
        self.sender.borrow().clone()
    }

    /// Opens the slot's connection (unless another stream did while this one waited for the lock);
    /// reports how long a new connect took.
    async fn connect(&self, connector: &Connector) -> Result<(Live, Option<Duration>), Failure> {
        let _guard = self.connecting.lock().await;
        if let Some(live) = self.current() {
            return Ok((live, None)); // another stream connected while this one waited
        }
        let t0 = Instant::now();
        let stream = connector.connect(self.index).await?;
        if connector.tls.is_some() && Connector::alpn(&stream).as_deref() != Some(b"h2") {
            return Err(Failure::new(FailureKind::Protocol, "the server did not negotiate HTTP/2"));
        }
        let (send, conn) = h2::client::Builder::new()
            .max_header_list_size(MAX_HEADER_BLOCK as u32)
            .handshake(stream)
            .await
            .map_err(|e| Failed::from(e).failure)?;
        tokio::task::spawn_local(async move {
            let _ = conn.await; // drives the connection until it closes
        });
        let number = self.opened.get();
        self.opened.set(number + 1);
        *self.sender.borrow_mut() = Some((number, send.clone()));
        Ok(((number, send), Some(t0.elapsed())))
    }

    /// No new stream goes on connection `number` (if it is still the slot's): the next opens another.
    fn drop_connection(&self, number: u64) {
        let mut sender = self.sender.borrow_mut();
        if sender.as_ref().is_some_and(|(n, _)| *n == number) {
            sender.take();
        }
    }

    /// One request on the slot's connection, opening it first if needed; `connecting` is true while
    /// this stream waits for a connection, so that a watchdog can tell a connect timeout from a
    /// request timeout, as it does for HTTP/1.1. A request the server refused unprocessed goes again
    /// on a new connection, up to `TRIES` times in all (nginx ends a connection with GOAWAY after
    /// `keepalive_requests`, 1,000 by default: without this, one request in a thousand failed).
    #[allow(clippy::too_many_arguments)]
    pub async fn exchange<W: StreamWatch>(
        &self,
        connector: &Connector,
        template: &http::Request<()>,
        body: &Bytes,
        keep: bool,
        on_connect: impl FnMut(Duration),
        connecting: &Cell<bool>,
        watch: &mut W,
    ) -> Result<Response, Failure> {
        let (resp, _) =
            self.exchange_body(connector, template, body, keep, on_connect, connecting, watch, false).await?;
        Ok(resp)
    }

    /// `exchange`; with `head_only`, it returns at the response's head, its body left to read from the
    /// `BodyStream` (a script's streamed request: `script::request::run_stream`).
    #[allow(clippy::too_many_arguments)]
    pub async fn exchange_body<W: StreamWatch>(
        &self,
        connector: &Connector,
        template: &http::Request<()>,
        body: &Bytes,
        keep: bool,
        mut on_connect: impl FnMut(Duration),
        connecting: &Cell<bool>,
        watch: &mut W,
        head_only: bool,
    ) -> Result<(Response, Option<BodyStream>), Failure> {
        let mut tries = 0;
        loop {
            let (number, send) = match self.current() {
                Some(live) => live,
                None => opening(connecting, &mut on_connect, self.connect(connector)).await?,
            };
            let mut in_flight = InFlight { conn: self, number, armed: true };
            let result = self.send(send, template, body, keep, watch, head_only).await;
            in_flight.armed = false;
            tries += 1;
            match result {
                Ok(response) => return Ok(response),
                Err(failed) => {
                    if failed.broken {
                        self.drop_connection(number);
                    }
                    if !(failed.refused && tries < TRIES) {
                        return Err(failed.failure);
                    }
                }
            }
        }
    }

    async fn send<W: StreamWatch>(
        &self,
        send: SendRequest<Bytes>,
        template: &http::Request<()>,
        body: &Bytes,
        keep: bool,
        watch: &mut W,
        head_only: bool,
    ) -> Result<(Response, Option<BodyStream>), Failed> {
        let mut send = send.ready().await.map_err(Failed::from)?;
        let mut req = http::Request::new(());
        *req.method_mut() = template.method().clone();
        *req.uri_mut() = template.uri().clone();
        *req.headers_mut() = template.headers().clone();
        let (response, mut stream) = send.send_request(req, body.is_empty()).map_err(Failed::from)?;
        if !body.is_empty() {
            stream.send_data(body.clone(), true).map_err(Failed::from)?;
        }
        let response = response.await.map_err(Failed::from)?;
        let (parts, recv) = response.into_parts();
        let mut out = Response { status: parts.status.as_u16(), ..Default::default() };
        if keep {
            out.headers = Some(
                parts
                    .headers
                    .iter()
                    .map(|(k, v)| (k.to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
                    .collect(),
            );
        }
        let event_stream = sse::status_streams(parts.status.as_u16())
            && parts.headers.get(http::header::CONTENT_TYPE).is_some_and(|v| sse::is_event_stream(v.as_bytes()));
        let parser = (W::WATCHING && event_stream && !recv.is_end_stream()).then(SseParser::new);
        if parser.is_some() {
            watch.opened(Instant::now());
        }
        let mut rest = BodyStream { recv, parser };
        if head_only {
            return Ok((out, Some(rest)));
        }
        let mut kept = keep.then(Vec::new);
        out.body_bytes = rest.read_into(&mut kept, watch).await?;
        out.wire_bytes = out.body_bytes;
        out.body = kept;
        Ok((out, None))
    }
}

/// A response's body still to read, as its DATA frames come (its events parsed if it is a watched
/// event stream). Dropped unread, the h2 crate resets the stream (RST_STREAM CANCEL); the connection
/// serves on.
pub struct BodyStream {
    recv: h2::RecvStream,
    parser: Option<SseParser>,
}

impl BodyStream {
    /// Reads the rest of the body: each DATA frame's bytes to `watch.body` (with `TAKES_BODY`: a
    /// script's streamed response), its events told to `watch`. Returns the body's length.
    pub async fn read<W: StreamWatch>(mut self, watch: &mut W) -> Result<u64, Failure> {
        self.read_into(&mut None, watch).await.map_err(|f| f.failure)
    }

    /// `read`, the bytes kept in `kept` too if given (at most `MAX_KEPT_BODY`).
    async fn read_into<W: StreamWatch>(&mut self, kept: &mut Option<Vec<u8>>, watch: &mut W) -> Result<u64, Failed> {
        let stream_error = |failure| Failed { failure, broken: false, refused: false };
        let mut total = 0u64;
        while let Some(chunk) = self.recv.data().await {
            let chunk = chunk.map_err(Failed::from)?;
            total += chunk.len() as u64;
            let _ = self.recv.flow_control().release_capacity(chunk.len());
            if let Some(p) = self.parser.as_mut().filter(|_| !chunk.is_empty()) {
                let mut t = Tokens::default();
                let events = p.feed(&chunk, |e| tokens::read(&mut t, e.data)).map_err(stream_error)?;
                watch.progress(Instant::now(), events, t);
            }
            if W::TAKES_BODY {
                watch.body(&chunk).map_err(stream_error)?;
            }
            if let Some(k) = kept.as_mut() {
                if k.len() + chunk.len() > MAX_KEPT_BODY {
                    // The stream is reset when `recv` drops; the connection serves on.
                    return Err(stream_error(too_large_body()));
                }
                k.extend_from_slice(&chunk);
            }
        }
        Ok(total)
    }
}
