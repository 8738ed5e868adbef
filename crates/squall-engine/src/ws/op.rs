//! What a scripted user asks of its WebSocket (script/websocket.rs runs it): the vocabulary between the
//! binding and the script's engine, as `mqtt::script::Op` is MQTT's.

use std::time::Duration;
use tokio::sync::mpsc;

/// One operation of a user's WebSocket. `name` is the statistics' name (the URL's path unless the
/// script names it).
pub enum WsOp {
    Connect { id: u64, url: String, headers: Vec<(String, String)>, name: Option<String>, timeout: Duration },
    Send { id: u64, payload: Vec<u8>, binary: bool, name: Option<String> },
    Exchange { id: u64, payload: Vec<u8>, binary: bool, name: Option<String>, timeout: Duration },
    Receive { id: u64, name: Option<String>, timeout: Duration },
    Close { id: u64 },
}

pub type WsTx = mpsc::UnboundedSender<WsOp>;
