//! MQTT load generation: simulated devices publishing on a schedule or as fast as their in-flight
//! window allows, acknowledgement latency as HDR histograms, and delivery verified by subscribers.
//! Packets are encoded and decoded by rumqttc's codec; connections and timing are the engine's own.

pub mod codec;
pub mod config;
pub mod conn;
pub mod delivery;
pub mod header;
pub mod message;
pub mod shared;

pub mod publisher;
pub mod report;
pub mod run;
pub mod script;
pub mod verify;

pub use config::MqttConfig;
pub use run::{start, MqttRun};
