//! Whole runs of the engine against a tiny keep-alive server on loopback that counts what it serves.

use squall_engine::bench::start;
use squall_engine::{BenchConfig, StartError, StopReason};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Serves `200 ok` to every request (one request per read: the engine never pipelines).
fn counting_server() -> (u16, Arc<AtomicU64>) {
    serving(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
}

/// Serves `response` to every request, counting them.
fn serving(response: &'static [u8]) -> (u16, Arc<AtomicU64>) {
    let count = Arc::new(AtomicU64::new(0));
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = std_listener.local_addr().unwrap().port();
    let served = count.clone();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            std_listener.set_nonblocking(true).unwrap();
            let listener = tokio::net::TcpListener::from_std(std_listener).unwrap();
            loop {
                let (mut s, _) = listener.accept().await.unwrap();
                let served = served.clone();
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    while let Ok(n) = s.read(&mut buf).await {
                        if n == 0 {
                            return;
                        }
                        served.fetch_add(1, Ordering::SeqCst);
                        if s.write_all(response).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
    });
    (port, count)
}

fn config(json: &str) -> BenchConfig {
    BenchConfig::from_json(json).unwrap()
}

#[test]
fn closed_model_sends_exactly_n() {
    let (port, served) = counting_server();
    let cfg =
        config(&format!(r#"{{"url": "http://127.0.0.1:{port}/x", "requests": 5003, "connections": 7, "threads": 2}}"#));
    let r = start(cfg, vec![]).ok().unwrap().wait();
    assert_eq!(r.aggregate.summary.requests, 5003);
    assert_eq!(served.load(Ordering::SeqCst), 5003);
    assert_eq!(r.endpoints[0].name, "/x");
    assert_eq!(r.stop_reason, StopReason::Completed);
    assert_eq!(r.connect.requests, 7);
}

#[test]
fn open_model_sends_rate_times_duration() {
    let (port, served) = counting_server();
    let cfg =
        config(&format!(r#"{{"url": "http://127.0.0.1:{port}/", "rate": 500, "duration": 2, "connections": 20}}"#));
    let r = start(cfg, vec![]).ok().unwrap().wait();
    let om = r.schedule.unwrap();
    assert_eq!((om.intended, om.sent, om.dropped), (1000, 1000, 0));
    assert_eq!(served.load(Ordering::SeqCst), 1000);
}

#[test]
fn stop_ends_a_long_run_and_keeps_its_numbers() {
    let (port, _) = counting_server();
    let cfg = config(&format!(r#"{{"url": "http://127.0.0.1:{port}/", "duration": 3600, "connections": 2}}"#));
    let run = start(cfg, vec![]).ok().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    run.stop();
    let r = run.wait();
    assert_eq!(r.stop_reason, StopReason::Interrupted);
    assert!(r.aggregate.summary.requests > 0);
    assert!(r.duration_s < 2.0);
}

#[test]
fn dead_targets_fail_before_the_run() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let cfg = config(&format!(r#"{{"url": "http://127.0.0.1:{port}/", "requests": 1}}"#));
    match start(cfg, vec![]) {
        Err(StartError::Target(m)) => assert!(m.contains("connection refused"), "{m}"),
        _ => panic!("a refused connection must stop the start"),
    }
    let cfg = config(r#"{"url": "http://x.invalid/", "requests": 1}"#);
    assert!(matches!(start(cfg, vec![]), Err(StartError::Target(m)) if m.contains("cannot resolve")));
    let cfg = config(r#"{"url": "nope", "requests": 1}"#);
    assert!(matches!(start(cfg, vec![]), Err(StartError::Usage(_))));
}

#[test]
fn merged_results_equal_the_sum_of_their_histograms() {
    use squall_engine::stats::histogram_from_base64;
    let (port, _) = counting_server();
    let run = |n: u64| {
        let cfg = config(&format!(r#"{{"url": "http://127.0.0.1:{port}/m", "requests": {n}, "connections": 3}}"#));
        serde_json::to_value(start(cfg, vec![]).ok().unwrap().wait()).unwrap()
    };
    let (a, b) = (run(700), run(300));
    let merged = squall_engine::stats::merge::merge_json(&[a.to_string(), b.to_string()]).unwrap();
    assert_eq!(merged.aggregate.summary.requests, 1000);
    let mut expected = histogram_from_base64(a["aggregate"]["histogram"].as_str().unwrap()).unwrap();
    expected.add(histogram_from_base64(b["aggregate"]["histogram"].as_str().unwrap()).unwrap()).unwrap();
    assert_eq!(histogram_from_base64(&merged.aggregate.histogram).unwrap(), expected);
    assert_eq!(merged.endpoints.len(), 1);
    assert_eq!(merged.timeseries.iter().map(|s| s.summary.requests).sum::<u64>(), 1000);
    assert_eq!(merged.endpoints[0].status_codes["200"], 1000);
    // The exact fastest and slowest survive the merge (not the histogram's bucket bounds).
    let bound = |k: &str| [a["aggregate"][k].as_u64().unwrap(), b["aggregate"][k].as_u64().unwrap()];
    assert_eq!(merged.aggregate.summary.min_us, *bound("min_us").iter().min().unwrap());
    assert_eq!(merged.aggregate.summary.max_us, *bound("max_us").iter().max().unwrap());
    // The latency breakdown too: 3 connects in each run, every response waited for, histograms summed.
    let t = merged.aggregate.timings.as_ref().expect("HTTP/1.1 runs are broken down");
    assert_eq!((t.connect.count, t.tls.count, t.waiting.count, t.receiving.count), (6, 0, 1000, 1000));
    let mut waiting =
        histogram_from_base64(a["aggregate"]["timings"]["waiting"]["histogram"].as_str().unwrap()).unwrap();
    waiting
        .add(histogram_from_base64(b["aggregate"]["timings"]["waiting"]["histogram"].as_str().unwrap()).unwrap())
        .unwrap();
    assert_eq!(histogram_from_base64(&t.waiting.histogram).unwrap(), waiting);
    assert_eq!(merged.endpoints[0].timings.as_ref().unwrap().waiting.count, 1000);
    // The distribution's bars count every request once.
    assert_eq!(merged.aggregate.distribution.iter().map(|b| b.2).sum::<u64>(), 1000);
}

#[test]
fn the_live_stream_publishes_every_second_once_and_adds_up_to_the_result() {
    let (port, served) = counting_server();
    let cfg =
        config(&format!(r#"{{"url": "http://127.0.0.1:{port}/", "rate": 400, "duration": 3, "connections": 8}}"#));
    let run = start(cfg, vec![]).ok().unwrap();
    let mut seen = Vec::new();
    while !run.is_finished() {
        for s in run.seconds_since(seen.len() as u64, Duration::from_millis(200)) {
            assert_eq!(s.t, seen.len() as u64, "seconds come in order, each once");
            seen.push(s.endpoints().first().map_or(0, |e| e.requests));
        }
    }
    // Seconds published while the run went on: at least the first two, before it ended.
    assert!(seen.len() >= 2, "{seen:?}");
    let r = run.wait();
    assert_eq!(served.load(Ordering::SeqCst), 1200);
    assert_eq!(r.aggregate.summary.requests, 1200);
    let per_second: Vec<u64> = r.timeseries.iter().map(|s| s.summary.requests).collect();
    // What the stream showed is what the result holds for those seconds (none came late on loopback),
    // and a full second of a 400/s schedule holds about 400 completions (a starved host shifts some
    // into the next second; the total above is exact).
    assert_eq!(per_second[..seen.len()], seen[..], "{per_second:?} {seen:?}");
    assert!((300..=500).contains(&per_second[1]), "{per_second:?}");
}

#[test]
fn event_streams_merge_exactly() {
    use squall_engine::stats::histogram_from_base64;
    let (port, _) = serving(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 31\r\n\r\ndata: a\n\ndata: b\n\n: c\ndata: d\n\n",
    );
    let run = |n: u64| {
        let cfg = config(&format!(r#"{{"url": "http://127.0.0.1:{port}/e", "requests": {n}, "connections": 2}}"#));
        serde_json::to_value(start(cfg, vec![]).ok().unwrap().wait()).unwrap()
    };
    let (a, b) = (run(70), run(30));
    assert_eq!(a["aggregate"]["stream"]["events"], 210);
    let merged = squall_engine::stats::merge::merge_json(&[a.to_string(), b.to_string()]).unwrap();
    let s = merged.aggregate.stream.as_ref().expect("event streams were read");
    assert_eq!((s.streams, s.completed, s.cut, s.events), (100, 100, 0, 300));
    assert_eq!((s.first_event.count, s.gap.count), (100, 200));
    assert_eq!((merged.aggregate.summary.events, merged.endpoints[0].summary.events), (300, 300));
    assert_eq!(merged.timeseries.iter().map(|t| t.summary.events).sum::<u64>(), 300);
    let h = |v: &serde_json::Value| histogram_from_base64(v.as_str().unwrap()).unwrap();
    let mut first = h(&a["aggregate"]["stream"]["first_event"]["histogram"]);
    first.add(h(&b["aggregate"]["stream"]["first_event"]["histogram"])).unwrap();
    assert_eq!(histogram_from_base64(&s.first_event.histogram).unwrap(), first);
}

/// Processes that each reset their totals (`--reset-stats` with `--processes`): the merged totals count
/// from the mean of the resets, on the merged clock (the earliest start); one process without a reset
/// leaves the merged totals counting from the start.
#[test]
fn resets_merge_to_their_mean_moment() {
    let (port, _) = serving(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    let run = || {
        let cfg = config(&format!(r#"{{"url": "http://127.0.0.1:{port}/", "requests": 10, "connections": 1}}"#));
        serde_json::to_value(start(cfg, vec![]).ok().unwrap().wait()).unwrap()
    };
    let (mut a, mut b) = (run(), run());
    a["start_unix"] = 1000.0.into();
    b["start_unix"] = 1001.0.into();
    a["reset_s"] = 2.0.into();
    b["reset_s"] = 2.0.into();
    a["duration_s"] = 10.0.into();
    b["duration_s"] = 10.0.into();
    let merged = squall_engine::stats::merge::merge_json(&[a.to_string(), b.to_string()]).unwrap();
    assert_eq!(merged.reset_s, Some(2.5)); // at 1002 and 1003: 1002.5, 2.5 s after the merged start
    b.as_object_mut().unwrap().remove("reset_s");
    let merged = squall_engine::stats::merge::merge_json(&[a.to_string(), b.to_string()]).unwrap();
    assert_eq!(merged.reset_s, None);
}
