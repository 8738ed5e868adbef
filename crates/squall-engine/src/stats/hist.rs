//! A latency histogram that costs what it holds: HDR's buckets (microseconds, 3 significant digits,
//! auto-resizing from 1 µs), kept as a sorted list of the buckets that have counts until the full
//! array would take no more than 8 bytes a value recorded.
//!
//! Why: HDR's array covers every bucket from 0 to the largest value. At 3 digits that is 2,048
//! counts (16 KB of u64) up to 2 ms, 5,120 (40 KB) up to 10 ms, 8,192 (64 KB) up to 100 ms, whatever
//! the histogram holds. A run keeps several per endpoint (the totals, the live totals, each second's,
//! the four timing phases): a locustfile naming each request after its id (5,000 names, a request or
//! two a name each second) held 460 KB a name (issue 41), nearly all of it zeros. Listed, a bucket
//! with counts is 8 bytes (its lowest value and its count, u32 each).
//!
//! Policy: a histogram starts listed and turns into HDR's array (for good) once it holds at least as
//! many values as the array would have counts, or a value or count that does not fit a u32 (a value
//! past 71 minutes). So a histogram never holds more than 8 bytes a value recorded, and one that
//! records many values a second (a bench's totals and seconds, after 2,048 values) records into the
//! array, at HDR's cost, instead of searching the list.
//!
//! Exactness: both forms hold the same buckets with the same counts, and every reading of the list
//! is HDR's own arithmetic on them, in the same order (`tests` checks each against the array on
//! random values: percentiles, mean and deviation to the bit, the quantile iteration, serialization).

use super::new_histogram;
use hdrhistogram::Histogram;
use std::borrow::Cow;
use std::sync::OnceLock;

/// HDR's bucket arithmetic for histograms of this shape (1 µs, 3 digits): the bucket of a value does
/// not depend on how far a histogram has grown.
fn shape() -> &'static Histogram<u64> {
    static SHAPE: OnceLock<Histogram<u64>> = OnceLock::new();
    SHAPE.get_or_init(new_histogram)
}

/// HDR's counts for values up to `max` at 3 digits from 1 µs: 1,024 a power of two past 2,048, and
/// 2,048 below (`Histogram::resize`).
fn dense_len(max: u64) -> u64 {
    let bits = 64 - u64::from(max.leading_zeros());
    let buckets = 1 + bits.saturating_sub(11);
    (buckets + 1) * 1024
}

#[derive(Clone, Debug)]
pub struct Hist(Repr);

#[derive(Clone, Debug)]
enum Repr {
    /// (the bucket's lowest value, its count), by value; `total` is the counts' sum.
    Listed { buckets: Vec<(u32, u32)>, total: u64 },
    /// HDR's own (with its counts array).
    Array(Box<Histogram<u64>>),
}

impl Default for Hist {
    fn default() -> Self {
        Hist(Repr::Listed { buckets: Vec::new(), total: 0 })
    }
}

impl PartialEq for Hist {
    /// The same counts in the same buckets, whatever the form.
    fn eq(&self, other: &Hist) -> bool {
        self.len() == other.len() && self.iter_recorded().eq(other.iter_recorded())
    }
}

impl From<Histogram<u64>> for Hist {
    /// A histogram of this shape is listed if the policy would list it; another shape (a result
    /// written by something else) keeps its array.
    fn from(h: Histogram<u64>) -> Self {
        let ours = h.low() == 1 && h.sigfig() == 3;
        if !ours || h.len() >= dense_len(h.max()) {
            return Hist(Repr::Array(Box::new(h)));
        }
        let mut out = Hist::default();
        for v in h.iter_recorded() {
            out.record_n(v.value_iterated_to(), v.count_at_value());
        }
        out
    }
}

impl Hist {
    pub fn new() -> Self {
        Hist::default()
    }

    /// A list of buckets as `listed` gave it (sorted, each with a count).
    pub fn from_listed(buckets: Vec<(u32, u32)>) -> Self {
        let total = buckets.iter().map(|b| u64::from(b.1)).sum();
        Hist(Repr::Listed { buckets, total })
    }

