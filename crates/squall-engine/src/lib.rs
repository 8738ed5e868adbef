//! Squall's load-generation engine. Plain Rust, no Python: the PyO3 crate wraps it.
//!
//! One tokio current-thread runtime per worker thread (like wrk's one event loop per thread), a lean
//! HTTP/1.1 exchange over tokio with `httparse`, HTTP/2 through `h2`, TLS through rustls, and one HDR
//! histogram per endpoint and per second.

pub mod config;
pub mod dispatch;
pub mod h2client;
pub mod http1;
pub mod merge;
pub mod mqtt;
pub mod net;
pub mod pacer;
pub mod request;
pub mod result;
pub mod runner;
pub mod session;
pub mod stats;
pub mod tls;
pub mod worker;

pub use config::{Arrival, BenchConfig};
pub use result::RunResult;
pub use runner::{Progress, Run, StartError};

pub const VERSION: &str = env!("CARGO_PKG_VERSION");
