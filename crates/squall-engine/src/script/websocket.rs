//! WebSocket for scripted users: each connection is a task on the script's engine thread that takes
//! the script's operations as they come, each run as a task of its own, so that a send goes out while
//! a receive waits (python-socketio's client reads in one greenlet while the user sends from another),
//! and a reader task beside them takes every message as it comes. One crossing from Python per
//! operation; receives are served in the order they were asked for, each the oldest message unread.
//!
//! Two kinds of connection (`Mode`):
//! - `WebSocketUser`'s (`Mode::User`, one a user, keyed by the user): the engine times each operation
//!   and records it with Locust's socket vocabulary: `WS` the connect (its handshake), `WSC` an exchange
//!   (a message and its reply, as Locust's Socket.IO `call`), `WSS` a send (until written), `WSR` a
//!   receive (from the call until the message was there: 0 if it was waiting). A connection that broke
//!   opens again at the next operation that needs it (its connect counted again), as a browser's page
//!   would reconnect. A message the user has not asked for waits in the user's inbox, at most
//!   `MAX_INBOX` of them (the oldest dropped past it, each drop a failure of `WSR`).
//! - websocket-client's (`Mode::Client`, squall.contrib.websocket_client: a locustfile's
//!   `websocket.create_connection`, any number a user, keyed by their own ids): nothing is recorded
//!   (the file fires its own events, as under Locust), a broken connection stays broken, a server's
//!   close frame is handed to one receive (websocket-client's `recv` returns "" for it), and the
//!   reader stops reading while `MAX_INBOX` messages wait unread, as a socket nobody reads pushes back
//!   on the server: nothing is dropped.
//!
//! Connects and closes run one at a time (`Socket::changing`), the others beside them. When the user
//! stops (its channel closes), operations still in progress end unrecorded, each completed with an
//! error for whoever still waits (a library's reading greenlet), and the connection says goodbye
//! (close 1000, then reading until the server's close, `GOODBYE_WAIT` at most), unless a frame was
//! left half written (then it is dropped).

use super::engine::Engine;
use super::Completion;
use crate::mqtt::script::Sink;
use crate::net::{self, Connector};
use crate::stats::{Failure, FailureKind, Outcome};
use crate::ws::{self, is_close_frame, Handshake, Incoming, Reader, Writer, WsOp};
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, Notify};
use tokio::task::JoinHandle;

/// Messages a connection's inbox keeps unread.
pub const MAX_INBOX: usize = 1_000;

/// How a connection behaves (module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mode {
    User,
    Client,
}

/// The completion's `status` for a server's close frame handed to a receive (its opcode).
const CLOSE_OPCODE: u16 = 8;

/// What the reader hands the operations: messages in order of arrival (numbered), or the end.
#[derive(Default)]
struct Inbox {
    messages: RefCell<VecDeque<(u64, Incoming)>>,
    /// Messages that arrived so far on this connection (the next one's number).
    arrived: Cell<u64>,
    /// Why the connection ended, once it did.
    ended: RefCell<Option<Failure>>,
    /// (`Mode::Client`) the server's close frame was handed to a receive already.
    close_told: Cell<bool>,
    /// The end was an operation's failure (recorded with it): not recorded again (`Socket::usable`).
    end_told: Cell<bool>,
    changed: Notify,
    /// (`Mode::Client`) a message was taken: the reader may read again.
    room: Notify,
    dropped: Cell<u64>,
    /// The receives waiting, by ticket, in the order they were asked for: the first takes the next message.
    line: RefCell<VecDeque<u64>>,
    tickets: Cell<u64>,
}

struct Open {
    writer: Rc<Writer>,
    inbox: Rc<Inbox>,
    reader: JoinHandle<()>,
    /// The default statistics' name: the URL's path.
    path: Rc<str>,
}

