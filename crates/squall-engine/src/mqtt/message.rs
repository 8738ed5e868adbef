//! What is published: topics from a template and generated values (the Pepeunit seed's Text/Number
//! values of a given size, each repeated K times). The verification header before each value is
//! `header`'s.

use super::config::{MqttConfig, ValueKind};
use bytes::Bytes;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Text(String),
    Client,
    Id,
    Seq,
}

/// A topic template such as `example.com/{client}/pepeunit`.
#[derive(Debug, Clone)]
pub struct TopicTemplate {
    parts: Vec<Part>,
    source: String,
}

impl TopicTemplate {
    pub fn parse(s: &str) -> Result<Self, String> {
        let bad = |why: &str| Err(format!("invalid topic template '{s}': {why}"));
        if s.is_empty() {
            return bad("it is empty");
        }
        if s.contains(['+', '#']) {
            return bad("wildcards (+ and #) belong to subscriptions, not to published topics");
        }
        if s.contains('\0') {
            return bad("it contains a NUL character");
        }
        let mut parts = Vec::new();
        let mut rest = s;
        while let Some(open) = rest.find(['{', '}']) {
            if rest.as_bytes()[open] == b'}' {
                return bad("'}' without '{'");
            }
            let Some(len) = rest[open..].find('}') else { return bad("'{' without '}'") };
            if open > 0 {
                parts.push(Part::Text(rest[..open].to_string()));
            }
            parts.push(match &rest[open + 1..open + len] {
                "client" => Part::Client,
                "id" => Part::Id,
                "seq" => Part::Seq,
                other => return bad(&format!("unknown placeholder {{{other}}} (use {{client}}, {{id}} or {{seq}})")),
            });
            rest = &rest[open + len + 1..];
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_string()));
        }
        if s.len() > 60_000 {
            return bad("it is longer than MQTT allows");
        }
        Ok(TopicTemplate { parts, source: s.to_string() })
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    pub fn has_seq(&self) -> bool {
        self.parts.contains(&Part::Seq)
    }

    pub fn render(&self, client: usize, id: &str, seq: u64) -> String {
        let mut out = String::with_capacity(self.source.len() + 16);
        for p in &self.parts {
            match p {
                Part::Text(t) => out.push_str(t),
                Part::Client => out.push_str(&client.to_string()),
                Part::Id => out.push_str(id),
                Part::Seq => out.push_str(&seq.to_string()),
            }
        }
        out
    }

    /// The subscription that matches every topic the template yields: a level with a placeholder
    /// becomes `+`.
    pub fn filter(&self) -> String {
        let mut levels: Vec<String> = Vec::new();
        let mut current = String::new();
        let mut wild = false;
        for p in &self.parts {
            match p {
                Part::Text(t) => {
                    let mut pieces = t.split('/');
                    current.push_str(pieces.next().unwrap_or(""));
                    for piece in pieces {
                        levels.push(if wild { "+".into() } else { std::mem::take(&mut current) });
                        current.clear();
                        wild = false;
                        current.push_str(piece);
                    }
                }
                _ => wild = true,
            }
        }
        levels.push(if wild { "+".into() } else { current });
        levels.join("/")
    }
}

/// The values clients publish. Generated values come from a pool so that publishing never waits
/// on a random-number generator; consecutive values differ unless `duplicates` asks otherwise.
pub struct Payloads {
    pool: Vec<Bytes>,
    duplicates: u64,
}

/// Distinct generated values: 64, fewer for large values so that the pool stays within
/// `POOL_BYTES` (at least 2, so that consecutive messages still differ). Memory is then the pool
/// plus the messages in flight, not 64 x the value's size (a 10 MB value took 650 MB before).
const POOL: usize = 64;
const POOL_BYTES: usize = 64 * 1024 * 1024;

impl Payloads {
    pub fn new(cfg: &MqttConfig) -> Self {
        if let Some(fixed) = &cfg.payload {
            return Payloads { pool: vec![Bytes::from(fixed.clone())], duplicates: 1 };
        }
        let mut rng = SmallRng::from_os_rng();
        const ALNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        let count = (POOL_BYTES / cfg.size.max(1)).clamp(2, POOL);
        let pool = (0..count)
            .map(|_| {
                let v: Vec<u8> = (0..cfg.size)
                    .enumerate()
                    .map(|(i, _)| match cfg.value {
                        ValueKind::Text => ALNUM[rng.random_range(0..ALNUM.len())],
                        ValueKind::Number if i == 0 && cfg.size > 1 => b'1' + rng.random_range(0..9u8),
                        ValueKind::Number => b'0' + rng.random_range(0..10u8),
                    })
                    .collect();
                Bytes::from(v)
            })
            .collect();
        Payloads { pool, duplicates: cfg.duplicates }
    }

    /// The value of a client's `seq`-th message.
    pub fn value(&self, client: usize, seq: u64) -> &Bytes {
        let i = (seq / self.duplicates).wrapping_add(client as u64) % self.pool.len() as u64;
        &self.pool[i as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_render_and_give_a_filter() {
        let t = TopicTemplate::parse("example.com/{client}/pepeunit").unwrap();
        assert_eq!(t.render(7, "squall-7", 0), "example.com/7/pepeunit");
        assert_eq!(t.filter(), "example.com/+/pepeunit");
        let t = TopicTemplate::parse("dev-{id}/x/{seq}").unwrap();
        assert_eq!(t.render(1, "abc", 42), "dev-abc/x/42");
        assert_eq!(t.filter(), "+/x/+");
        assert_eq!(TopicTemplate::parse("plain/topic").unwrap().filter(), "plain/topic");
    }

    #[test]
    fn bad_templates_say_why() {
        let e = TopicTemplate::parse("a/{nope}").unwrap_err();
        assert!(e.contains("unknown placeholder {nope}"), "{e}");
        assert!(TopicTemplate::parse("a/{client").unwrap_err().contains("without"));
        assert!(TopicTemplate::parse("a/+/b").unwrap_err().contains("wildcards"));
        assert!(TopicTemplate::parse("").is_err());
    }

    #[test]
    fn values_repeat_k_times() {
        let cfg: MqttConfig = serde_json::from_str(
            r#"{"broker": "mqtt://x", "messages": 1, "duplicates": 3, "value": "number", "size": 12}"#,
        )
        .unwrap();
        let p = Payloads::new(&cfg);
        assert_eq!(p.value(0, 0), p.value(0, 2));
        assert_ne!(p.value(0, 2), p.value(0, 3));
        assert!(p.value(0, 0).iter().all(u8::is_ascii_digit) && p.value(0, 0).len() == 12);
    }
}