    /// The buckets with counts, (lowest value, count) by value, if the histogram is listed.
    pub fn listed(&self) -> Option<&[(u32, u32)]> {
        match &self.0 {
            Repr::Listed { buckets, .. } => Some(buckets),
            Repr::Array(_) => None,
        }
    }

    /// Whether the histogram holds HDR's counts array (else: its buckets listed).
    pub fn is_array(&self) -> bool {
        matches!(self.0, Repr::Array(_))
    }

    /// The bytes it holds on the heap (its list, or its array and the histogram around it).
    pub fn heap_bytes(&self) -> usize {
        match &self.0 {
            Repr::Listed { buckets, .. } => buckets.capacity() * std::mem::size_of::<(u32, u32)>(),
            Repr::Array(h) => std::mem::size_of::<Histogram<u64>>() + h.distinct_values() * 8,
        }
    }

    /// Gives back what a list grown by pushes holds beyond its buckets (a histogram kept for long).
    pub fn shrink(&mut self) {
        if let Repr::Listed { buckets, .. } = &mut self.0 {
            buckets.shrink_to_fit();
        }
    }

    #[inline]
    pub fn record(&mut self, value: u64) {
        self.record_n(value, 1);
    }

    /// Records `count` values `value` (a count of 0 records nothing, as in HDR).
    #[inline]
    pub fn record_n(&mut self, value: u64, count: u64) {
        if count == 0 {
            return;
        }
        match &mut self.0 {
            Repr::Array(h) => {
                let _ = h.record_n(value, count);
            }
            Repr::Listed { buckets, total } => {
                let low = shape().lowest_equivalent(value);
                let (Ok(key), Ok(n)) = (u32::try_from(low), u32::try_from(count)) else {
                    return self.record_in_array(value, count);
                };
                match buckets.binary_search_by_key(&key, |b| b.0) {
                    Ok(i) => match buckets[i].1.checked_add(n) {
                        Some(c) => buckets[i].1 = c,
                        None => return self.record_in_array(value, count),
                    },
                    Err(i) => buckets.insert(i, (key, n)),
                }
                *total += count;
                let max = u64::from(buckets.last().map_or(0, |b| b.0));
                if *total >= dense_len(max) {
                    self.make_array();
                }
            }
        }
    }

    #[cold]
    fn record_in_array(&mut self, value: u64, count: u64) {
        self.make_array();
        self.record_n(value, count);
    }

    /// Turns the list into HDR's array.
    fn make_array(&mut self) {
        if let Repr::Listed { .. } = self.0 {
            let h = self.dense().into_owned();
            self.0 = Repr::Array(Box::new(h));
        }
    }

