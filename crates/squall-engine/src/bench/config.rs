//! What a `squall bench` run is asked to do.

use serde::{Deserialize, Serialize};
use std::time::Duration;

pub use crate::run::schedule::Arrival;

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BenchConfig {
    pub url: String,
    #[serde(default = "default_method")]
    pub method: String,
    /// Extra request headers, in order; they replace the defaults of the same name.
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    /// Stats name of the endpoint; defaults to the URL's path and query.
    #[serde(default)]
    pub name: Option<String>,
    /// Closed model: concurrent connections. Open model: the most connections the rate may use.
    #[serde(default = "default_connections")]
    pub connections: usize,
    /// Stop after exactly this many requests.
    #[serde(default)]
    pub requests: Option<u64>,
    /// Stop after this long (seconds).
    #[serde(default)]
    pub duration: Option<f64>,
    /// Open model: requests per second in total, independent of responses.
    #[serde(default)]
    pub rate: Option<f64>,
    #[serde(default)]
    pub arrival: Arrival,
    /// Ramp concurrency (closed) or rate (open) linearly from zero over this many seconds.
    #[serde(default)]
    pub ramp: Option<f64>,
    /// Per-request timeout (seconds), connect included.
    #[serde(default = "default_timeout")]
    pub timeout: f64,
    #[serde(default)]
    pub insecure: bool,
    #[serde(default)]
    pub http2: bool,
    /// HTTP/2: concurrent streams per connection.
    #[serde(default = "default_streams")]
    pub h2_streams: usize,
    #[serde(default = "default_true")]
    pub keepalive: bool,
    /// WebSocket (a `ws://` or `wss://` URL): send the message (the body) as binary, not text.
    #[serde(default)]
    pub binary: bool,
    /// Worker threads; default one per available core.
    #[serde(default)]
    pub threads: Option<usize>,
    /// Connect once before the run so that a dead target gives one clear error instead of a run of failures.
    #[serde(default = "default_true")]
    pub preflight: bool,
}

fn default_method() -> String {
    "GET".into()
}
fn default_connections() -> usize {
    50
}
fn default_timeout() -> f64 {
    30.0
}
fn default_streams() -> usize {
    1
}
fn default_true() -> bool {
    true
}

impl BenchConfig {
    pub fn from_json(s: &str) -> Result<Self, String> {
        serde_json::from_str(s).map_err(|e| format!("invalid engine configuration: {e}"))
    }

    pub fn timeout(&self) -> Duration {
        Duration::from_secs_f64(self.timeout)
    }

    pub fn duration(&self) -> Option<Duration> {
        self.duration.map(Duration::from_secs_f64)
    }

    pub fn ramp(&self) -> Duration {
        self.ramp.map(Duration::from_secs_f64).unwrap_or_default()
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.connections == 0 {
            return Err("connections must be at least 1".into());
        }
        if self.requests == Some(0) {
            return Err("the number of requests must be at least 1".into());
        }
        if let Some(r) = self.rate {
            if !(r > 0.0 && r.is_finite()) {
                return Err("the rate must be a positive number of requests per second".into());
            }
        }
        if self.requests.is_none() && self.duration.is_none() {
            return Err("give a number of requests or a duration".into());
        }
        if self.timeout.is_nan() || self.timeout <= 0.0 {
            return Err("the timeout must be positive".into());
        }
        if crate::ws::is_ws_url(&self.url) {
            if self.http2 {
                return Err("HTTP/2 is for http:// and https:// URLs, not WebSocket".into());
            }
            if !self.keepalive {
                return Err("a WebSocket keeps its connection: no keep-alive setting applies".into());
            }
        } else if self.binary {
            return Err("a binary message is for ws:// and wss:// URLs".into());
        }
        if self.h2_streams == 0 {
            return Err("HTTP/2 streams per connection must be at least 1".into());
        }
        Ok(())
    }
}