impl Drop for Open {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// Where the connection goes (again, after a break, for `Mode::User`).
#[derive(Clone)]
struct Target {
    url: String,
    headers: Vec<(String, String)>,
    name: Option<String>,
    timeout: Duration,
}

struct Socket {
    engine: Rc<Engine>,
    mode: Mode,
    open: RefCell<Option<Rc<Open>>>,
    target: RefCell<Option<Target>>,
    /// Connects and closes, one at a time in the order asked, so that an operation after them finds
    /// the connection they leave.
    changing: tokio::sync::Mutex<()>,
    /// The name the user's receives were last recorded under (`WSR`): messages dropped from a full
    /// inbox are failures of that row, not of one named by the connection's path.
    receive_name: RefCell<Option<String>>,
}

impl WsOp {
    fn id(&self) -> u64 {
        match self {
            WsOp::Connect { id, .. }
            | WsOp::Send { id, .. }
            | WsOp::Control { id, .. }
            | WsOp::Exchange { id, .. }
            | WsOp::Receive { id, .. }
            | WsOp::Close { id, .. } => *id,
            WsOp::Cancel { op } => *op,
        }
    }
}

/// One connection's operations, each a task of its own as it comes, until the channel closes (module doc).
pub(super) async fn socket_task(engine: Rc<Engine>, mode: Mode, mut rx: mpsc::UnboundedReceiver<WsOp>) {
    let socket = Rc::new(Socket {
        engine,
        mode,
        open: RefCell::new(None),
        target: RefCell::new(None),
        changing: tokio::sync::Mutex::new(()),
        receive_name: RefCell::new(None),
    });
    let mut running: HashMap<u64, JoinHandle<()>> = HashMap::new();
    while let Some(op) = rx.recv().await {
        running.retain(|_, h| !h.is_finished());
        if let WsOp::Cancel { op } = op {
            // Still in progress: ended, its place in line given up (`Place`), and completed as cancelled,
            // so that exactly one completion comes for every operation (done already: it came).
            if let Some(h) = running.remove(&op) {
                h.abort();
                socket.done(op, Duration::ZERO, Some(Failure::new(FailureKind::Closed, CANCELLED)), None);
            }
            continue;
        }
        let id = op.id();
        let s = socket.clone();
        running.insert(id, tokio::task::spawn_local(async move { s.run(op).await }));
    }
    running.retain(|_, h| !h.is_finished());
    let engine = socket.engine.clone();
    for (id, h) in running {
        h.abort();
        if mode == Mode::User {
            engine.cancelled.set(engine.cancelled.get() + 1);
        }
        let stopped = Failure::new(FailureKind::Closed, "(the user stopped)");
        socket.done(id, Duration::ZERO, Some(stopped), None);
    }
    // Goodbye, the reader reading on until the server's close: a socket closed with what the server
    // sent still unread is reset (RST), and the server then loses what it had not read yet of this
    // client's last messages (measured: 6 of 735 Socket.IO emits lost in a run of 3 users; 0 in
    // 5 runs since).
    socket.close_open(GOODBYE_WAIT, 1000, b"").await;
}

/// How long a connection whose user stopped (or whose script forgot it) waits for the server's close
/// after its own: websocket-client's `close` default. Nobody waits for it: the run's end does not.
const GOODBYE_WAIT: Duration = Duration::from_secs(3);

/// A receive's place in line: given up when the receive ends, however it ends (a message, a timeout,
/// cancelled), and the next in line told.
struct Place<'a> {
    inbox: &'a Inbox,
    ticket: u64,
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        self.inbox.line.borrow_mut().retain(|t| *t != self.ticket);
        self.inbox.changed.notify_waiters();
    }
}

