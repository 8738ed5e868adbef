//! Squall's load-generation engine. Plain Rust, no Python: the PyO3 crate wraps it.
//!
//! Folders by responsibility, each depending only on those listed before it:
//! - `types`: the few types everything shares (stop reasons, start errors); a leaf.
//! - `stats`: HDR recording per endpoint and per second, the live per-second stream, send lag, the
//!   typed result document and its lossless merge.
//! - `net`: name resolution, TCP and TLS connections.
//! - `http`: requests prepared once, the HTTP/1.1 exchange, HTTP/2.
//! - `ws`: WebSocket: the opening handshake, then messages and their replies on the connection.
//! - `run`: the run core: one lifecycle (start, progress, stop, result) for every kind of load, the
//!   precise clock, the open model's schedule and dispatch.
//! - the kinds of load on top of it: `bench` (one URL over N connections), `mqtt` (simulated
//!   devices), `script` (requests and MQTT operations of Python users).

pub mod bench;
pub mod http;
pub mod mqtt;
pub mod net;
pub mod run;
pub mod script;
pub mod stats;
pub mod types;
pub mod ws;

pub use bench::config::{Arrival, BenchConfig};
pub use stats::result::RunResult;
pub use types::{StartError, StopReason, VERSION};
