//! MQTT 3.1.1 and 5 on the wire, through rumqttc's packet codec, behind one small vocabulary so the
//! clients above never branch on the protocol version.

use crate::stats::{Failure, FailureKind};
use bytes::{Bytes, BytesMut};
use rumqttc::mqttbytes::{self, v4, QoS};
use rumqttc::v5::mqttbytes::v5;

/// MQTT's own limit on a packet: a remaining length of at most 268,435,455 bytes (256 MiB).
pub const MAX_PACKET: usize = 268_435_455;
/// The largest packet read from a broker, unless the run publishes larger ones (`squall mqtt` then
/// reads packets up to its own message's size and 64 KiB more, `MqttConfig::max_incoming`): 16 MiB,
/// where brokers' own limits are 128 KiB (AWS IoT), 256 KiB (Azure IoT Hub), 1 MiB (EMQX's default)
/// or MQTT's 256 MiB (mosquitto's default). Before it, a broker announcing a 256 MiB PUBLISH had each
/// connection buffer that much as it came. A packet announced larger fails the connection as "too
/// large" at its first bytes, before any of it is buffered; MQTT 5 connections also say the limit in
/// CONNECT (Maximum Packet Size), so that a broker drops such messages instead of sending them.
pub const MAX_INCOMING: usize = 16 * 1024 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    V311,
    V5,
}

/// What a client sends.
pub struct Hello<'a> {
    pub client_id: &'a str,
    pub keepalive: u16,
    pub clean: bool,
    pub login: Option<(&'a str, &'a str)>,
    /// The largest packet (its remaining length) this client reads from the broker.
    pub max_packet: usize,
}

/// What a client receives, reduced to what the load generator acts on.
#[derive(Debug)]
pub enum Incoming {
    /// `refused` carries the reason when the broker said no.
    ConnAck {
        refused: Option<String>,
        receive_max: Option<u16>,
    },
    /// A QoS 1 acknowledgement; `refused` when an MQTT 5 broker gave a failure reason code.
    PubAck {
        pkid: u16,
        refused: Option<String>,
    },
    PubRec {
        pkid: u16,
        refused: Option<String>,
    },
    PubRel(u16),
    PubComp(u16),
    Publish {
        qos: u8,
        pkid: u16,
        topic: String,
        payload: Bytes,
    },
    /// The granted QoS per filter, or None where the broker refused it.
    SubAck {
        pkid: u16,
        granted: Vec<Option<u8>>,
    },
    PingResp,
    /// The broker is closing the connection (MQTT 5), with its reason.
    Disconnect(String),
    Other,
}

fn qos(n: u8) -> QoS {
    match n {
        0 => QoS::AtMostOnce,
        1 => QoS::AtLeastOnce,
        _ => QoS::ExactlyOnce,
    }
}

fn qos5(n: u8) -> rumqttc::v5::mqttbytes::QoS {
    use rumqttc::v5::mqttbytes::QoS;
    match n {
        0 => QoS::AtMostOnce,
        1 => QoS::AtLeastOnce,
        _ => QoS::ExactlyOnce,
    }
}

fn v4_connack_reason(code: v4::ConnectReturnCode) -> &'static str {
    use v4::ConnectReturnCode::*;
    match code {
        Success => "accepted",
        RefusedProtocolVersion => "unacceptable protocol version",
        BadClientId => "identifier rejected",
        ServiceUnavailable => "server unavailable",
        BadUserNamePassword => "bad user name or password",
        NotAuthorized => "not authorized",
    }
}

fn v5_reason<T: std::fmt::Debug>(code: T) -> String {
    // The crate's reason enums are named as in the specification: "NotAuthorized" -> "not authorized".
    let name = format!("{code:?}");
    let mut out = String::with_capacity(name.len() + 4);
    for (i, ch) in name.chars().enumerate() {
        if ch.is_uppercase() && i > 0 {
            out.push(' ');
        }
        out.extend(ch.to_lowercase());
    }
    out
}