impl Socket {
    async fn run(self: Rc<Self>, op: WsOp) {
        match op {
            WsOp::Connect { id, url, headers, name, timeout } => {
                let _one = self.changing.lock().await;
                self.close_open(Duration::ZERO, 1000, b"").await;
                *self.target.borrow_mut() = Some(Target { url, headers, name, timeout });
                let t0 = Instant::now();
                let result = self.connect().await;
                self.done(id, t0.elapsed(), result.err(), None);
            }
            WsOp::Send { id, payload, binary, name } => {
                let t0 = Instant::now();
                let bytes = payload.len() as u64;
                let result = match self.ensure_open().await {
                    Ok(open) => {
                        let sent = open.writer.send(payload, binary).await;
                        if sent.is_err() {
                            self.broken(&open);
                        }
                        sent
                    }
                    Err(f) => Err(f),
                };
                let took = t0.elapsed();
                let name = self.name_of(name);
                self.record("WSS", &name, took, bytes, result.as_ref().err());
                self.done(id, took, result.err(), None);
            }
            WsOp::Control { id, ping, payload } => {
                let t0 = Instant::now();
                let result = match self.ensure_open().await {
                    Ok(open) => open.writer.control(ping, payload).await,
                    Err(f) => Err(f),
                };
                self.done(id, t0.elapsed(), result.err(), None);
            }
            WsOp::Exchange { id, payload, binary, name, timeout } => {
                let t0 = Instant::now();
                let mut used = None;
                let result = async {
                    let open = self.ensure_open().await?;
                    used = Some(open.clone());
                    let after = open.inbox.arrived.get();
                    open.writer.send(payload, binary).await?;
                    wait_for(&open.inbox, after, t0 + timeout).await.map(Some)
                }
                .await;
                self.finish_wait("WSC", id, name, t0, result, used);
            }
            WsOp::Receive { id, name, timeout } => {
                let t0 = Instant::now();
                let mut used = None;
                let result = async {
                    let open = self.ensure_open().await?;
                    used = Some(open.clone());
                    receive(&open.inbox, timeout.map(|t| t0 + t), self.mode).await
                }
                .await;
                *self.receive_name.borrow_mut() = Some(self.name_of(name.clone()));
                self.finish_wait("WSR", id, name, t0, result, used);
            }
            WsOp::Close { id, code, reason, wait } => {
                let _one = self.changing.lock().await;
                let t0 = Instant::now();
                self.close_open(wait, code, &reason).await;
                if self.mode == Mode::User {
                    *self.target.borrow_mut() = None;
                }
                self.done(id, t0.elapsed(), None, None);
            }
            WsOp::Cancel { .. } => {} // (taken by `socket_task`)
        }
    }

    /// Records a waited operation (exchange, receive) and completes it with the message (None: the
    /// server's close frame).
    fn finish_wait(
        &self,
        method: &str,
        id: u64,
        name: Option<String>,
        t0: Instant,
        result: Result<Option<Incoming>, Failure>,
        used: Option<Rc<Open>>,
    ) {
        let took = t0.elapsed();
        let name = self.name_of(name);
        let bytes = result.as_ref().map_or(0, |m| m.as_ref().map_or(0, |m| m.data.len() as u64));
        self.record(method, &name, took, bytes, result.as_ref().err());
        if let (Err(f), Some(open)) = (&result, &used) {
            if f.kind != FailureKind::Timeout {
                self.broken(open); // (a timeout leaves the connection as it was: a receive may poll)
            }
        }
        match result {
            Ok(Some(m)) => self.done(id, took, None, Some(m)),
            Ok(None) => self.push(id, took, CLOSE_OPCODE, Vec::new(), None),
            Err(f) => self.done(id, took, Some(f), None),
        }
    }

    fn name_of(&self, name: Option<String>) -> String {
        name.or_else(|| self.open.borrow().as_ref().map(|o| o.path.to_string()))
            .or_else(|| self.target.borrow().as_ref().map(|t| path_of(&t.url)))
            .unwrap_or_else(|| "(not connected)".into())
    }

    /// Records an operation in the run's statistics (`Mode::User` only: a websocket-client file fires
    /// its own events).
    fn record(&self, method: &str, name: &str, took: Duration, bytes: u64, failure: Option<&Failure>) {
        if self.mode != Mode::User {
            return;
        }
        let outcome = match failure {
            None => Outcome::Judged { status: 0, body_bytes: bytes, failure: None },
            Some(f) => Outcome::Failed(f.clone()),
        };
        self.engine.record(method, name, took, &outcome);
    }

