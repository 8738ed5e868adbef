//! The demo's MQTT broker: rumqttd, embedded, on 127.0.0.1, so `squall demo` can show MQTT runs with
//! nothing installed. It runs until the process ends (rumqttd has no stop).

use rumqttd::{Broker, Config, ConnectionSettings, RouterConfig, ServerSettings};
use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// Starts the broker on `port` (0: a free one) and returns the port once it accepts connections.
pub fn start(port: u16) -> Result<u16, String> {
    // rumqttd binds by itself, so a free port is found first and released for it.
    let port = TcpListener::bind(("127.0.0.1", port)).and_then(|l| l.local_addr()).map_err(|e| e.to_string())?.port();
    let listen = SocketAddr::from(([127, 0, 0, 1], port));
    let server = ServerSettings {
        name: "demo".into(),
        listen,
        tls: None,
        next_connection_delay_ms: 0,
        connections: ConnectionSettings {
            connection_timeout_ms: 5000,
            max_payload_size: 1 << 20,
            max_inflight_count: 100,
            auth: None,
            external_auth: None,
            dynamic_filters: true,
        },
    };
    let config = Config {
        router: RouterConfig {
            max_connections: 20_000,
            max_outgoing_packet_count: 200,
            max_segment_size: 100 * 1024 * 1024,
            max_segment_count: 10,
            ..RouterConfig::default()
        },
        v4: Some(HashMap::from([("demo".to_string(), server.clone())])),
        ..Config::default()
    };
    std::thread::Builder::new()
        .name("squall-demo-broker".into())
        .spawn(move || {
            let _ = Broker::new(config).start();
        })
        .map_err(|e| e.to_string())?;
    let deadline = Instant::now() + Duration::from_secs(5);
    while TcpStream::connect_timeout(&listen, Duration::from_millis(100)).is_err() {
        if Instant::now() > deadline {
            return Err(format!("the MQTT broker did not start on {listen}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(port)
}