    /// HDR's histogram of these counts (borrowed when it is one already).
    pub fn dense(&self) -> Cow<'_, Histogram<u64>> {
        match &self.0 {
            Repr::Array(h) => Cow::Borrowed(h),
            Repr::Listed { buckets, .. } => {
                let mut h = new_histogram();
                for &(k, n) in buckets {
                    let _ = h.record_n(u64::from(k), u64::from(n));
                }
                Cow::Owned(h)
            }
        }
    }

    /// Adds another histogram's counts (losslessly, as HDR's `add`).
    pub fn add(&mut self, other: &Hist) {
        match (&mut self.0, &other.0) {
            (_, Repr::Listed { buckets, .. }) if buckets.is_empty() => {}
            (Repr::Array(a), Repr::Array(b)) => a.add(&**b).expect("auto-resizing histograms always merge"),
            (Repr::Array(a), Repr::Listed { buckets, .. }) => {
                for &(k, n) in buckets {
                    let _ = a.record_n(u64::from(k), u64::from(n));
                }
            }
            (Repr::Listed { .. }, Repr::Array(_)) => {
                self.make_array();
                self.add(other);
            }
            (Repr::Listed { buckets: a, total }, Repr::Listed { buckets: b, total: tb }) => {
                let merged = merge_lists(a, b);
                match merged {
                    Some(m) => {
                        *a = m;
                        *total += tb;
                        let max = u64::from(a.last().map_or(0, |b| b.0));
                        if *total >= dense_len(max) {
                            self.make_array();
                        }
                    }
                    None => {
                        // A count past u32: the array's.
                        self.make_array();
                        self.add(other);
                    }
                }
            }
        }
    }

    pub fn len(&self) -> u64 {
        match &self.0 {
            Repr::Listed { total, .. } => *total,
            Repr::Array(h) => h.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The buckets with counts, in order: (the bucket's highest value, its count), as HDR's
    /// `iter_recorded` gives `value_iterated_to` and `count_at_value`.
    pub fn iter_recorded(&self) -> Box<dyn Iterator<Item = (u64, u64)> + '_> {
        match &self.0 {
            Repr::Listed { buckets, .. } => {
                Box::new(buckets.iter().map(|&(k, n)| (shape().highest_equivalent(u64::from(k)), u64::from(n))))
            }
            Repr::Array(h) => Box::new(h.iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value()))),
        }
    }

    /// HDR's `min`: the lowest bucket's lowest value (0 when empty).
    pub fn min(&self) -> u64 {
        match &self.0 {
            Repr::Listed { buckets, .. } => buckets.first().map_or(0, |b| u64::from(b.0)),
            Repr::Array(h) => h.min(),
        }
    }

    /// HDR's `max`: the highest bucket's highest value (0 when empty).
    pub fn max(&self) -> u64 {
        match &self.0 {
            Repr::Listed { buckets, .. } => buckets.last().map_or(0, |b| shape().highest_equivalent(u64::from(b.0))),
            Repr::Array(h) => h.max(),
        }
    }

    pub fn lowest_equivalent(&self, value: u64) -> u64 {
        shape().lowest_equivalent(value)
    }

    pub fn highest_equivalent(&self, value: u64) -> u64 {
        shape().highest_equivalent(value)
    }

    /// HDR's `mean`: each bucket's middle, weighted (summed in HDR's order, so to the bit).
    pub fn mean(&self) -> f64 {
        match &self.0 {
            Repr::Array(h) => h.mean(),
            Repr::Listed { buckets, total } => {
                if *total == 0 {
                    return 0.0;
                }
                buckets.iter().fold(0.0_f64, |sum, &(k, n)| {
                    sum + shape().median_equivalent(u64::from(k)) as f64 * n as f64 / *total as f64
                })
            }
        }
    }

    /// HDR's `stdev`.
    pub fn stdev(&self) -> f64 {
        match &self.0 {
            Repr::Array(h) => h.stdev(),
            Repr::Listed { buckets, total } => {
                if *total == 0 {
                    return 0.0;
                }
                let mean = self.mean();
                let sum = buckets.iter().fold(0.0_f64, |s, &(k, n)| {
                    let dev = shape().median_equivalent(u64::from(k)) as f64 - mean;
                    s + (dev * dev) * n as f64
                });
                (sum / *total as f64).sqrt()
            }
        }
    }

    pub fn value_at_percentile(&self, percentile: f64) -> u64 {
        self.value_at_quantile(percentile / 100.0)
    }

    /// HDR's `value_at_quantile`: the highest value of the bucket where the count reaches
    /// ceil(quantile x total) (the lowest at quantile 0).
    pub fn value_at_quantile(&self, quantile: f64) -> u64 {
        match &self.0 {
            Repr::Array(h) => h.value_at_quantile(quantile),
            Repr::Listed { buckets, total } => {
                let quantile = if quantile > 1.0 { 1.0 } else { quantile };
                let mut target = (quantile * *total as f64).ceil() as u64;
                if target == 0 {
                    target = 1;
                }
                let mut running = 0u64;
                for &(k, n) in buckets {
                    running += u64::from(n);
                    if running >= target {
                        let k = u64::from(k);
                        return if quantile == 0.0 { k } else { shape().highest_equivalent(k) };
                    }
                }
                0
            }
        }
    }

    /// HDR's `count_between(low, high)`: the counts of the buckets from `low`'s to `high`'s.
    pub fn count_between(&self, low: u64, high: u64) -> u64 {
        match &self.0 {
            Repr::Array(h) => h.count_between(low, high),
            Repr::Listed { buckets, .. } => {
                let (lo, hi) = (shape().lowest_equivalent(low), shape().lowest_equivalent(high));
                buckets.iter().filter(|b| (lo..=hi).contains(&u64::from(b.0))).map(|b| u64::from(b.1)).sum()
            }
        }
    }

    /// HDR's `iter_quantiles(ticks)`: (`quantile_iterated_to`, `value_iterated_to`) of each step.
    pub fn quantile_steps(&self, ticks_per_half_distance: u32) -> Vec<(f64, u64)> {
        match &self.0 {
            Repr::Array(h) => h
                .iter_quantiles(ticks_per_half_distance)
                .map(|v| (v.quantile_iterated_to(), v.value_iterated_to()))
                .collect(),
            Repr::Listed { buckets, total } => quantile_steps(buckets, *total, ticks_per_half_distance),
        }
    }
}