    /// The operation's completion for the script: the message (status 1 text, 2 binary: its opcode),
    /// or the failure (its kind, and for a refused handshake the HTTP status).
    fn done(&self, id: u64, took: Duration, error: Option<Failure>, message: Option<Incoming>) {
        match (error, message) {
            (Some(f), _) => self.engine.push(failed(id, took, &f)),
            (None, Some(m)) => self.push(id, took, if m.binary { 2 } else { 1 }, m.data, None),
            (None, None) => self.push(id, took, 0, Vec::new(), None),
        }
    }

    fn push(&self, id: u64, took: Duration, status: u16, body: Vec<u8>, error: Option<String>) {
        self.engine.push(Completion {
            id,
            status,
            body,
            elapsed_us: took.as_micros() as u64,
            error,
            ..Completion::default()
        });
    }

    /// The connection an operation uses: the open one, or (`Mode::User`) a new one to the target.
    async fn ensure_open(&self) -> Result<Rc<Open>, Failure> {
        if let Some(open) = self.usable() {
            return Ok(open);
        }
        let _one = self.changing.lock().await;
        if let Some(open) = self.usable() {
            return Ok(open); // (opened by the operation ahead)
        }
        if self.mode == Mode::Client {
            return Err(self.closed_here());
        }
        if self.target.borrow().is_none() {
            return Err(Failure::new(FailureKind::WebSocket, "not connected: call connect() first"));
        }
        self.connect().await
    }

    /// The open connection, if an operation may use it: a `Mode::User` connection that ended, its
    /// messages all taken, is dropped (the next operation opens another); a `Mode::Client` one is kept
    /// (its receives meet the end, its sends fail).
    ///
    /// A `Mode::User` connection the server ended while no operation waited on it (a close frame
    /// between two calls, a reset) is a failure of its `WS` row, with the close's code and reason, once:
    /// the next operation's silent reconnect hid a server that closed every connection with 1011. A
    /// close 1000 (normal closure) is the server's to make and is not one.
    fn usable(&self) -> Option<Rc<Open>> {
        let open = self.open.borrow().clone()?;
        let spent = open.inbox.ended.borrow().is_some() && open.inbox.messages.borrow().is_empty();
        if spent && self.mode == Mode::User {
            let ended = open.inbox.ended.borrow().clone();
            if let Some(f) = ended.filter(|f| !open.inbox.end_told.get() && !normal_close(f)) {
                let endpoint = self.engine.endpoint("WS", &open.path);
                self.engine.recorder.borrow_mut().fail_untimed(Instant::now(), endpoint, f, 1);
            }
            self.drop_open();
            return None;
        }
        Some(open)
    }

    /// Opens the connection to the target, timed and recorded as `WS` (its name).
    async fn connect(&self) -> Result<Rc<Open>, Failure> {
        let target = self.target.borrow().clone().expect("a target to connect to");
        let t0 = Instant::now();
        let tls = self.engine.ws_tls();
        let result = tokio::time::timeout(target.timeout, open(&target.url, &target.headers, tls)).await;
        let result = result.unwrap_or_else(|_| Err(Failure::new(FailureKind::ConnectTimeout, "")));
        let name = target.name.clone().unwrap_or_else(|| path_of(&target.url));
        self.record("WS", &name, t0.elapsed(), 0, result.as_ref().err());
        let (reader, writer) = result?;
        let inbox = Rc::new(Inbox::default());
        let reader = tokio::task::spawn_local(read(reader, inbox.clone(), self.mode));
        let open = Rc::new(Open { writer, inbox, reader, path: path_of(&target.url).into() });
        *self.open.borrow_mut() = Some(open.clone());
        Ok(open)
    }

