//! The engine's one precise clock. tokio's timer has a 1 ms granularity, which would add up to a
//! millisecond to every intended send time (and so to every latency counted from it). A timerfd armed
//! for an absolute CLOCK_MONOTONIC time wakes within microseconds of it, once the thread's timer slack
//! is 1 ns instead of the default 50 µs. Two ways to wait on it:
//! - `sleep_until`, blocking: the open model's feeder thread, which issues intended send times;
//! - `Pacer`, on a runtime: one timerfd per engine thread, armed for the earliest intended send time
//!   of the tasks paced on it (MQTT clients), whose epoll wakes the tasks that are due.

use std::cell::{Cell, RefCell};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::rc::Rc;
use std::time::{Duration, Instant};
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::sync::Notify;

struct Due {
    at: Instant,
    seq: u64,
    wake: Rc<Notify>,
}

impl PartialEq for Due {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for Due {}
impl PartialOrd for Due {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Due {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(o.at, o.seq))
    }
}

/// A timerfd on CLOCK_MONOTONIC; the calling thread gets tight wake-ups.
pub struct TimerFd(OwnedFd);

impl TimerFd {
    pub fn new(nonblocking: bool) -> std::io::Result<TimerFd> {
        // Tight wake-ups on this thread (the default timer slack is 50 µs).
        unsafe {
            libc::prctl(libc::PR_SET_TIMERSLACK, 1, 0, 0, 0);
        }
        let flags = libc::TFD_CLOEXEC | if nonblocking { libc::TFD_NONBLOCK } else { 0 };
        let raw = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, flags) };
        if raw < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `raw` is the timerfd just created, owned from here on by the OwnedFd.
        Ok(TimerFd(unsafe { OwnedFd::from_raw_fd(raw) }))
    }

    /// Arms the timer for `at` (at once if it has passed).
    pub fn arm(&self, at: Instant) {
        // Instant is CLOCK_MONOTONIC on Linux, but opaque: the target is now + the time left.
        let left = at.saturating_duration_since(Instant::now()).max(Duration::from_nanos(1));
        let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
        let nanos = now.tv_nsec as u64 + left.subsec_nanos() as u64;
        let value = libc::timespec {
            tv_sec: now.tv_sec + left.as_secs() as libc::time_t + (nanos / 1_000_000_000) as libc::time_t,
            tv_nsec: (nanos % 1_000_000_000) as libc::c_long,
        };
        let spec = libc::itimerspec { it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 }, it_value: value };
        unsafe { libc::timerfd_settime(self.0.as_raw_fd(), libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut()) };
    }

    /// Consumes the expirations (blocks on a blocking timer until it fires).
    pub fn read(&self) {
        let mut expirations = 0u64;
        unsafe { libc::read(self.0.as_raw_fd(), &mut expirations as *mut u64 as *mut libc::c_void, 8) };
    }
}

impl std::os::fd::AsFd for TimerFd {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.0.as_fd()
    }
}

impl AsRawFd for TimerFd {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.0.as_raw_fd()
    }
}

thread_local! {
    static BLOCKING: Option<TimerFd> = TimerFd::new(false).ok();
}

/// Blocks the calling thread until `at`, precisely.
pub fn sleep_until(at: Instant) {
    BLOCKING.with(|t| match t {
        Some(timer) if at > Instant::now() => {
            timer.arm(at);
            timer.read();
        }
        Some(_) => {}
        None => std::thread::sleep(at.saturating_duration_since(Instant::now())),
    })
}

/// One precise sleep at a time on a runtime (the scripted engine's wait for the script's next timer).
pub struct AsyncTimer {
    fd: AsyncFd<TimerFd>,
    /// When the timer is armed to fire, until it is seen firing.
    armed: Cell<Option<Instant>>,
}

impl AsyncTimer {
    /// A timer for the calling thread's runtime.
    pub fn new() -> std::io::Result<AsyncTimer> {
        // SAFETY: the timerfd is owned by the AsyncFd and closed only when it is dropped.
        let fd = unsafe { AsyncFd::register_with_interest(TimerFd::new(true)?, Interest::READABLE) }
            .map_err(|_| std::io::Error::other("cannot register a timerfd with the runtime"))?;
        Ok(AsyncTimer { fd, armed: Cell::new(None) })
    }

    /// Resolves at `at`, within microseconds; only the latest sleep counts. The timer is armed only
    /// when it would not fire by `at` already: a scripted run's polls mostly wait for the same moment
    /// (the script's next timer), and each arming is a system call (`timerfd_settime`: 0.12 a request
    /// on shop.py, 50 users `constant(0)`, about 0.7 µs each on this host). Woken sooner, by a sleep
    /// that asked for an earlier moment and was dropped, it arms for `at` then.
    pub async fn sleep_until(&self, at: Instant) {
        if !self.armed.get().is_some_and(|armed| armed <= at && armed > Instant::now()) {
            self.arm(at);
        }
        while Instant::now() < at {
            let Ok(mut guard) = self.fd.readable().await else { return };
            self.fd.get_ref().read(); // an expiry of an earlier, abandoned sleep is read and ignored
            guard.clear_ready();
            self.armed.set(None);
            if Instant::now() < at {
                self.arm(at);
            }
        }
    }