/// Two sorted lists merged; None if a count would pass u32.
fn merge_lists(a: &[(u32, u32)], b: &[(u32, u32)]) -> Option<Vec<(u32, u32)>> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].0.cmp(&b[j].0) {
            std::cmp::Ordering::Less => {
                out.push(a[i]);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                out.push(b[j]);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                out.push((a[i].0, a[i].1.checked_add(b[j].1)?));
                i += 1;
                j += 1;
            }
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    Some(out)
}

/// HDR's quantile iteration (`iterators::quantile` driven by `HistogramIterator`) over the listed
/// buckets: the iterator stays on a bucket while its running count is past the next step, and once
/// it has stepped on the last bucket it makes one more step, at quantile 1.
fn quantile_steps(buckets: &[(u32, u32)], total: u64, ticks: u32) -> Vec<(f64, u64)> {
    let mut out = Vec::new();
    let (mut to, mut reached_end) = (0.0_f64, false);
    let mut running = 0u64;
    let last = buckets.len().wrapping_sub(1);
    let mut picked_last = false;
    let mut i = 0;
    let mut fresh = true;
    while i < buckets.len() {
        if picked_last {
            // `more`: once past the last bucket's first step, one step at 1.0, then the end.
            if reached_end {
                break;
            }
            to = 1.0;
        } else if fresh {
            running = running.saturating_add(u64::from(buckets[i].1));
            fresh = false;
        }
        // `pick`
        let current = running as f64 / total as f64;
        let step = if current < to || reached_end {
            None
        } else if to == 1.0 {
            reached_end = true;
            Some(1.0)
        } else {
            let halvings = (1.0 / (1.0 - to)).log2() as u32;
            let total_ticks = u64::from(ticks)
                .checked_mul(1_u64.checked_shl(halvings + 1).expect("too many halvings"))
                .expect("too many total ticks");
            let at = to;
            let sum = to + 1.0 / total_ticks as f64;
            to = if sum == to { 1.0 } else { sum };
            Some(at)
        };
        match step {
            Some(q) => {
                out.push((q, shape().highest_equivalent(u64::from(buckets[i].0))));
                picked_last = i == last;
            }
            None => {
                i += 1;
                fresh = true;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The same values in both forms: the list (values recorded one by one, never promoted: fewer
    /// than the array's counts) and HDR's array.
    fn both(values: &[(u64, u64)]) -> (Hist, Histogram<u64>) {
        let mut dense = new_histogram();
        let mut listed = Hist::default();
        for &(v, n) in values {
            dense.record_n(v, n).unwrap();
            listed.record_n(v, n);
        }
        (listed, dense)
    }

    fn values() -> impl Strategy<Value = Vec<(u64, u64)>> {
        // Log-spread values from 0 to 10^8 µs, a few repeated.
        prop::collection::vec(((0u32..27).prop_flat_map(|b| 0..(1u64 << b)), 1u64..4), 1..300)
    }

    proptest! {
        #[test]
        fn every_reading_of_the_list_is_hdrs(values in values(), quantiles in prop::collection::vec(0.0f64..=1.0, 5)) {
            let (listed, dense) = both(&values);
            prop_assert!(!listed.is_array());
            prop_assert_eq!(listed.len(), dense.len());
            prop_assert_eq!(listed.min(), dense.min());
            prop_assert_eq!(listed.max(), dense.max());
            prop_assert_eq!(listed.mean().to_bits(), dense.mean().to_bits());
            prop_assert_eq!(listed.stdev().to_bits(), dense.stdev().to_bits());
            for q in quantiles.iter().copied().chain([0.0, 0.5, 0.99, 0.999, 1.0]) {
                prop_assert_eq!(listed.value_at_quantile(q), dense.value_at_quantile(q), "q {}", q);
            }
            for p in crate::stats::PERCENTILES {
                prop_assert_eq!(listed.value_at_percentile(p), dense.value_at_percentile(p));
            }
            for &(v, _) in &values {
                prop_assert_eq!(listed.count_between(0, v), dense.count_between(0, v));
            }
            prop_assert_eq!(listed.count_between(0, u64::MAX >> 2), dense.count_between(0, u64::MAX >> 2));
            let steps: Vec<(f64, u64)> =
                dense.iter_quantiles(5).map(|v| (v.quantile_iterated_to(), v.value_iterated_to())).collect();
            prop_assert_eq!(listed.quantile_steps(5), steps);
            let recorded: Vec<(u64, u64)> =
                dense.iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value())).collect();
            prop_assert_eq!(listed.iter_recorded().collect::<Vec<_>>(), recorded);
            prop_assert_eq!(&*listed.dense(), &dense);
            let array = Hist::from(dense.clone());
            prop_assert_eq!(&listed, &array);
            let mut arr = Hist(Repr::Array(Box::new(dense.clone())));
            arr.add(&listed);
            let mut twice = dense.clone();
            twice.add(&dense).unwrap();
            prop_assert_eq!(&*arr.dense(), &twice);
        }

        #[test]
        fn lists_merge_as_arrays_do(a in values(), b in values()) {
            let (mut la, mut da) = both(&a);
            let (lb, db) = both(&b);
            la.add(&lb);
            da.add(&db).unwrap();
            prop_assert_eq!(&*la.dense(), &da);
            prop_assert_eq!(la.len(), da.len());
        }
    }

    #[test]
    fn a_histogram_becomes_an_array_once_that_costs_at_most_8_bytes_a_value() {
        let mut h = Hist::default();
        assert_eq!(h.heap_bytes(), 0, "nothing until something is recorded");
        for v in 0..2047u64 {
            h.record(300 + v % 1500); // up to 1.8 ms: the array would be 2,048 counts
        }
        assert!(!h.is_array());
        assert!(h.heap_bytes() <= 2047 * 8 * 2, "{}", h.heap_bytes());
        h.record(1000);
        assert!(h.is_array(), "2,048 values: the array's 2,048 counts are 8 bytes each");
        assert_eq!(h.len(), 2048);
        // A value past u32 (71 minutes) or a count past it goes to the array at once.
        let mut long = Hist::default();
        long.record(5_000_000_000);
        assert!(long.is_array());
        let mut many = Hist::default();
        many.record_n(10, 1 << 33);
        assert!(many.is_array());
        assert_eq!(many.len(), 1 << 33);
        // A few values over a wide range stay listed (the array up to 10 s: 15,360 counts, 120 KB).
        let mut wide = Hist::default();
        for v in [1u64, 50, 3_000, 250_000, 9_000_000] {
            wide.record(v);
        }
        assert!(!wide.is_array() && wide.heap_bytes() <= 64, "{}", wide.heap_bytes());
    }

    #[test]
    fn dense_len_is_hdrs() {
        for max in [0u64, 1, 2047, 2048, 4095, 4096, 10_000, 1 << 20, 5_000_000_000] {
            let mut h = new_histogram();
            h.record(max).unwrap();
            assert_eq!(dense_len(max), h.distinct_values() as u64, "{max}");
        }
    }
}