    /// An operation failed on `open`: a `Mode::User` connection is dropped, if it is still the one open.
    fn broken(&self, open: &Rc<Open>) {
        let current = self.open.borrow().as_ref().is_some_and(|o| Rc::ptr_eq(o, open));
        if current && self.mode == Mode::User {
            self.drop_open();
        }
    }

    fn drop_open(&self) {
        let taken = self.open.borrow_mut().take();
        if let Some(o) = taken {
            self.end(&o, self.closed_here());
        }
    }

    /// What an operation meets on a connection the script closed or dropped: websocket-client's
    /// closed socket, or for `WebSocketUser` a failure that does not blame the server.
    fn closed_here(&self) -> Failure {
        match self.mode {
            Mode::Client => Failure::new(FailureKind::Closed, CLOSED_BY_SCRIPT),
            Mode::User => Failure::new(FailureKind::WebSocket, "the connection was closed or replaced meanwhile"),
        }
    }

    /// Closes the open connection, if any: a close frame, then up to `wait` for the server's close (or
    /// the connection's end) before it is dropped. Operations still waiting on it fail.
    async fn close_open(&self, wait: Duration, code: u16, reason: &[u8]) {
        let taken = self.open.borrow_mut().take();
        let Some(o) = taken else { return };
        let said = o.writer.close_with(code, reason).await;
        if said && !wait.is_zero() {
            // Nobody reads what comes now (websocket-client's close reads past it to the close): a
            // reader waiting for room in the inbox reads on.
            o.inbox.messages.borrow_mut().clear();
            o.inbox.room.notify_one();
            let deadline = Instant::now() + wait;
            loop {
                let changed = o.inbox.changed.notified();
                if o.inbox.ended.borrow().is_some() {
                    break;
                }
                if tokio::time::timeout_at(deadline.into(), changed).await.is_err() {
                    break;
                }
            }
        }
        self.end(&o, self.closed_here());
    }

    /// The connection is done with: its reader stops, and a receive still waiting meets `why` (unless
    /// the connection had ended already), after the messages that came.
    fn end(&self, o: &Open, why: Failure) {
        o.reader.abort();
        o.inbox.ended.borrow_mut().get_or_insert(why);
        o.inbox.changed.notify_waiters();
        let n = o.inbox.dropped.get();
        if n > 0 {
            let f = Failure::new(FailureKind::TooLarge, format!("{n} messages past an unread inbox of {MAX_INBOX}"));
            let name = self.receive_name.borrow().clone().unwrap_or_else(|| o.path.to_string());
            self.engine.recorder.borrow_mut().fail_untimed(Instant::now(), self.engine.endpoint("WSR", &name), f, n);
        }
    }
}

/// A server's close frame with code 1000 (normal closure).
fn normal_close(f: &Failure) -> bool {
    is_close_frame(f) && (f.detail == "(WebSocket close 1000)" || f.detail.starts_with("(WebSocket close 1000:"))
}

/// A failed operation's completion: its message, its kind in `name` (a WebSocket operation has no
/// statistics' name to hand back; websocket-client's exception is chosen by the kind) and, for a
/// refused handshake, the HTTP status in `status`.
pub(super) fn failed(id: u64, took: Duration, f: &Failure) -> Completion {
    Completion {
        id,
        status: f.status,
        elapsed_us: took.as_micros() as u64,
        error: Some(f.message()),
        name: f.kind.as_str().to_string(),
        ..Completion::default()
    }
}

/// The failure's detail for an operation the script stopped waiting for (`WsOp::Cancel`).
pub const CANCELLED: &str = "(cancelled)";

/// The failure's detail for an operation on a connection the script closed (or that was dropped):
/// websocket-client's "socket is already closed.".
pub const CLOSED_BY_SCRIPT: &str = "(closed by the script)";

