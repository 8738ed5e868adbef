//! HTTP: requests prepared once (`request`), what came back (`response`), the lean HTTP/1.1 exchange
//! (`h1`), HTTP/2 over the `h2` crate for scripted users (`h2`), bench's own lean HTTP/2 (`h2lean`),
//! Server-Sent Events parsed as they arrive (`sse`), and the tokens of a language model's streamed
//! answer read from them (`tokens`).

pub mod h1;
pub mod h2;
pub mod h2lean;
pub mod query;
pub mod request;
pub mod response;
pub mod sse;
pub mod tokens;

use crate::stats::Failure;
use std::cell::Cell;
use std::future::Future;
use std::time::Duration;

/// How often, in all, an HTTP/2 request the server refused unprocessed goes before it counts as
/// failed (both HTTP/2 clients).
pub(crate) const TRIES: usize = 3;

/// Opens an HTTP/2 connection slot's connection with `connecting` true meanwhile, so that a watchdog
/// can tell a connect timeout from a request timeout, as it does for HTTP/1.1; `open` reports how
/// long a new connect took (None: another stream had opened it), and `on_connect` is told.
pub(crate) async fn opening<T>(
    connecting: &Cell<bool>,
    on_connect: &mut impl FnMut(Duration),
    open: impl Future<Output = Result<(T, Option<Duration>), Failure>>,
) -> Result<T, Failure> {
    connecting.set(true);
    let opened = open.await;
    connecting.set(false);
    let (conn, took) = opened?;
    if let Some(t) = took {
        on_connect(t);
    }
    Ok(conn)
}
