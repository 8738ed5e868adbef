//! The run's per-second statistics and their live stream. Every recorder (one per engine thread)
//! hands each finished second to the shared timeline; the run's coordinator publishes a second once
//! every recorder has moved past it, and any number of subscribers (the console, a dashboard,
//! thresholds, a remote driver) read the published seconds, each at its own pace.
//!
//! Policy: a second is published when every live recorder has rolled past it (recorders roll on
//! each record and on their thread's timer tick, at most every 250 ms), or, whatever they say,
//! `STRAGGLER_LIMIT` after it ended, so that one stalled thread cannot hold the stream back. A
//! count that reaches the timeline after its second was published still goes into the final result
//! (`all`), not into the stream: the stream is prompt, the result exact.
//!
//! Beside the seconds, the timeline keeps the live totals a dashboard's table shows: every endpoint's
//! statistics and the errors, summed over the seconds published (and the late counts) since the start
//! or since the last `reset_totals`, so that reading them costs one copy, not a merge of every second.

use super::lag::Lag;
use super::{merge_errors, EndpointStats, ErrorEntry, ErrorKey, PackedSecond};
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// A second is published at the latest this long after it ended.
pub const STRAGGLER_LIMIT: Duration = Duration::from_secs(2);

/// Live counters one recorder publishes for progress lines and the stream's policy; padded so that
/// threads don't share a cache line.
#[repr(align(128))]
#[derive(Default)]
pub struct LiveCounters {
    pub completed: AtomicU64,
    pub failed: AtomicU64,
    /// The second the recorder is in (u64::MAX once its thread is done).
    pub second: AtomicU64,
}

/// Published seconds this recent keep their endpoints in full (the live stream's readers take a second
/// within one or two of its publication); older ones are packed (`PackedSecond`), so that a run's
/// memory does not grow with its length. In full a second is an `EndpointStats` (112 bytes) for every
/// endpoint id, with requests in it or not: 16 seconds kept in full were 9 MB with 5,000 names
/// (tests/memory.rs). Packed, it is its endpoints with requests, about 20 bytes each, and reading it
/// back is decoding those (a histogram held as HDR's array: inflating its V2 serialization).
pub const KEEP_FULL: usize = 2;

/// A published second's endpoints: in full, or packed once `KEEP_FULL` newer seconds are published.
#[derive(Debug)]
pub enum SecondStats {
    Full(Vec<EndpointStats>),
    Packed(PackedSecond),
}

/// One published second: per endpoint (by id), what completed during it.
#[derive(Debug)]
pub struct Second {
    /// Seconds since the start of the run.
    pub t: u64,
    /// Virtual users (connections, users or clients) during this second: the most seen.
    pub users: u64,
    /// The engine's connections open during this second: the most seen (None: not counted).
    pub connections: Option<u64>,
    stats: SecondStats,
    /// Everything published from the start of the run up to the end of this second, all endpoints.
    pub cumulative: Cumulative,
    /// Paced loads: the sends of this second and how late they went out.
    pub lag: Lag,
}

impl Second {
    /// Per endpoint (by id), what completed during the second (unpacked if it was packed).
    pub fn endpoints(&self) -> Cow<'_, [EndpointStats]> {
        match &self.stats {
            SecondStats::Full(v) => Cow::Borrowed(v),
            SecondStats::Packed(p) => Cow::Owned(p.unpack()),
        }
    }

    fn packed(&self) -> Option<Second> {
        let SecondStats::Full(v) = &self.stats else { return None };
        let stats = SecondStats::Packed(PackedSecond::pack(v));
        Some(Second { stats, cumulative: self.cumulative.clone(), ..*self })
    }
}

/// Running totals at the end of a second (the aggregate over every endpoint).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Cumulative {
    pub requests: u64,
    pub failures: u64,
    pub median_us: u64,
    pub mean_us: f64,
    pub min_us: u64,
    pub max_us: u64,
    pub body_bytes: u64,
}

impl Cumulative {
    pub fn of(running: &EndpointStats) -> Cumulative {
        let w = running.within();
        Cumulative {
            requests: running.requests,
            failures: running.failures,
            median_us: w.percentile(50.0),
            mean_us: w.mean(),
            min_us: w.min_us,
            max_us: w.max_us,
            body_bytes: running.body_bytes,
        }
    }
}