/// The next message that arrived after message number `after` (the oldest waiting, for `after` 0),
/// taken from the inbox; by `deadline`, or the connection's end.
async fn wait_for(inbox: &Inbox, after: u64, deadline: Instant) -> Result<Incoming, Failure> {
    loop {
        let changed = inbox.changed.notified();
        {
            let mut messages = inbox.messages.borrow_mut();
            if let Some(i) = messages.iter().position(|(n, _)| *n >= after) {
                inbox.room.notify_one();
                return Ok(messages.remove(i).expect("found").1);
            }
        }
        if let Some(f) = inbox.ended.borrow().clone() {
            inbox.end_told.set(true);
            return Err(f);
        }
        if tokio::time::timeout_at(deadline.into(), changed).await.is_err() {
            return Err(Failure::new(FailureKind::Timeout, ""));
        }
    }
}

/// The oldest unread message, for the first receive in line (receives are served in the order they
/// were asked for); by `deadline` (None: no limit), or the connection's end. `Ok(None)`: the server's
/// close frame (`Mode::Client`, to one receive).
async fn receive(inbox: &Inbox, deadline: Option<Instant>, mode: Mode) -> Result<Option<Incoming>, Failure> {
    let ticket = inbox.tickets.get();
    inbox.tickets.set(ticket + 1);
    inbox.line.borrow_mut().push_back(ticket);
    let _place = Place { inbox, ticket };
    loop {
        let changed = inbox.changed.notified();
        if inbox.line.borrow().front() == Some(&ticket) {
            if let Some((_, m)) = inbox.messages.borrow_mut().pop_front() {
                inbox.room.notify_one();
                return Ok(Some(m));
            }
            if let Some(f) = inbox.ended.borrow().clone() {
                if mode == Mode::Client && is_close_frame(&f) && !inbox.close_told.replace(true) {
                    return Ok(None);
                }
                inbox.end_told.set(true);
                return Err(f);
            }
        }
        match deadline {
            Some(d) => {
                if tokio::time::timeout_at(d.into(), changed).await.is_err() {
                    return Err(Failure::new(FailureKind::Timeout, ""));
                }
            }
            None => changed.await,
        }
    }
}

/// The reader: every message into the inbox, until the connection ends. A `Mode::Client` reader waits
/// while the inbox is full (module doc); a `Mode::User` one drops the oldest.
async fn read(mut reader: Reader, inbox: Rc<Inbox>, mode: Mode) {
    loop {
        if mode == Mode::Client {
            while inbox.messages.borrow().len() >= MAX_INBOX {
                inbox.room.notified().await;
            }
        }
        match reader.next().await {
            Ok(m) => {
                let n = inbox.arrived.get();
                inbox.arrived.set(n + 1);
                let mut messages = inbox.messages.borrow_mut();
                if messages.len() >= MAX_INBOX {
                    messages.pop_front();
                    inbox.dropped.set(inbox.dropped.get() + 1);
                }
                messages.push_back((n, m));
            }
            Err(f) => {
                *inbox.ended.borrow_mut() = Some(f);
                inbox.changed.notify_waiters();
                return;
            }
        }
        inbox.changed.notify_waiters();
    }
}

/// Resolves, connects and opens the WebSocket at `url` (ws:// or wss://).
async fn open(
    url: &str,
    headers: &[(String, String)],
    tls: Arc<rustls::ClientConfig>,
) -> Result<(Reader, Rc<Writer>), Failure> {
    let usage = |e: String| Failure::new(FailureKind::WebSocket, e);
    if !ws::is_ws_url(url) {
        return Err(usage(format!("'{url}' is not a ws:// or wss:// URL")));
    }
    let http = url::Url::parse(&ws::http_url(url)).map_err(|e| usage(format!("invalid URL '{url}': {e}")))?;
    let host = http.host_str().unwrap_or("").trim_matches(|c| c == '[' || c == ']').to_string();
    let https = http.scheme() == "https";
    let port = http.port_or_known_default().unwrap_or(if https { 443 } else { 80 });
    crate::http::request::check_headers(headers).map_err(usage)?;
    let handshake = Handshake::new(&http, headers).map_err(usage)?;
    let addrs = net::resolve_async(&host, port).await.map_err(usage)?;
    let connector = Connector::new(addrs, https.then_some((tls, host.as_str()))).map_err(usage)?;
    let io = connector.connect(0).await?;
    ws::duplex::open(io, &handshake).await
}

