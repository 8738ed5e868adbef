//! The built-in demo target: a small HTTP/1.1 server (hyper) on 127.0.0.1 with endpoints that behave
//! the ways real services do, so `squall demo` shows real output with nothing installed, and an
//! embedded MQTT broker (`broker`).
//!
//! | path            | behaviour                                                        |
//! |-----------------|------------------------------------------------------------------|
//! | `/`, `/fixed`   | 200 at once, a short body                                        |
//! | `/slow?ms=N`    | 200 after N ms (default 100)                                     |
//! | `/jitter`       | 200 after a random 0–20 ms                                       |
//! | `/flaky?p=F`    | 500 with probability F (default 0.05), else 200                  |
//! | `/fail`         | 503 always                                                       |
//! | `/bytes?n=N`    | 200 with an N-byte body                                          |
//! | `/echo`         | 200 with the request body                                        |
//! | `/demo`         | what the demo loads: mostly a few ms, 1% slow (80 ms), 3% 500s   |
//! | `/sse?events=N&ms=M` | Server-Sent Events: N events (default 10), M ms apart (default 100), chunked |
//! | `/ws`           | WebSocket (`ws`): every text or binary message echoed, pings     |
//! |                 | answered, a close answered; `?delay_ms=N` echoes N ms late       |
//! | `/ws/stats`     | JSON: WebSocket connections open and opened, messages echoed     |

pub mod broker;
pub mod ws;

use bytes::Bytes;
use http_body_util::{BodyExt, Either, Full};
use hyper::body::{Frame, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rand::Rng;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

pub const ENDPOINTS: &[(&str, &str)] = &[
    ("/fixed", "200 at once"),
    ("/slow?ms=100", "200 after the given milliseconds"),
    ("/jitter", "200 after a random 0-20 ms"),
    ("/flaky?p=0.05", "500 with the given probability"),
    ("/fail", "503 always"),
    ("/bytes?n=1024", "an n-byte body"),
    ("/echo", "the request body back"),
    ("/demo", "a few ms, 1% slow, 3% failures"),
    ("/sse?events=10&ms=100", "Server-Sent Events: n events, ms apart"),
    ("/ws?delay_ms=0", "WebSocket: each message echoed after the given milliseconds"),
    ("/ws/stats", "WebSocket connections and messages echoed so far, JSON"),
];

pub struct DemoTarget {
    pub addr: SocketAddr,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl DemoTarget {
    /// Starts serving on 127.0.0.1:`port` (0 picks a free port) in a background thread.
    pub fn start(port: u16) -> std::io::Result<DemoTarget> {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
        let listener = rt.block_on(TcpListener::bind(("127.0.0.1", port)))?;
        let addr = listener.local_addr()?;
        let (tx, rx) = oneshot::channel();
        let thread = std::thread::Builder::new().name("squall-demo-target".into()).spawn(move || {
            rt.block_on(serve(listener, rx));
        })?;
        Ok(DemoTarget { addr, shutdown: Some(tx), thread: Some(thread) })
    }

    pub fn stop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for DemoTarget {
    fn drop(&mut self) {
        self.stop();
    }
}

async fn serve(listener: TcpListener, mut shutdown: oneshot::Receiver<()>) {
    let counts = Arc::new(ws::Counts::default());
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => continue, // e.g. out of file descriptors for a moment
            },
            _ = &mut shutdown => return,
        };
        let _ = stream.set_nodelay(true);
        let counts = counts.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req| route(req, counts.clone()));
            // with_upgrades: `/ws` takes the connection over once its 101 is written.
            let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).with_upgrades().await;
        });
    }
}

fn query_param<T: std::str::FromStr>(req: &Request<Incoming>, key: &str) -> Option<T> {
    req.uri().query()?.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        if k == key {
            v.parse().ok()
        } else {
            None
        }
    })
}

fn reply(status: StatusCode, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    r
}