/// The live totals: per endpoint (by id) and the errors, since the start or the last reset.
#[derive(Debug, Clone, Default)]
pub struct Totals {
    pub endpoints: Vec<EndpointStats>,
    pub errors: HashMap<ErrorKey, ErrorEntry>,
    /// The first second they count (the seconds before it, published before their last reset or
    /// after, are not): 0 from the start; after a reset the second after the one it was asked in.
    pub since: u64,
}

pub struct Timeline {
    pub start: Instant,
    inner: Mutex<Inner>,
    published_cv: Condvar,
}

#[derive(Default)]
struct Inner {
    recorders: Vec<Arc<LiveCounters>>,
    /// Endpoint names by id: (method, name).
    names: Vec<(String, String)>,
    /// Seconds not yet published.
    open: BTreeMap<u64, Vec<EndpointStats>>,
    /// Published seconds, contiguous from 0 (empty seconds included).
    published: Vec<Arc<Second>>,
    /// Counts that arrived for a second already published.
    late: BTreeMap<u64, Vec<EndpointStats>>,
    users: Gauge,
    connections: Gauge,
    /// Errors of seconds not yet published, by second.
    open_errors: BTreeMap<u64, HashMap<ErrorKey, ErrorEntry>>,
    /// Send lag by second, published or not (small: four numbers a second).
    lag: BTreeMap<u64, Lag>,
    /// Every published second merged (all endpoints), for each second's `cumulative`.
    running: EndpointStats,
    totals: Totals,
}

/// A value set from time to time (users, open connections), read per second as the most it was in
/// the second; a second in which it was not set has the value the one before ended with.
#[derive(Default)]
struct Gauge {
    now: u64,
    /// For each second not yet published in which it was set: (the most, the last value).
    open: BTreeMap<u64, (u64, u64)>,
    /// Its value at the end of the last published second.
    carried: u64,
    /// Whether it was ever set.
    set: bool,
}

impl Gauge {
    fn set(&mut self, sec: u64, v: u64) {
        self.now = v;
        self.set = true;
        let slot = self.open.entry(sec).or_insert((v, v));
        *slot = (slot.0.max(v), v);
    }

    /// Second `t`'s value, as it is published.
    fn publish(&mut self, t: u64) -> u64 {
        match self.open.remove(&t) {
            Some((most, last)) => {
                self.carried = last;
                most
            }
            None => self.carried,
        }
    }
}

/// Everything a run measured, second by second: for the final result. The seconds stay packed (a
/// run of 5,000 names unpacked every second at once: 560 KB a second, most of it empty endpoints);
/// the result unpacks one at a time.
pub struct AllSeconds {
    /// The seconds with requests.
    pub seconds: BTreeMap<u64, PackedSecond>,
    pub users: BTreeMap<u64, u64>,
    /// Open connections, when the run counted them.
    pub connections: Option<BTreeMap<u64, u64>>,
    pub lag: BTreeMap<u64, Lag>,
}

impl Timeline {
    pub fn new(start: Instant) -> Arc<Timeline> {
        Arc::new(Timeline { start, inner: Mutex::default(), published_cv: Condvar::new() })
    }

    /// A recorder's counters, summed into the run's progress.
    pub fn register(&self) -> Arc<LiveCounters> {
        let c = Arc::new(LiveCounters::default());
        self.inner.lock().unwrap().recorders.push(c.clone());
        c
    }

    /// (completed, failed) so far, over every recorder.
    pub fn counts(&self) -> (u64, u64) {
        let inner = self.inner.lock().unwrap();
        inner
            .recorders
            .iter()
            .fold((0, 0), |(c, f), r| (c + r.completed.load(Ordering::Relaxed), f + r.failed.load(Ordering::Relaxed)))
    }

    /// Names the endpoints (method, name) by id; ids not named are labelled by their number.
    pub fn set_names(&self, names: Vec<(String, String)>) {
        self.inner.lock().unwrap().names = names;
    }

    /// Adds one endpoint name; returns its id.
    pub fn add_name(&self, method: &str, name: &str) -> usize {
        let mut inner = self.inner.lock().unwrap();
        inner.names.push((method.to_string(), name.to_string()));
        inner.names.len() - 1
    }

    pub fn names(&self) -> Vec<(String, String)> {
        self.inner.lock().unwrap().names.clone()
    }

    /// The current number of virtual users.
    pub fn set_users(&self, users: u64) {
        let sec = self.start.elapsed().as_secs();
        self.inner.lock().unwrap().users.set(sec, users);
    }