impl Version {
    pub fn connect(self, buf: &mut BytesMut, hello: &Hello) {
        match self {
            Version::V311 => {
                let mut c = v4::Connect::new(hello.client_id);
                c.keep_alive = hello.keepalive;
                c.clean_session = hello.clean;
                if let Some((u, p)) = hello.login {
                    c.set_login(u, p);
                }
                v4::Packet::Connect(c).write(buf, usize::MAX).expect("a CONNECT always encodes");
            }
            Version::V5 => {
                // Maximum Packet Size counts the whole packet: the fixed header takes at most 5 bytes.
                let mut properties = v5::ConnectProperties::new();
                properties.max_packet_size = Some((hello.max_packet + 5).min(u32::MAX as usize) as u32);
                let c = v5::Connect {
                    keep_alive: hello.keepalive,
                    client_id: hello.client_id.to_string(),
                    clean_start: hello.clean,
                    properties: Some(properties),
                };
                let login = hello.login.map(|(u, p)| v5::Login::new(u, p));
                v5::Packet::Connect(c, None, login).write(buf, None).expect("a CONNECT always encodes");
            }
        }
    }

    /// Encodes one PUBLISH; `pkid` is ignored at QoS 0.
    pub fn publish(self, buf: &mut BytesMut, topic: &str, q: u8, retain: bool, pkid: u16, payload: Bytes) {
        match self {
            Version::V311 => {
                let mut p = v4::Publish::from_bytes(topic, qos(q), payload);
                p.retain = retain;
                p.pkid = if q == 0 { 0 } else { pkid };
                p.write(buf).expect("a PUBLISH with a valid packet id always encodes");
            }
            Version::V5 => {
                let mut p = v5::Publish::new(topic, qos5(q), payload, None);
                p.retain = retain;
                p.pkid = if q == 0 { 0 } else { pkid };
                p.write(buf).expect("a PUBLISH with a valid packet id always encodes");
            }
        }
    }

    pub fn subscribe(self, buf: &mut BytesMut, pkid: u16, filters: &[String], q: u8) {
        match self {
            Version::V311 => {
                let mut s =
                    v4::Subscribe::new_many(filters.iter().map(|f| v4::SubscribeFilter::new(f.clone(), qos(q))));
                s.pkid = pkid;
                s.write(buf).expect("a SUBSCRIBE always encodes");
            }
            Version::V5 => {
                let mut s = v5::Subscribe::new_many(filters.iter().map(|f| v5::Filter::new(f.clone(), qos5(q))), None);
                s.pkid = pkid;
                s.write(buf).expect("a SUBSCRIBE always encodes");
            }
        }
    }

    pub fn puback(self, buf: &mut BytesMut, pkid: u16) {
        match self {
            Version::V311 => v4::PubAck::new(pkid).write(buf).map(drop).expect("acknowledgements always encode"),
            Version::V5 => v5::PubAck::new(pkid, None).write(buf).map(drop).expect("acknowledgements always encode"),
        }
    }

    pub fn pubrec(self, buf: &mut BytesMut, pkid: u16) {
        match self {
            Version::V311 => v4::PubRec::new(pkid).write(buf).map(drop).expect("acknowledgements always encode"),
            Version::V5 => v5::PubRec::new(pkid, None).write(buf).map(drop).expect("acknowledgements always encode"),
        }
    }

    pub fn pubrel(self, buf: &mut BytesMut, pkid: u16) {
        match self {
            Version::V311 => v4::PubRel::new(pkid).write(buf).map(drop).expect("acknowledgements always encode"),
            Version::V5 => v5::PubRel::new(pkid, None).write(buf).map(drop).expect("acknowledgements always encode"),
        }
    }

    pub fn pubcomp(self, buf: &mut BytesMut, pkid: u16) {
        match self {
            Version::V311 => v4::PubComp::new(pkid).write(buf).map(drop).expect("acknowledgements always encode"),
            Version::V5 => v5::PubComp::new(pkid, None).write(buf).map(drop).expect("acknowledgements always encode"),
        }
    }

    pub fn pingreq(self, buf: &mut BytesMut) {
        buf.extend_from_slice(&[0xC0, 0x00]);
    }

