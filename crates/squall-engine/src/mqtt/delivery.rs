//! What the subscribers saw: per client, which sequence numbers arrived, how many twice and how many
//! after a later one. Lost is then exact: sent, and never seen. A leaf: subscribers fill it, the
//! report reads it.

use std::collections::HashMap;

/// Which sequence numbers of one client arrived.
#[derive(Default, Clone)]
pub struct Seen {
    bits: Vec<u64>,
    pub unique: u64,
    pub duplicated: u64,
    pub out_of_order: u64,
    highest: Option<u64>,
}

impl Seen {
    pub fn observe(&mut self, seq: u64) {
        let (word, bit) = ((seq / 64) as usize, seq % 64);
        if self.bits.len() <= word {
            self.bits.resize(word + 1, 0);
        }
        if self.bits[word] & (1 << bit) != 0 {
            self.duplicated += 1;
            return;
        }
        self.bits[word] |= 1 << bit;
        self.unique += 1;
        if self.highest.is_some_and(|h| seq < h) {
            self.out_of_order += 1;
        }
        self.highest = Some(self.highest.map_or(seq, |h| h.max(seq)));
    }

    pub fn highest(&self) -> Option<u64> {
        self.highest
    }

    /// Distinct sequence numbers below `n` that arrived.
    pub fn delivered_below(&self, n: u64) -> u64 {
        let full = (n / 64) as usize;
        let mut count: u64 = self.bits.iter().take(full).map(|w| w.count_ones() as u64).sum();
        if !n.is_multiple_of(64) {
            if let Some(w) = self.bits.get(full) {
                count += (w & ((1u64 << (n % 64)) - 1)).count_ones() as u64;
            }
        }
        count
    }
}

/// Everything the subscribers saw.
#[derive(Default)]
pub struct Tracker {
    /// Verification: this run's clients, by index from `first_client`.
    pub clients: Vec<Seen>,
    /// Subscribe-only: any sender's messages, by (run tag, client).
    pub senders: HashMap<(u32, u32), Seen>,
    /// Messages without this run's header (other publishers on the same topics).
    pub foreign: u64,
    pub received: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seen_counts_duplicates_gaps_and_reordering() {
        let mut s = Seen::default();
        for seq in [0, 1, 2, 5, 3, 3, 70, 64] {
            s.observe(seq);
        }
        assert_eq!(s.unique, 7);
        assert_eq!(s.duplicated, 1);
        assert_eq!(s.out_of_order, 2); // 3 after 5, 64 after 70
        assert_eq!(s.delivered_below(6), 5); // 0 1 2 3 5; 4 is lost
        assert_eq!(s.delivered_below(200), 7);
        assert_eq!(s.delivered_below(0), 0);
    }
}