    pub fn users(&self) -> u64 {
        self.inner.lock().unwrap().users.now
    }

    /// The number of the engine's connections open now (`net::open_connections`), as the run's loop
    /// reads it a few times a second.
    pub fn set_connections(&self, open: u64) {
        let sec = self.start.elapsed().as_secs();
        self.inner.lock().unwrap().connections.set(sec, open);
    }

    /// A recorder's finished second: its counts, the errors it saw in it, its send lag.
    pub fn push(&self, sec: u64, stats: Vec<EndpointStats>, errors: HashMap<ErrorKey, ErrorEntry>, lag: Lag) {
        let mut inner = self.inner.lock().unwrap();
        let inner = &mut *inner;
        if lag.sent > 0 {
            inner.lag.entry(sec).or_default().add(&lag);
        }
        if (sec as usize) < inner.published.len() {
            // Too late for the stream, not for the totals (unless a reset left its second out).
            if sec >= inner.totals.since {
                super::merge_vec(&mut inner.totals.endpoints, &stats);
                merge_errors(&mut inner.totals.errors, errors);
            }
            super::merge_vec(inner.late.entry(sec).or_default(), &stats);
        } else {
            super::merge_vec(inner.open.entry(sec).or_default(), &stats);
            if !errors.is_empty() {
                merge_errors(inner.open_errors.entry(sec).or_default(), errors);
            }
        }
    }

    /// The live totals (see the module's doc).
    pub fn totals(&self) -> Totals {
        self.inner.lock().unwrap().totals.clone()
    }

    /// Starts the live totals afresh (a dashboard's "reset stats"), empty now and counting the seconds
    /// from the next one on; returns that second, from which the recorders' totals count too
    /// (`Recorder::reset_totals`). The result keeps everything.
    pub fn reset_totals(&self) -> u64 {
        let since = self.start.elapsed().as_secs() + 1;
        self.inner.lock().unwrap().totals = Totals { since, ..Totals::default() };
        since
    }

    /// Publishes the seconds that are complete (see the module's policy); the run's coordinator calls
    /// this a few times a second. Returns how many seconds are published.
    pub fn publish_ready(&self, now: Instant) -> u64 {
        let elapsed = now.saturating_duration_since(self.start);
        let current = elapsed.as_secs();
        let forced = elapsed.saturating_sub(STRAGGLER_LIMIT).as_secs();
        let mut inner = self.inner.lock().unwrap();
        let rolled = inner.recorders.iter().map(|r| r.second.load(Ordering::Acquire)).min().unwrap_or(u64::MAX);
        let upto = rolled.min(current).max(forced);
        self.publish_locked(&mut inner, upto)
    }

    /// Publishes every second before `upto` (at the end of a run: all of them).
    pub fn publish_until(&self, upto: u64) -> u64 {
        let mut inner = self.inner.lock().unwrap();
        self.publish_locked(&mut inner, upto)
    }

    fn publish_locked(&self, inner: &mut Inner, upto: u64) -> u64 {
        let before = inner.published.len();
        while (inner.published.len() as u64) < upto {
            let t = inner.published.len() as u64;
            let endpoints = inner.open.remove(&t).unwrap_or_default();
            let users = inner.users.publish(t);
            let connections = inner.connections.set.then(|| inner.connections.publish(t));
            let mut all = EndpointStats::default();
            for e in endpoints.iter().filter(|e| e.has_counts()) {
                all.merge(e);
            }
            inner.running.merge(&all);
            let errors = inner.open_errors.remove(&t);
            if t >= inner.totals.since {
                super::merge_vec(&mut inner.totals.endpoints, &endpoints);
                if let Some(errors) = errors {
                    merge_errors(&mut inner.totals.errors, errors);
                }
            }
            let cumulative = Cumulative::of(&inner.running);
            let lag = inner.lag.get(&t).copied().unwrap_or_default();
            let stats = SecondStats::Full(endpoints);
            inner.published.push(Arc::new(Second { t, users, connections, stats, cumulative, lag }));
            if let Some(old) = inner.published.len().checked_sub(KEEP_FULL + 1) {
                if let Some(packed) = inner.published[old].packed() {
                    inner.published[old] = Arc::new(packed);
                }
            }
        }
        if inner.published.len() > before {
            self.published_cv.notify_all();
        }
        inner.published.len() as u64
    }

