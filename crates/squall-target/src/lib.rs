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
//! | `/v1/chat/completions?ttft_ms=F&itl_ms=M` | an OpenAI-compatible chat completion, streamed when |
//! |                 | the JSON body says `"stream": true`: `max_tokens` tokens (default 16), the |
//! |                 | first F ms after the request (default 200), each next M ms later (default 20), |
//! |                 | the usage chunk when `stream_options.include_usage`; else the whole answer |
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
    ("/v1/chat/completions?ttft_ms=200&itl_ms=20", "POST: a simulated LLM's chat completion, streamed token by token"),
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

/// A streamed body whose frames come at set times: `frame(i)` gives the i-th frame and how long after
/// the one before it is due (the first: after the response's start), None at the end. Hyper writes
/// each as a chunk. Times are kept from the deadlines, not from when a frame was written, so a late
/// frame does not delay the ones after it.
pub struct Paced {
    frame: Box<dyn FnMut(u64) -> Option<(Duration, Bytes)> + Send>,
    next: u64,
    pending: Option<Bytes>,
    due: Pin<Box<tokio::time::Sleep>>,
    done: bool,
}

impl Paced {
    fn new(frame: impl FnMut(u64) -> Option<(Duration, Bytes)> + Send + 'static) -> Paced {
        let due = Box::pin(tokio::time::sleep(Duration::ZERO));
        Paced { frame: Box::new(frame), next: 0, pending: None, due, done: false }
    }
}

impl hyper::body::Body for Paced {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.pending.is_none() && !self.done {
            let i = self.next;
            match (self.frame)(i) {
                Some((after, bytes)) => {
                    let at = self.due.deadline() + after;
                    self.due.as_mut().reset(at);
                    self.pending = Some(bytes);
                }
                None => self.done = true,
            }
        }
        if self.done {
            return Poll::Ready(None);
        }
        if self.due.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        self.next += 1;
        Poll::Ready(self.pending.take().map(|b| Ok(Frame::data(b))))
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }
}

/// `/sse`: `left` events `every` apart.
fn events(left: u64, every: Duration) -> Paced {
    Paced::new(move |i| (i < left).then(|| (every, Bytes::from(format!("id: {i}\ndata: event {i}\n\n")))))
}

/// What `/v1/chat/completions` reads of its request (OpenAI's fields; others ignored).
#[derive(Default)]
struct ChatRequest {
    stream: bool,
    max_tokens: u64,
    include_usage: bool,
    model: String,
}

impl ChatRequest {
    fn parse(body: &[u8]) -> ChatRequest {
        let v: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
        let max = v.get("max_completion_tokens").or_else(|| v.get("max_tokens")).and_then(|n| n.as_u64());
        ChatRequest {
            stream: v.get("stream").and_then(|b| b.as_bool()).unwrap_or(false),
            max_tokens: max.unwrap_or(16).min(100_000),
            include_usage: v.pointer("/stream_options/include_usage").and_then(|b| b.as_bool()).unwrap_or(false),
            model: v.get("model").and_then(|m| m.as_str()).unwrap_or("squall-demo").to_string(),
        }
    }
}

/// The simulated model's words, a token each.
const WORDS: [&str; 8] = [" The", " load", " held", " steady", " under", " the", " test", "."];

fn chunk(model: &str, delta: serde_json::Value, finish: Option<&str>) -> serde_json::Value {
    serde_json::json!({
        "id": "chatcmpl-squall", "object": "chat.completion.chunk", "created": 0, "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    })
}

/// `/v1/chat/completions` streamed: the role chunk at once, the tokens `ttft` then `itl` apart, the
/// finish chunk, the usage chunk if asked, `[DONE]`.
fn chat_stream(c: ChatRequest, ttft: Duration, itl: Duration) -> Paced {
    let n = c.max_tokens;
    let usage = serde_json::json!({"prompt_tokens": 8, "completion_tokens": n, "total_tokens": 8 + n});
    Paced::new(move |i| {
        let (after, data) = match i {
            0 => (Duration::ZERO, chunk(&c.model, serde_json::json!({"role": "assistant", "content": ""}), None)),
            i if i <= n => {
                let word = WORDS[((i - 1) % WORDS.len() as u64) as usize];
                (if i == 1 { ttft } else { itl }, chunk(&c.model, serde_json::json!({"content": word}), None))
            }
            i if i == n + 1 => (Duration::ZERO, chunk(&c.model, serde_json::json!({}), Some("length"))),
            i if i == n + 2 && c.include_usage => {
                let mut u = chunk(&c.model, serde_json::json!({}), None);
                u["choices"] = serde_json::json!([]);
                u["usage"] = usage.clone();
                (Duration::ZERO, u)
            }
            i if i == n + 2 + c.include_usage as u64 => return Some((Duration::ZERO, Bytes::from("data: [DONE]\n\n"))),
            _ => return None,
        };
        Some((after, Bytes::from(format!("data: {data}\n\n"))))
    })
}

/// `/v1/chat/completions` whole: the answer after `ttft` and every token's `itl`.
async fn chat_whole(c: ChatRequest, ttft: Duration, itl: Duration) -> Response<Full<Bytes>> {
    let n = c.max_tokens;
    tokio::time::sleep(ttft + itl * n.saturating_sub(1) as u32).await;
    let text: String = (0..n).map(|i| WORDS[(i % WORDS.len() as u64) as usize]).collect();
    let body = serde_json::json!({
        "id": "chatcmpl-squall", "object": "chat.completion", "created": 0, "model": c.model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "length"}],
        "usage": {"prompt_tokens": 8, "completion_tokens": n, "total_tokens": 8 + n},
    });
    let mut r = reply(StatusCode::OK, body.to_string());
    r.headers_mut().insert(hyper::header::CONTENT_TYPE, "application/json".parse().unwrap());
    r
}

type Body = Either<Full<Bytes>, Paced>;

fn ms_param(req: &Request<Incoming>, key: &str, default: f64) -> Duration {
    Duration::from_secs_f64(query_param(req, key).unwrap_or(default).clamp(0.0, 3_600_000.0) / 1000.0)
}

fn event_stream(body: Paced) -> Response<Body> {
    let mut r = Response::new(Either::Right(body));
    r.headers_mut().insert("content-type", hyper::header::HeaderValue::from_static("text/event-stream"));
    r.headers_mut().insert("cache-control", hyper::header::HeaderValue::from_static("no-cache"));
    r
}

async fn route(req: Request<Incoming>, counts: Arc<ws::Counts>) -> Result<Response<Body>, Infallible> {
    match req.uri().path() {
        "/sse" => {
            let (every, left) = (ms_param(&req, "ms", 100.0), query_param(&req, "events").unwrap_or(10u64));
            Ok(event_stream(events(left, every)))
        }
        "/v1/chat/completions" => {
            let (ttft, itl) = (ms_param(&req, "ttft_ms", 200.0), ms_param(&req, "itl_ms", 20.0));
            let body = req.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
            let c = ChatRequest::parse(&body);
            Ok(if c.stream {
                event_stream(chat_stream(c, ttft, itl))
            } else {
                chat_whole(c, ttft, itl).await.map(Either::Left)
            })
        }
        _ => handle(req, counts).await.map(|r| r.map(Either::Left)),
    }
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
