//! The demo target's WebSocket echo (`/ws`) and its counts (`/ws/stats`), spoken to in raw frames over a
//! blocking socket: the handshake, text and binary echoes, a fragmented message, ping, close, the delay.

use squall_target::DemoTarget;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

const MASK: [u8; 4] = [0x12, 0x34, 0x56, 0x78];

/// A client frame: FIN as given, the opcode, masked with MASK (payloads under 126 bytes).
fn frame(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![(u8::from(fin) << 7) | opcode, 0x80 | payload.len() as u8];
    f.extend_from_slice(&MASK);
    f.extend(payload.iter().enumerate().map(|(i, b)| b ^ MASK[i % 4]));
    f
}

fn read_exact(s: &mut TcpStream, n: usize) -> Vec<u8> {
    let mut buf = vec![0; n];
    s.read_exact(&mut buf).unwrap();
    buf
}

/// Reads until the end of the HTTP head; returns it.
fn read_head(s: &mut TcpStream) -> String {
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        head.extend(read_exact(s, 1));
    }
    String::from_utf8(head).unwrap()
}

fn open(target: &DemoTarget, path: &str) -> (TcpStream, String) {
    let mut s = TcpStream::connect(target.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
        target.addr
    );
    s.write_all(request.as_bytes()).unwrap();
    let head = read_head(&mut s);
    (s, head)
}

fn stats(target: &DemoTarget) -> String {
    let mut s = TcpStream::connect(target.addr).unwrap();
    s.write_all(b"GET /ws/stats HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out.split("\r\n\r\n").nth(1).unwrap().trim().to_string()
}

#[test]
fn ws_echoes_messages_answers_pings_and_closes() {
    let target = DemoTarget::start(0).unwrap();
    let (mut s, head) = open(&target, "/ws");
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    // RFC 6455's own example: this key's accept value.
    assert!(head.to_lowercase().contains("sec-websocket-accept: s3pplmbitxaq9kygzzhzrbk+xoo="), "{head}");

    s.write_all(&frame(true, 0x1, b"hello")).unwrap();
    assert_eq!(read_exact(&mut s, 7), b"\x81\x05hello");
    s.write_all(&frame(true, 0x2, &[0, 1, 2])).unwrap();
    assert_eq!(read_exact(&mut s, 5), b"\x82\x03\x00\x01\x02");
    // A message in two fragments comes back whole, as one frame.
    s.write_all(&frame(false, 0x1, b"he")).unwrap();
    s.write_all(&frame(true, 0x0, b"llo")).unwrap();
    assert_eq!(read_exact(&mut s, 7), b"\x81\x05hello");
    s.write_all(&frame(true, 0x9, b"p")).unwrap();
    assert_eq!(read_exact(&mut s, 3), b"\x8a\x01p");
    assert_eq!(stats(&target), r#"{"open": 1, "opened": 1, "messages": 3}"#);

    s.write_all(&frame(true, 0x8, &1000u16.to_be_bytes())).unwrap();
    assert_eq!(read_exact(&mut s, 4), b"\x88\x02\x03\xe8");
    let deadline = Instant::now() + Duration::from_secs(5);
    while stats(&target) != r#"{"open": 0, "opened": 1, "messages": 3}"# {
        assert!(Instant::now() < deadline, "{}", stats(&target));
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn ws_delay_ms_echoes_late() {
    let target = DemoTarget::start(0).unwrap();
    let (mut s, head) = open(&target, "/ws?delay_ms=200");
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    for _ in 0..2 {
        let sent = Instant::now();
        s.write_all(&frame(true, 0x1, b"x")).unwrap();
        assert_eq!(read_exact(&mut s, 3), b"\x81\x01x");
        assert!(sent.elapsed() >= Duration::from_millis(200), "{:?}", sent.elapsed());
    }
}

#[test]
fn ws_without_a_handshake_is_400() {
    let target = DemoTarget::start(0).unwrap();
    let mut s = TcpStream::connect(target.addr).unwrap();
    s.write_all(b"GET /ws HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    assert!(out.starts_with("HTTP/1.1 400"), "{out}");
}
