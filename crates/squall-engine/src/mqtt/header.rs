//! The verification header that precedes each value when delivery is checked: which run and client
//! sent a message, its sequence number and when (Unix microseconds, a clock every process of the
//! machine shares). A leaf: the configuration sizes packets by it, publishers write it, subscribers
//! read it.

use bytes::{BufMut, Bytes, BytesMut};

/// Its length in bytes.
pub const HEADER_LEN: usize = 26;
const MAGIC: &[u8; 2] = b"SQ";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub run_tag: u32,
    pub client: u32,
    pub seq: u64,
    /// Unix time of sending, in microseconds (a clock every process on the machine shares).
    pub sent_unix_us: u64,
}

impl Header {
    pub fn prepend(&self, value: &[u8]) -> Bytes {
        let mut b = BytesMut::with_capacity(HEADER_LEN + value.len());
        b.put_slice(MAGIC);
        b.put_u32(self.run_tag);
        b.put_u32(self.client);
        b.put_u64(self.seq);
        b.put_u64(self.sent_unix_us);
        b.put_slice(value);
        b.freeze()
    }

    pub fn parse(payload: &[u8]) -> Option<Header> {
        if payload.len() < HEADER_LEN || &payload[..2] != MAGIC {
            return None;
        }
        let u32_at = |i: usize| u32::from_be_bytes(payload[i..i + 4].try_into().unwrap());
        let u64_at = |i: usize| u64::from_be_bytes(payload[i..i + 8].try_into().unwrap());
        Some(Header { run_tag: u32_at(2), client: u32_at(6), seq: u64_at(10), sent_unix_us: u64_at(18) })
    }
}

pub fn unix_us() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips() {
        let h = Header { run_tag: 9, client: 3, seq: 1 << 40, sent_unix_us: 123 };
        let p = h.prepend(b"value");
        assert_eq!(Header::parse(&p), Some(h));
        assert_eq!(&p[HEADER_LEN..], b"value");
        assert_eq!(Header::parse(b"plain payload that is long enough"), None);
    }
}