fn path_of(url: &str) -> String {
    match url::Url::parse(&ws::http_url(url)) {
        Ok(u) => crate::http::request::path_and_query(&u),
        Err(_) => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arrive(inbox: &Inbox, text: &str) {
        let n = inbox.arrived.get();
        inbox.arrived.set(n + 1);
        inbox.messages.borrow_mut().push_back((n, Incoming { data: text.as_bytes().to_vec(), binary: false }));
        inbox.changed.notify_waiters();
    }

    fn text(got: Result<Option<Incoming>, Failure>) -> String {
        String::from_utf8(got.expect("a message").expect("not a close").data).expect("text")
    }

    /// Runs `f` on a current-thread runtime's local set (the script engine's kind).
    fn local<F: std::future::Future<Output = ()>>(f: F) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().expect("runtime");
        tokio::task::LocalSet::new().block_on(&rt, f);
    }

    #[test]
    fn receives_waiting_together_are_served_in_the_order_asked() {
        local(async {
            let inbox = Rc::new(Inbox::default());
            let mut waiting = Vec::new();
            for _ in 0..3 {
                let inbox = inbox.clone();
                waiting.push(tokio::task::spawn_local(async move { text(receive(&inbox, None, Mode::Client).await) }));
                tokio::task::yield_now().await; // (each takes its place in line before the next is asked)
            }
            for m in ["a", "b", "c"] {
                arrive(&inbox, m);
            }
            let mut got = Vec::new();
            for w in waiting {
                got.push(w.await.expect("joined"));
            }
            assert_eq!(got, ["a", "b", "c"]);
            assert!(inbox.line.borrow().is_empty());
        });
    }

    #[test]
    fn a_receive_given_up_leaves_its_message_to_the_next() {
        local(async {
            let inbox = Rc::new(Inbox::default());
            let first = {
                let inbox = inbox.clone();
                tokio::task::spawn_local(async move { receive(&inbox, None, Mode::Client).await.map(|_| ()) })
            };
            tokio::task::yield_now().await;
            let second = {
                let inbox = inbox.clone();
                tokio::task::spawn_local(async move { text(receive(&inbox, None, Mode::Client).await) })
            };
            tokio::task::yield_now().await;
            first.abort(); // (the script stopped waiting: `WsOp::Cancel`)
            assert!(first.await.is_err());
            arrive(&inbox, "kept");
            assert_eq!(second.await.expect("joined"), "kept");
        });
    }

    #[test]
    fn a_timed_out_receive_takes_nothing_and_the_close_frame_is_told_once() {
        local(async {
            let inbox = Rc::new(Inbox::default());
            let soon = Instant::now() + Duration::from_millis(20);
            let timed_out = receive(&inbox, Some(soon), Mode::Client).await;
            assert_eq!(timed_out.err().map(|f| f.kind), Some(FailureKind::Timeout));
            arrive(&inbox, "late");
            *inbox.ended.borrow_mut() = Some(Failure::new(FailureKind::Closed, "(WebSocket close 1001: bye)"));
            assert_eq!(text(receive(&inbox, None, Mode::Client).await), "late"); // the messages first
            assert!(matches!(receive(&inbox, None, Mode::Client).await, Ok(None))); // the close frame: ""
            let after = receive(&inbox, None, Mode::Client).await.expect_err("closed");
            assert_eq!(after.message(), "server closed the connection (WebSocket close 1001: bye)");
            // A WebSocketUser's receive meets the close as a failure at once.
            let user = Inbox::default();
            *user.ended.borrow_mut() = Some(Failure::new(FailureKind::Closed, "(WebSocket close 1001)"));
            assert!(receive(&user, None, Mode::User).await.is_err());
        });
    }
}