    fn arm(&self, at: Instant) {
        self.armed.set(Some(at));
        self.fd.get_ref().arm(at);
    }
}

pub struct Pacer {
    fd: AsyncFd<TimerFd>,
    heap: RefCell<BinaryHeap<Reverse<Due>>>,
    armed: Cell<Option<Instant>>,
    seq: Cell<u64>,
}

impl Pacer {
    /// A pacer for the calling thread's runtime.
    pub fn new() -> std::io::Result<Pacer> {
        // SAFETY: the timerfd is owned by the AsyncFd and closed only when it is dropped.
        let fd = unsafe { AsyncFd::register_with_interest(TimerFd::new(true)?, Interest::READABLE) }
            .map_err(|_| std::io::Error::other("cannot register the pacer's timerfd with the runtime"))?;
        Ok(Pacer { fd, heap: RefCell::default(), armed: Cell::new(None), seq: Cell::new(0) })
    }

    /// Notifies `wake` at `at` (at once if it has passed).
    pub fn wake_at(&self, at: Instant, wake: &Rc<Notify>) {
        let seq = self.seq.get();
        self.seq.set(seq + 1);
        self.heap.borrow_mut().push(Reverse(Due { at, seq, wake: wake.clone() }));
        if self.armed.get().is_none_or(|a| at < a) {
            self.arm(at);
        }
    }

    fn arm(&self, at: Instant) {
        self.armed.set(Some(at));
        self.fd.get_ref().arm(at);
    }

    /// Runs for the life of the thread: wakes the clients whose time has come.
    pub async fn run(self: Rc<Self>) {
        loop {
            let Ok(mut guard) = self.fd.readable().await else { return };
            self.fd.get_ref().read();
            guard.clear_ready();
            self.armed.set(None);
            let now = Instant::now();
            let mut heap = self.heap.borrow_mut();
            while heap.peek().is_some_and(|Reverse(d)| d.at <= now) {
                heap.pop().unwrap().0.wake.notify_one();
            }
            if let Some(Reverse(next)) = heap.peek() {
                let at = next.at;
                drop(heap);
                self.arm(at);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sleep_until_is_never_early_and_rarely_late() {
        let start = Instant::now();
        for i in 1..=20u64 {
            let at = start + Duration::from_micros(700 * i);
            sleep_until(at);
            assert!(Instant::now() >= at);
        }
        // 20 sleeps of 0.7 ms: a coarse timer would round each up to a millisecond or more.
        assert!(start.elapsed() < Duration::from_millis(200), "{:?}", start.elapsed());
    }

    #[test]
    fn wakes_each_client_at_its_time_and_never_early() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, async {
            let pacer = Rc::new(Pacer::new().unwrap());
            tokio::task::spawn_local(pacer.clone().run());
            let start = Instant::now();
            let (early, late) = (Rc::new(Notify::new()), Rc::new(Notify::new()));
            pacer.wake_at(start + Duration::from_millis(30), &late);
            pacer.wake_at(start + Duration::from_millis(10), &early); // re-arms for the earlier time
            early.notified().await;
            let first = start.elapsed();
            late.notified().await;
            let second = start.elapsed();
            assert!(first >= Duration::from_millis(10) && first < Duration::from_millis(30), "{first:?}");
            assert!(second >= Duration::from_millis(30), "{second:?}");
        });
    }

    #[test]
    fn an_async_sleep_ends_at_its_own_time_whatever_sleeps_were_dropped_before_it() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let timer = AsyncTimer::new().unwrap();
            let ms = Duration::from_millis;
            // Polled once (armed), then dropped: as `poll`'s select drops its sleep when a response comes.
            let timer = &timer;
            let dropped = |at| async move {
                let _ = tokio::time::timeout(Duration::ZERO, timer.sleep_until(at)).await;
            };
            let took = async |at: Instant| {
                timer.sleep_until(at).await;
                Instant::now()
            };
            // A later sleep after an earlier one was dropped: the earlier expiry wakes it, and it sleeps on.
            let start = Instant::now();
            dropped(start + ms(20)).await;
            let woke = took(start + ms(60)).await;
            assert!(woke >= start + ms(60), "{:?}", woke - start);
            // An earlier sleep after a later one was dropped: armed again, for the earlier moment.
            let start = Instant::now();
            dropped(start + ms(200)).await;
            let woke = took(start + ms(20)).await;
            assert!(woke >= start + ms(20) && woke < start + ms(150), "{:?}", woke - start);
            // The same moment again (the timer left armed for it): on time, not early, not stuck.
            let start = Instant::now();
            dropped(start + ms(30)).await;
            let woke = took(start + ms(30)).await;
            assert!(woke >= start + ms(30) && woke < start + ms(150), "{:?}", woke - start);
            // After it fired unread (a dropped sleep's expiry): a new sleep still waits for its own time.
            let start = Instant::now();
            dropped(start + ms(5)).await;
            std::thread::sleep(ms(15));
            let woke = took(start + ms(50)).await;
            assert!(woke >= start + ms(50), "{:?}", woke - start);
        });
    }
}
