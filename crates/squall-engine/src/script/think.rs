//! Native users' think times, woken by the engine's passes instead of a tokio timer each.
//!
//! Policy: a native user that thinks (`native`) puts its task's waker (or itself, when the engine's
//! pass is to send its next request: native.rs `send_now`) in the slot of the millisecond
//! its wait ends (rounded up: a wait never ends sooner than asked, as tokio's timers, whose
//! granularity is also a millisecond); every pass of the engine (`ScriptEngine::turn`, and `poll`'s
//! waits, which wake for the next slot due) wakes the users whose millisecond has come. The slots are
//! a ring of `SLOTS` milliseconds: a wait longer than the ring stays in its slot for the laps before
//! its own, looked at once a lap.
//!
//! Why: tokio's wheel keeps a 100-200 ms timer in its second level, moves it to the first as its
//! slot comes, then fires it: three edits of intrusive lists whose neighbours are other users'
//! timers, inside their tasks' cold memory. With 1,000 native users `between(0.1, 0.2)` the wheel's
//! processing was 3-4% of the run's CPU (perf: `process_at_time`, `Sleep::poll`); here a user's wait
//! is one push onto a small vector and one wake.

use std::time::{Duration, Instant};

/// Milliseconds in the ring: waits up to about 4 s are looked at once.
const SLOTS: u64 = 4096;

/// The ring of think times; `T` is what a user leaves in its slot, handed back when its millisecond
/// comes (`wake`): its task's waker (native.rs `Thinker`).
pub(super) struct Thinkers<T> {
    start: Instant,
    /// The first millisecond (since `start`) whose users are not yet woken.
    next: u64,
    slots: Vec<Vec<(u64, T)>>,
    waiting: usize,
}

impl<T> Thinkers<T> {
    pub(super) fn new(start: Instant) -> Thinkers<T> {
        Thinkers { start, next: 0, slots: (0..SLOTS).map(|_| Vec::new()).collect(), waiting: 0 }
    }

    /// The millisecond a wait until `until` ends in: the first whose start is not before it.
    pub(super) fn millisecond(&self, until: Instant) -> u64 {
        until.saturating_duration_since(self.start).as_nanos().div_ceil(1_000_000) as u64
    }

    /// Whether the users of millisecond `ms` have been woken: a wait ending then is over.
    pub(super) fn passed(&self, ms: u64) -> bool {
        ms < self.next
    }

    /// `user` is handed back once millisecond `ms` has come.
    pub(super) fn add(&mut self, ms: u64, user: T) {
        self.slots[(ms % SLOTS) as usize].push((ms, user));
        self.waiting += 1;
    }

    /// Hands every user whose millisecond has come by `now` to `due`; returns how many.
    pub(super) fn wake(&mut self, now: Instant, mut due: impl FnMut(T)) -> usize {
        let upto = now.saturating_duration_since(self.start).as_millis() as u64;
        if upto < self.next {
            return 0;
        }
        let mut woken = 0;
        if self.waiting > 0 {
            for ms in self.next..=upto.min(self.next + SLOTS - 1) {
                let slot = &mut self.slots[(ms % SLOTS) as usize];
                let mut i = 0;
                while i < slot.len() {
                    if slot[i].0 <= upto {
                        due(slot.swap_remove(i).1);
                        woken += 1;
                    } else {
                        i += 1; // a later lap's
                    }
                }
            }
        }
        self.waiting -= woken;
        self.next = upto + 1;
        woken
    }

    /// When the next users may be due (the first slot with any: possibly a later lap's, which
    /// `wake` then leaves), or None when nobody thinks.
    pub(super) fn next_due(&self) -> Option<Instant> {
        if self.waiting == 0 {
            return None;
        }
        let ahead = (0..SLOTS).find(|i| !self.slots[((self.next + i) % SLOTS) as usize].is_empty())?;
        Some(self.start + Duration::from_millis(self.next + ahead))
    }

    /// How many users wait.
    #[cfg(test)]
    fn waiting(&self) -> usize {
        self.waiting
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::{Wake, Waker};

    /// What the engine does with a user whose time has come, at its simplest: wakes its task.
    fn wake(t: &mut Thinkers<Waker>, now: Instant) -> usize {
        t.wake(now, Waker::wake)
    }

    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn waker() -> (Arc<Count>, Waker) {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        (count.clone(), Waker::from(count))
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_wait_ends_in_the_first_millisecond_not_before_it() {
        let t0 = Instant::now();
        let t = Thinkers::<Waker>::new(t0);
        assert_eq!(t.millisecond(t0 + ms(150)), 150);
        assert_eq!(t.millisecond(t0 + ms(150) + Duration::from_nanos(1)), 151);
        assert_eq!(t.millisecond(t0), 0);
    }

    #[test]
    fn users_wake_exactly_when_their_millisecond_comes() {
        let t0 = Instant::now();
        let mut t = Thinkers::new(t0);
        let (a, wa) = waker();
        let (b, wb) = waker();
        t.add(100, wa);
        t.add(150, wb);
        assert_eq!(t.next_due(), Some(t0 + ms(100)));
        assert_eq!(wake(&mut t, t0 + ms(99) + Duration::from_micros(999)), 0);
        assert!(!t.passed(100));
        assert_eq!(wake(&mut t, t0 + ms(100)), 1);
        assert!(t.passed(100) && !t.passed(101));
        assert_eq!((a.0.load(Ordering::SeqCst), b.0.load(Ordering::SeqCst)), (1, 0));
        assert_eq!(t.next_due(), Some(t0 + ms(150)));
        // A late pass wakes all that came meanwhile, once.
        assert_eq!(wake(&mut t, t0 + ms(400)), 1);
        assert_eq!(wake(&mut t, t0 + ms(401)), 0);
        assert_eq!((a.0.load(Ordering::SeqCst), b.0.load(Ordering::SeqCst)), (1, 1));
        assert_eq!((t.waiting(), t.next_due()), (0, None));
    }

    #[test]
    fn a_wait_longer_than_the_ring_waits_for_its_own_lap() {
        let t0 = Instant::now();
        let mut t = Thinkers::new(t0);
        let (long, wl) = waker();
        let (short, ws) = waker();
        t.add(SLOTS + 10, wl); // the same slot as millisecond 10
        t.add(10, ws);
        assert_eq!(wake(&mut t, t0 + ms(10)), 1);
        assert_eq!((long.0.load(Ordering::SeqCst), short.0.load(Ordering::SeqCst)), (0, 1));
        // Its slot counts as the next due (a lower bound), and is passed over until its lap.
        assert_eq!(t.next_due(), Some(t0 + ms(SLOTS + 10)));
        assert_eq!(wake(&mut t, t0 + ms(SLOTS + 9)), 0);
        assert_eq!(wake(&mut t, t0 + ms(SLOTS + 10)), 1);
        assert_eq!(long.0.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_pass_after_a_long_gap_looks_at_each_slot_once() {
        let t0 = Instant::now();
        let mut t = Thinkers::new(t0);
        let counts: Vec<_> = (0..100)
            .map(|i| {
                let (c, w) = waker();
                t.add(i * 97, w);
                c
            })
            .collect();
        // 10 s later: every wait (the last at 9.6 s) has ended, each woken once.
        assert_eq!(wake(&mut t, t0 + ms(10_000)), 100);
        assert!(counts.iter().all(|c| c.0.load(Ordering::SeqCst) == 1));
        assert_eq!(t.waiting(), 0);
    }
}