async fn sleep_ms(ms: f64) {
    tokio::time::sleep(Duration::from_secs_f64(ms / 1000.0)).await;
}

/// `/sse`'s body: `left` events `every` apart, each sent as it falls due (hyper writes it as a chunk).
struct Events {
    left: u64,
    next: u64,
    every: Duration,
    due: Pin<Box<tokio::time::Sleep>>,
}

impl hyper::body::Body for Events {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.left == 0 {
            return Poll::Ready(None);
        }
        if self.due.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        let next = self.due.deadline() + self.every;
        self.due.as_mut().reset(next);
        let i = self.next;
        (self.left, self.next) = (self.left - 1, i + 1);
        Poll::Ready(Some(Ok(Frame::data(Bytes::from(format!("id: {i}\ndata: event {i}\n\n"))))))
    }

    fn is_end_stream(&self) -> bool {
        self.left == 0
    }
}

type Body = Either<Full<Bytes>, Events>;

async fn route(req: Request<Incoming>, counts: Arc<ws::Counts>) -> Result<Response<Body>, Infallible> {
    if req.uri().path() != "/sse" {
        return handle(req, counts).await.map(|r| r.map(Either::Left));
    }
    let every = Duration::from_secs_f64(query_param(&req, "ms").unwrap_or(100.0f64).clamp(0.0, 3_600_000.0) / 1000.0);
    let left = query_param(&req, "events").unwrap_or(10u64);
    let due = Box::pin(tokio::time::sleep(every));
    let mut r = Response::new(Either::Right(Events { left, next: 0, every, due }));
    r.headers_mut().insert("content-type", hyper::header::HeaderValue::from_static("text/event-stream"));
    r.headers_mut().insert("cache-control", hyper::header::HeaderValue::from_static("no-cache"));
    Ok(r)
}

async fn handle(req: Request<Incoming>, counts: Arc<ws::Counts>) -> Result<Response<Full<Bytes>>, Infallible> {
    let ok = StatusCode::OK;
    let resp = match req.uri().path() {
        "/ws" => {
            let delay = Duration::from_millis(query_param(&req, "delay_ms").unwrap_or(0u64));
            ws::upgrade(req, delay, counts)
        }
        "/ws/stats" => {
            let mut r = reply(ok, counts.json());
            r.headers_mut().insert(hyper::header::CONTENT_TYPE, "application/json".parse().unwrap());
            r
        }
        "/" | "/fixed" => reply(ok, "ok\n"),
        "/slow" => {
            sleep_ms(query_param(&req, "ms").unwrap_or(100.0)).await;
            reply(ok, "slow\n")
        }
        "/jitter" => {
            let ms = rand::rng().random_range(0.0..20.0);
            sleep_ms(ms).await;
            reply(ok, "jitter\n")
        }
        "/flaky" => {
            let p: f64 = query_param(&req, "p").unwrap_or(0.05);
            if rand::rng().random_bool(p.clamp(0.0, 1.0)) {
                reply(StatusCode::INTERNAL_SERVER_ERROR, "flaky failure\n")
            } else {
                reply(ok, "ok\n")
            }
        }
        "/fail" => reply(StatusCode::SERVICE_UNAVAILABLE, "unavailable\n"),
        "/bytes" => reply(ok, vec![b'x'; query_param(&req, "n").unwrap_or(1024usize).min(64 << 20)]),
        "/echo" => {
            let body = req.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
            reply(ok, body)
        }
        "/demo" => {
            let (slow, fail, ms) = {
                let mut rng = rand::rng();
                (rng.random_bool(0.01), rng.random_bool(0.03), rng.random_range(0.5..4.0))
            };
            sleep_ms(if slow { 80.0 } else { ms }).await;
            if fail {
                reply(StatusCode::INTERNAL_SERVER_ERROR, "demo failure\n")
            } else {
                reply(ok, "{\"status\":\"ok\"}\n")
            }
        }
        _ => reply(StatusCode::NOT_FOUND, "not found\n"),
    };
    Ok(resp)
}
