//! What the statistics hold per endpoint name, measured by the heap itself: a counting allocator
//! (this test binary's own) says how many bytes are live. A locustfile that names each request after
//! its id (`name=f"/item/{id}"`) makes thousands of endpoints; each must cost what it measured, not a
//! fixed price per name (issue 41: `squall -f` peaked at 2.3 GB with 5,000 names, 460 KB a name).
//!
//! Measured here with HDR's arrays everywhere (before `stats::hist`), 5,000 names, 20 s at 700
//! requests a second (a request or three a name): the recorder's totals 24.8 KB a name, its timing
//! phases 71.7 KB, the timeline (16 seconds in full, older ones packed, the live totals) 294 KB, and
//! 816 KB at the peak, when the result is built (4.0 GB). With `Hist` and packed seconds: 0.2, 0.2,
//! 2.2 and 12.4 KB (60 MB); with 2 seconds in full, the result built from packed seconds and
//! without empty distribution bars: 0.2, 0.2, 0.6 and 8.1 KB (39 MB, most of it the result
//! document's summaries).

use squall_engine::stats::result;
use squall_engine::stats::timing::Phases;
use squall_engine::stats::{Outcome, Recorder, Timeline};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::{Duration, Instant};

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

fn grew(by: isize) {
    let now = LIVE.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            grew(l.size() as isize);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(l) };
        if !p.is_null() {
            grew(l.size() as isize);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        LIVE.fetch_sub(l.size() as isize, Ordering::Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            grew(new as isize - l.size() as isize);
        }
        q
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn live() -> isize {
    LIVE.load(Ordering::SeqCst)
}

/// Bytes held by a script's run of `names` endpoints over `seconds` at `rate` requests a second, by
/// part, once the run is over: the recorder's totals and timing phases, the timeline (the seconds
/// kept and the live totals); and the most held at once over the run and its result's build.
struct Held {
    totals: isize,
    timings: isize,
    timeline: isize,
    peak: isize,
    requests: u64,
}

fn run(names: usize, seconds: u64, rate: u64) -> Held {
    let before = live();
    PEAK.store(before, Ordering::SeqCst);
    let start = Instant::now();
    let timeline = Timeline::new(start);
    let mut r = Recorder::new(timeline.clone());
    let ids: Vec<usize> = (0..names).map(|i| timeline.add_name("GET", &format!("/item/{i}"))).collect();
    let ok = Outcome::Response { status: 200, body_bytes: 6, wire_bytes: 160 };
    // Latencies of a loopback server: 300 µs to a few ms, a different one for nearly every request.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for n in 0..seconds * rate {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let at = start + Duration::from_micros(n * 1_000_000 / rate);
        let us = 300 + (x % 1000) * (1 + (x >> 40) % 4);
        let id = ids[(x >> 20) as usize % names];
        r.record(at, id, Duration::from_micros(us), &ok);
        let waiting = Some(Duration::from_micros(us * 9 / 10));
        r.record_timing(id, &Phases { connect: None, tls: None, waiting, receiving: Some(Duration::ZERO) });
        if n % (rate / 4) == 0 {
            timeline.publish_ready(at); // as the run's coordinator does, a few times a second
        }
    }
    r.finish();
    timeline.publish_until(seconds);
    let held = |f: &mut dyn FnMut()| {
        let b = live();
        f();
        b - live()
    };
    // The result, built as a script's run builds it (from copies: the recorder's are measured below).
    let doc = result::build(result::Inputs {
        kind: "script".into(),
        url: String::new(),
        method: String::new(),
        start_unix: 0.0,
        load: result::LoadReport {
            model: "users".into(),
            connections: 5,
            threads: 1,
            requests: None,
            duration_s: Some(seconds as f64),
            ramp_s: None,
            http2: false,
            keepalive: true,
            timeout_s: None,
        },
        names: timeline.names(),
        schedule: None,
        reason: squall_engine::StopReason::Deadline,
        duration: Duration::from_secs(seconds),
        reset: None,
        totals: r.totals.clone(),
        timings: r.timings.clone(),
        streams: Vec::new(),
        errors: Default::default(),
        connect: squall_engine::stats::new_histogram(),
        seconds: timeline.all(),
        abandoned: 0,
    });
    let requests = doc.timeseries.iter().map(|s| s.summary.requests).sum();
    assert_eq!(doc.endpoints.iter().map(|e| e.summary.requests).sum::<u64>(), requests);
    drop(doc);
    let peak = PEAK.load(Ordering::SeqCst) - before;
    let mut totals = std::mem::take(&mut r.totals);
    let mut timings = std::mem::take(&mut r.timings);
    let (totals_bytes, timings_bytes) =
        (held(&mut || drop(std::mem::take(&mut totals))), held(&mut || drop(std::mem::take(&mut timings))));
    drop(r);
    let mut timeline = Some(timeline);
    let timeline_bytes = held(&mut || drop(timeline.take()));
    Held { totals: totals_bytes, timings: timings_bytes, timeline: timeline_bytes, peak, requests }
}

#[test]
fn an_endpoint_holds_what_it_measured() {
    let (names, seconds, rate) = (5_000, 20, 700);
    let h = run(names, seconds, rate);
    assert_eq!(h.requests, seconds * rate, "every request counted");
    let kb = |b: isize| b as f64 / names as f64 / 1024.0;
    let shown = format!(
        "{names} names, {seconds} s at {rate}/s: totals {:.1} KB a name, timings {:.1}, timeline {:.1}, peak {:.1} ({} MB)",
        kb(h.totals),
        kb(h.timings),
        kb(h.timeline),
        kb(h.peak),
        h.peak >> 20
    );
    eprintln!("{shown}");
    // A name's requests (2.8 here) hold a few hundred bytes in each of the recorder's totals and
    // timings; the timeline keeps each second's few bytes of it, its live totals, and 2 seconds in
    // full (112 bytes a name a second, whether it had requests or not). The peak is the result's
    // build: its document has a summary of every name and of every second's.
    assert!(kb(h.totals) < 0.5 && kb(h.timings) < 0.5, "{shown}");
    assert!(kb(h.timeline) < 1.5, "{shown}");
    assert!(kb(h.peak) < 16.0, "{shown}");
}
