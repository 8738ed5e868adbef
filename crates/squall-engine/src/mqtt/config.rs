//! What an MQTT run is asked to do. Deserialized from the JSON the Python front end builds.

use super::codec::Version;
use serde::{Deserialize, Serialize};
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ValueKind {
    /// Random letters and digits.
    Text,
    /// Random decimal digits.
    Number,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MqttConfig {
    /// mqtt://host:port or mqtts://host:port.
    pub broker: String,
    /// Simulated devices, each its own connection.
    #[serde(default = "one")]
    pub clients: usize,
    /// The first client's index (processes split the clients into ranges).
    #[serde(default)]
    pub first_client: usize,
    /// Messages per second per client; none: as fast as the in-flight window allows.
    #[serde(default)]
    pub rate: Option<f64>,
    /// Messages per client.
    #[serde(default)]
    pub messages: Option<u64>,
    /// Seconds of publishing.
    #[serde(default)]
    pub duration: Option<f64>,
    #[serde(default)]
    pub qos: u8,
    /// With `{client}`, `{id}` and `{seq}` placeholders.
    #[serde(default = "default_topic")]
    pub topic: String,
    #[serde(default = "default_value")]
    pub value: ValueKind,
    /// Characters per generated value.
    #[serde(default = "default_size")]
    pub size: usize,
    /// A fixed payload (from `--payload @file` or a literal), instead of generated values.
    #[serde(default)]
    pub payload: Option<Vec<u8>>,
    /// Each generated value is sent this many times in a row.
    #[serde(default = "one_u64")]
    pub duplicates: u64,
    #[serde(default)]
    pub username: Option<String>,
    #[serde(default)]
    pub password: Option<String>,
    #[serde(default = "default_prefix")]
    pub client_id_prefix: String,
    #[serde(default = "default_keepalive")]
    pub keepalive: u16,
    #[serde(default = "yes")]
    pub clean_session: bool,
    /// "3.1.1" or "5".
    #[serde(default = "default_version")]
    pub mqtt_version: String,
    /// New connections per second; none: all at once, before the measured time starts.
    #[serde(default)]
    pub connect_rate: Option<f64>,
    #[serde(default)]
    pub retain: bool,
    /// Unacknowledged QoS 1/2 messages per client.
    #[serde(default = "default_inflight")]
    pub inflight: usize,
    /// Seconds to wait for a connection or an acknowledgement.
    #[serde(default = "default_timeout")]
    pub timeout: f64,
    #[serde(default)]
    pub insecure: bool,
    /// Subscribe on the same topics and check every message arrives.
    #[serde(default)]
    pub verify: bool,
    /// Subscriber connections for `verify` (a shared subscription when more than one).
    #[serde(default = "one")]
    pub subscribers: usize,
    /// Only subscribe to this filter and measure what arrives.
    #[serde(default)]
    pub subscribe_only: Option<String>,
    /// Seconds to wait for deliveries still on their way once publishing ends.
    #[serde(default = "default_verify_wait")]
    pub verify_wait: f64,
    /// Tags verification headers so messages of other runs on the same topics are told apart.
    #[serde(default)]
    pub run_tag: u32,
    #[serde(default)]
    pub threads: Option<usize>,
}

fn one() -> usize {
    1
}
fn one_u64() -> u64 {
    1
}
fn yes() -> bool {
    true
}
fn default_topic() -> String {
    "squall/{client}".into()
}
fn default_value() -> ValueKind {
    ValueKind::Text
}
fn default_size() -> usize {
    16
}
fn default_prefix() -> String {
    "squall-".into()
}
fn default_keepalive() -> u16 {
    60
}
fn default_version() -> String {
    "3.1.1".into()
}
fn default_inflight() -> usize {
    10
}
fn default_timeout() -> f64 {
    10.0
}
fn default_verify_wait() -> f64 {
    5.0
}

impl MqttConfig {
    pub fn from_json(s: &str) -> Result<Self, String> {
        serde_json::from_str(s).map_err(|e| format!("invalid engine configuration: {e}"))
    }

    pub fn version(&self) -> Result<Version, String> {
        match self.mqtt_version.as_str() {
            "3.1.1" | "4" | "311" => Ok(Version::V311),
            "5" | "5.0" => Ok(Version::V5),
            v => Err(format!("unsupported MQTT version '{v}' (use 3.1.1 or 5)")),
        }
    }

    pub fn timeout(&self) -> Duration {
        Duration::from_secs_f64(self.timeout)
    }

    pub fn duration(&self) -> Option<Duration> {
        self.duration.map(Duration::from_secs_f64)
    }

    /// The value's size and the largest PUBLISH (its remaining length) this run sends: the topic
    /// (2 + its length, and 8 for what its placeholders may expand to), a packet id (2) and the payload
    /// (the verify header and the value).
    fn largest_publish(&self) -> (usize, usize) {
        let value = self.payload.as_ref().map_or(self.size, Vec::len);
        (value, 2 + self.topic.len() + 8 + 2 + super::header::HEADER_LEN + value)
    }

    /// The largest packet read from the broker: `codec::MAX_INCOMING`, or this run's own messages and
    /// 64 KiB more (an MQTT 5 broker's properties), when those are larger, so that `--verify` reads
    /// every message it sent.
    pub fn max_incoming(&self) -> usize {
        let own = self.largest_publish().1 + 64 * 1024;
        own.clamp(super::codec::MAX_INCOMING, super::codec::MAX_PACKET)
    }

    pub fn validate(&self) -> Result<(), String> {
        self.version()?;
        if self.clients == 0 {
            return Err("the number of clients must be at least 1".into());
        }
        if self.qos > 2 {
            return Err(format!("QoS must be 0, 1 or 2, not {}", self.qos));
        }
        if let Some(r) = self.rate {
            if !(r > 0.0 && r.is_finite()) {
                return Err("the rate must be a positive number of messages per second".into());
            }
        }
        if let Some(r) = self.connect_rate {
            if !(r > 0.0 && r.is_finite()) {
                return Err("the connect rate must be a positive number of connections per second".into());
            }
        }
        if self.messages == Some(0) {
            return Err("the number of messages must be at least 1".into());
        }
        if self.messages.is_none() && self.duration.is_none() {
            return Err("give a number of messages per client (-n) or a duration (-t)".into());
        }
        if self.duration.is_some_and(|d| !(d > 0.0 && d.is_finite())) {
            return Err("the duration must be positive".into());
        }
        if !(self.timeout > 0.0 && self.timeout.is_finite()) {
            return Err("the timeout must be positive".into());
        }
        if self.inflight == 0 || self.inflight > 65_535 {
            return Err("the in-flight window must be between 1 and 65535".into());
        }
        if self.duplicates == 0 {
            return Err("duplicates must be at least 1".into());
        }
        if self.subscribers == 0 {
            return Err("subscribers must be at least 1".into());
        }
        if self.password.is_some() && self.username.is_none() {
            return Err("a password needs a username".into());
        }
        let (value, packet) = self.largest_publish();
        if packet > super::codec::MAX_PACKET {
            return Err(format!(
                "a {value}-byte value does not fit in an MQTT message (at most {} bytes in all, 256 MB)",
                super::codec::MAX_PACKET
            ));
        }
        Ok(())
    }
}
