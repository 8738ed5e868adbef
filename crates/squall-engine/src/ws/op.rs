//! What a scripted user asks of its WebSocket (script/websocket.rs runs it): the vocabulary between the
//! binding and the script's engine, as `mqtt::script::Op` is MQTT's.

use std::time::Duration;
use tokio::sync::mpsc;

/// One operation on a WebSocket. `name` is the statistics' name (the URL's path unless the script
/// names it); a connection that records nothing (websocket-client's, whose file fires its own events)
/// ignores it. `id` is the operation's, whose completion the script waits for.
pub enum WsOp {
    Connect {
        id: u64,
        url: String,
        headers: Vec<(String, String)>,
        name: Option<String>,
        timeout: Duration,
    },
    Send {
        id: u64,
        payload: Vec<u8>,
        binary: bool,
        name: Option<String>,
    },
    /// A ping or a pong of the script's own (the reader answers the server's pings itself).
    Control {
        id: u64,
        ping: bool,
        payload: Vec<u8>,
    },
    Exchange {
        id: u64,
        payload: Vec<u8>,
        binary: bool,
        name: Option<String>,
        timeout: Duration,
    },
    /// The next message, in the order the receives were asked for; `None`: no timeout.
    Receive {
        id: u64,
        name: Option<String>,
        timeout: Option<Duration>,
    },
    /// A close frame (`code`, `reason`), then up to `wait` for the server's close before the connection
    /// is dropped (websocket-client's `close`; zero: at once, as `WebSocketUser.close`).
    Close {
        id: u64,
        code: u16,
        reason: Vec<u8>,
        wait: Duration,
    },
    /// The script gave up waiting for operation `op` (a gevent Timeout, a kill): if still in progress it
    /// ends unrecorded, taking nothing (a receive's place in line is given up), completed as cancelled.
    Cancel {
        op: u64,
    },
}

pub type WsTx = mpsc::UnboundedSender<WsOp>;