    /// Published seconds from `cursor` on, waiting up to `timeout` for one if there is none yet.
    pub fn seconds_since(&self, cursor: u64, timeout: Duration) -> Vec<Arc<Second>> {
        let inner = self.inner.lock().unwrap();
        let (inner, _) =
            self.published_cv.wait_timeout_while(inner, timeout, |i| (i.published.len() as u64) <= cursor).unwrap();
        inner.published.get(cursor as usize..).map(<[_]>::to_vec).unwrap_or_default()
    }

    /// Everything recorded so far, second by second, published or not, late counts included.
    pub fn all(&self) -> AllSeconds {
        let inner = self.inner.lock().unwrap();
        let mut seconds: BTreeMap<u64, PackedSecond> = BTreeMap::new();
        let mut users: BTreeMap<u64, u64> = BTreeMap::new();
        let mut connections = inner.connections.set.then(BTreeMap::new);
        for s in &inner.published {
            users.insert(s.t, s.users);
            if let (Some(c), Some(n)) = (connections.as_mut(), s.connections) {
                c.insert(s.t, n);
            }
            let packed = match &s.stats {
                SecondStats::Full(v) => PackedSecond::pack(v),
                SecondStats::Packed(p) => p.clone(),
            };
            if !packed.is_empty() {
                seconds.insert(s.t, packed);
            }
        }
        for (t, v) in inner.late.iter().chain(inner.open.iter()) {
            let mut endpoints = seconds.get(t).map(PackedSecond::unpack).unwrap_or_default();
            super::merge_vec(&mut endpoints, v);
            let packed = PackedSecond::pack(&endpoints);
            if !packed.is_empty() {
                seconds.insert(*t, packed);
            }
        }
        for (t, (most, _)) in &inner.users.open {
            users.insert(*t, *most);
        }
        if let Some(c) = connections.as_mut() {
            c.extend(inner.connections.open.iter().map(|(t, (most, _))| (*t, *most)));
        }
        AllSeconds { seconds, users, connections, lag: inner.lag.clone() }
    }
}

impl AllSeconds {
    /// Per endpoint (by id), what completed during second `t` (none: empty).
    pub fn endpoints(&self, t: u64) -> Vec<EndpointStats> {
        self.seconds.get(&t).map(PackedSecond::unpack).unwrap_or_default()
    }

    /// Users at second `t`: the gauge's most in it, or the value before it.
    pub fn users_at(&self, t: u64) -> u64 {
        self.users.range(..=t).next_back().map_or(0, |(_, u)| *u)
    }