    pub fn disconnect(self, buf: &mut BytesMut) {
        // Normal disconnection; in MQTT 5 a remaining length of 0 means reason 0x00.
        buf.extend_from_slice(&[0xE0, 0x00]);
    }

    /// Takes the next whole packet off `buf`; Ok(None) while it is incomplete. A packet whose
    /// remaining length is above `max` is an error as soon as its fixed header is in.
    pub fn read(self, buf: &mut BytesMut, max: usize) -> Result<Option<Incoming>, Failure> {
        let invalid = |e: &dyn std::fmt::Display| {
            Failure::new(FailureKind::Io, format!("invalid MQTT packet from the broker: {e}"))
        };
        let too_large = |n: usize| {
            let what = format!("MQTT packet of {n} bytes from the broker, above the {max} accepted");
            Failure::new(FailureKind::TooLarge, what)
        };
        match self {
            Version::V311 => match v4::Packet::read(buf, max) {
                Ok(p) => Ok(Some(from_v4(p))),
                Err(mqttbytes::Error::InsufficientBytes(_)) => Ok(None),
                Err(mqttbytes::Error::PayloadSizeLimitExceeded(n)) => Err(too_large(n)),
                Err(e) => Err(invalid(&e)),
            },
            Version::V5 => match v5::Packet::read(buf, Some(max.min(u32::MAX as usize) as u32)) {
                Ok(p) => Ok(Some(from_v5(p))),
                Err(rumqttc::v5::mqttbytes::Error::InsufficientBytes(_)) => Ok(None),
                Err(rumqttc::v5::mqttbytes::Error::PayloadSizeLimitExceeded { pkt_size, .. }) => {
                    Err(too_large(pkt_size))
                }
                Err(e) => Err(invalid(&e)),
            },
        }
    }
}

fn from_v4(p: v4::Packet) -> Incoming {
    match p {
        v4::Packet::ConnAck(a) => Incoming::ConnAck {
            refused: (a.code != v4::ConnectReturnCode::Success)
                .then(|| format!("{} (code {})", v4_connack_reason(a.code), a.code as u8)),
            receive_max: None,
        },
        v4::Packet::PubAck(a) => Incoming::PubAck { pkid: a.pkid, refused: None },
        v4::Packet::PubRec(a) => Incoming::PubRec { pkid: a.pkid, refused: None },
        v4::Packet::PubRel(a) => Incoming::PubRel(a.pkid),
        v4::Packet::PubComp(a) => Incoming::PubComp(a.pkid),
        v4::Packet::Publish(p) => {
            Incoming::Publish { qos: p.qos as u8, pkid: p.pkid, topic: p.topic, payload: p.payload }
        }
        v4::Packet::SubAck(s) => Incoming::SubAck {
            pkid: s.pkid,
            granted: s
                .return_codes
                .iter()
                .map(|c| match c {
                    v4::SubscribeReasonCode::Success(q) => Some(*q as u8),
                    v4::SubscribeReasonCode::Failure => None,
                })
                .collect(),
        },
        v4::Packet::PingResp => Incoming::PingResp,
        _ => Incoming::Other,
    }
}