    /// Open connections at second `t`, as `users_at` (None: the run did not count them).
    pub fn connections_at(&self, t: u64) -> Option<u64> {
        let c = self.connections.as_ref()?;
        Some(c.range(..=t).next_back().map_or(0, |(_, u)| *u))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{Outcome, Recorder};

    fn ok() -> Outcome {
        Outcome::Response { status: 200, body_bytes: 1, wire_bytes: 1 }
    }

    #[test]
    fn a_second_is_published_once_every_recorder_has_moved_past_it() {
        let start = Instant::now();
        let timeline = Timeline::new(start);
        let (mut a, mut b) = (Recorder::new(timeline.clone()), Recorder::new(timeline.clone()));
        let at = |ms: u64| start + Duration::from_millis(ms);
        a.record(at(100), 0, Duration::from_millis(1), &ok());
        b.record(at(200), 0, Duration::from_millis(1), &ok());
        a.record(at(1100), 0, Duration::from_millis(1), &ok()); // a rolls into second 1
        assert_eq!(timeline.publish_ready(at(1500)), 0, "b is still in second 0");
        b.roll(at(1200));
        assert_eq!(timeline.publish_ready(at(1500)), 1);
        let s = timeline.seconds_since(0, Duration::ZERO);
        assert_eq!((s.len(), s[0].t, s[0].endpoints()[0].requests), (1, 0, 2));
        // b records in second 1 and then stalls: it holds the stream back only until the straggler limit.
        b.record(at(1300), 0, Duration::from_millis(1), &ok());
        a.roll(at(2100));
        assert_eq!(timeline.publish_ready(at(3900)), 1);
        assert_eq!(timeline.publish_ready(at(4000)), 2);
        assert_eq!(timeline.seconds_since(1, Duration::ZERO)[0].endpoints()[0].requests, 1, "only a's");
        // b's count for second 1 arrives late: not in the stream, but in the final result.
        b.finish();
        a.finish();
        let all = timeline.all();
        assert_eq!(all.endpoints(1)[0].requests, 2);
        assert_eq!(all.seconds.values().map(|v| v.unpack()[0].requests).sum::<u64>(), 4);
        assert_eq!(timeline.counts(), (4, 0));
    }

    #[test]
    fn old_seconds_are_packed_and_read_back_exactly() {
        let start = Instant::now();
        let timeline = Timeline::new(start);
        let mut r = Recorder::new(timeline.clone());
        let n = KEEP_FULL as u64 + 10;
        for t in 0..n {
            for k in 0..50 {
                let latency = Duration::from_micros(100 + 37 * k + 1000 * t); // a different spread each second
                r.record(start + Duration::from_millis(1000 * t + 10 * k), 0, latency, &ok());
            }
        }
        r.finish();
        assert_eq!(timeline.publish_until(n), n);
        let seconds = timeline.seconds_since(0, Duration::ZERO);
        let packed = seconds.iter().filter(|s| matches!(s.stats, SecondStats::Packed(_))).count();
        assert_eq!(packed, n as usize - KEEP_FULL, "all but the newest KEEP_FULL");
        for (t, s) in seconds.iter().enumerate() {
            let e = &s.endpoints()[0];
            let t = t as u64;
            // Every value of the second, as recorded: the histogram came back whole.
            assert_eq!((e.requests, e.hist.len(), e.hist.min()), (50, 50, e.hist.lowest_equivalent(100 + 1000 * t)));
            assert_eq!(e.hist.max(), e.hist.highest_equivalent(100 + 37 * 49 + 1000 * t));
            assert_eq!(e.status, vec![(200, 50)]);
        }
        let all = timeline.all();
        assert_eq!(all.seconds.values().map(|v| v.unpack()[0].hist.len()).sum::<u64>(), 50 * n);
    }

    #[test]
    fn users_per_second_are_the_most_seen() {
        let start = Instant::now() - Duration::from_secs(5);
        let timeline = Timeline::new(start);
        timeline.set_users(3); // second 5
        timeline.set_users(7);
        timeline.set_users(4);
        timeline.publish_until(7);
        let s = timeline.seconds_since(0, Duration::ZERO);
        // Before the gauge was set: 0; its second: the most; after: the value it ended with.
        assert_eq!(s.iter().map(|s| s.users).collect::<Vec<_>>(), [0, 0, 0, 0, 0, 7, 4]);
    }

    #[test]
    fn totals_add_up_published_seconds_late_counts_and_errors_and_reset() {
        use crate::stats::{Failure, FailureKind};
        let start = Instant::now();
        let timeline = Timeline::new(start);
        let mut a = Recorder::new(timeline.clone());
        let at = |ms: u64| start + Duration::from_millis(ms);
        let refused = Outcome::Failed(Failure::new(FailureKind::ConnectRefused, ""));
        a.record(at(100), 0, Duration::from_millis(1), &ok());
        a.record(at(200), 1, Duration::from_millis(3), &refused);
        a.record(at(1100), 0, Duration::from_millis(2), &ok()); // rolls: second 0 goes to the timeline
        assert_eq!(timeline.totals().endpoints.len(), 0, "nothing published yet");
        timeline.publish_ready(at(1500));
        let t = timeline.totals();
        assert_eq!((t.endpoints[0].requests, t.endpoints[1].failures), (1, 1));
        assert_eq!(t.errors.values().map(|e| e.count).sum::<u64>(), 1);
        let s = timeline.seconds_since(0, Duration::ZERO);
        assert_eq!((s[0].cumulative.requests, s[0].cumulative.failures), (2, 1));
        // Second 1 is published by force; a's count for it arrives late and still joins the totals.
        assert_eq!(timeline.publish_ready(at(4100)), 2);
        assert_eq!(timeline.totals().endpoints[0].requests, 1);
        a.finish();
        assert_eq!(timeline.totals().endpoints[0].requests, 2);
        assert_eq!(timeline.totals().endpoints[0].hist.max(), timeline.all().endpoints(1)[0].hist.max());
        timeline.reset_totals();
        assert_eq!(timeline.totals().endpoints.len(), 0);
        assert_eq!(
            timeline.all().seconds.values().map(|v| v.unpack()[0].requests).sum::<u64>(),
            2,
            "the result keeps all"
        );
    }
}