fn from_v5(p: v5::Packet) -> Incoming {
    match p {
        v5::Packet::ConnAck(a) => Incoming::ConnAck {
            refused: (a.code != v5::ConnectReturnCode::Success).then(|| v5_reason(a.code)),
            receive_max: a.properties.and_then(|p| p.receive_max),
        },
        v5::Packet::PubAck(a) => {
            use v5::PubAckReason::*;
            let ok = matches!(a.reason, Success | NoMatchingSubscribers);
            Incoming::PubAck { pkid: a.pkid, refused: (!ok).then(|| v5_reason(a.reason)) }
        }
        v5::Packet::PubRec(a) => {
            use v5::PubRecReason::*;
            let ok = matches!(a.reason, Success | NoMatchingSubscribers);
            Incoming::PubRec { pkid: a.pkid, refused: (!ok).then(|| v5_reason(a.reason)) }
        }
        v5::Packet::PubRel(a) => Incoming::PubRel(a.pkid),
        v5::Packet::PubComp(a) => Incoming::PubComp(a.pkid),
        v5::Packet::Publish(p) => Incoming::Publish {
            qos: p.qos as u8,
            pkid: p.pkid,
            topic: String::from_utf8_lossy(&p.topic).into_owned(),
            payload: p.payload,
        },
        v5::Packet::SubAck(s) => Incoming::SubAck {
            pkid: s.pkid,
            granted: s
                .return_codes
                .iter()
                .map(|c| match c {
                    v5::SubscribeReasonCode::Success(q) => Some(*q as u8),
                    _ => None,
                })
                .collect(),
        },
        v5::Packet::PingResp(_) => Incoming::PingResp,
        v5::Packet::Disconnect(d) => Incoming::Disconnect(v5_reason(d.reason_code)),
        _ => Incoming::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn publish_round_trips_in_both_versions() {
        for v in [Version::V311, Version::V5] {
            let mut buf = BytesMut::new();
            v.publish(&mut buf, "a/b", 1, false, 7, Bytes::from_static(b"hello"));
            match v.read(&mut buf, MAX_INCOMING).unwrap() {
                Some(Incoming::Publish { qos, pkid, payload, .. }) => {
                    assert_eq!((qos, pkid, &payload[..]), (1, 7, &b"hello"[..]));
                }
                other => panic!("{other:?}"),
            }
            assert!(buf.is_empty());
        }
    }

    #[test]
    fn partial_packets_wait_for_more_bytes() {
        let mut whole = BytesMut::new();
        Version::V311.puback(&mut whole, 3);
        let mut buf = BytesMut::from(&whole[..1]);
        assert!(Version::V311.read(&mut buf, MAX_INCOMING).unwrap().is_none());
        buf.extend_from_slice(&whole[1..]);
        assert!(matches!(Version::V311.read(&mut buf, MAX_INCOMING).unwrap(), Some(Incoming::PubAck { pkid: 3, .. })));
    }

    /// Issue 26: a packet announced above the limit is refused at its fixed header, whatever follows,
    /// and MQTT 5's CONNECT says the limit.
    #[test]
    fn a_packet_above_the_limit_is_refused_at_its_header() {
        for v in [Version::V311, Version::V5] {
            let mut buf = BytesMut::from(&[0x30, 0xff, 0xff, 0xff, 0x7f, 0x00, 0x01, b't'][..]);
            let f = v.read(&mut buf, MAX_INCOMING).unwrap_err();
            assert_eq!(f.kind, FailureKind::TooLarge);
            assert_eq!(
                f.message(),
                "too large: MQTT packet of 268435455 bytes from the broker, above the 16777216 accepted"
            );
            let mut buf = BytesMut::new();
            v.publish(&mut buf, "t", 0, false, 0, Bytes::from(vec![0u8; 1000]));
            assert!(v.read(&mut buf.clone(), 1000).is_err() && v.read(&mut buf, 1010).unwrap().is_some());
        }
        let mut buf = BytesMut::new();
        let hello = Hello { client_id: "c", keepalive: 30, clean: true, login: None, max_packet: 1000 };
        Version::V5.connect(&mut buf, &hello);
        match v5::Packet::read(&mut buf, None).unwrap() {
            v5::Packet::Connect(c, ..) => assert_eq!(c.properties.unwrap().max_packet_size, Some(1005)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn refusals_carry_their_reason() {
        let mut buf = BytesMut::new();
        v4::ConnAck::new(v4::ConnectReturnCode::BadUserNamePassword, false).write(&mut buf).unwrap();
        match Version::V311.read(&mut buf, MAX_INCOMING).unwrap() {
            Some(Incoming::ConnAck { refused: Some(r), .. }) => assert_eq!(r, "bad user name or password (code 4)"),
            other => panic!("{other:?}"),
        }
        assert_eq!(v5_reason(v5::ConnectReturnCode::NotAuthorized), "not authorized");
    }
}
