//! Merging result documents of several processes (or machines) into one, losslessly: histograms are
//! decoded and added, seconds are aligned on wall-clock time, and the merged document is built by the
//! same code as a single run's.

use crate::result::{self, LoadReport, RunResult};
use crate::runner::StopReason;
use crate::stats::{histogram_from_base64, new_histogram, EndpointStats};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

fn num(v: &Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or(0)
}

/// Counts and histogram of one endpoint (or aggregate) entry of a result document.
fn stats_of(v: &Value) -> Result<EndpointStats, String> {
    let hist = match v["histogram"].as_str() {
        Some(b64) => histogram_from_base64(b64).map_err(|e| format!("bad histogram: {e}"))?,
        None => new_histogram(),
    };
    let status = v["status_codes"]
        .as_object()
        .map(|m| m.iter().filter_map(|(k, n)| Some((k.parse().ok()?, n.as_u64()?))).collect())
        .unwrap_or_default();
    Ok(EndpointStats {
        hist,
        requests: num(v, "requests"),
        failures: num(v, "failures"),
        body_bytes: num(v, "body_bytes"),
        wire_bytes: num(v, "wire_bytes"),
        status,
    })
}

fn key_of(v: &Value) -> (String, String) {
    (v["method"].as_str().unwrap_or("").to_string(), v["name"].as_str().unwrap_or("").to_string())
}

pub fn merge_results(docs: &[Value]) -> Result<RunResult, String> {
    let first = docs.first().ok_or("nothing to merge")?;
    let start = docs.iter().filter_map(|d| d["start_unix"].as_f64()).fold(f64::INFINITY, f64::min);
    let mut names: Vec<(String, String)> = Vec::new();
    let mut ids: HashMap<(String, String), usize> = HashMap::new();
    let mut id_of = |k: (String, String), names: &mut Vec<(String, String)>| {
        *ids.entry(k.clone()).or_insert_with(|| {
            names.push(k);
            names.len() - 1
        })
    };
    let mut totals: Vec<EndpointStats> = Vec::new();
    let mut timeline: BTreeMap<u64, Vec<EndpointStats>> = BTreeMap::new();
    let mut users: BTreeMap<u64, u64> = BTreeMap::new();
    let mut connect = new_histogram();
    let mut end = 0.0f64;
    let (mut abandoned, mut interrupted) = (0, false);
    let mut errors: BTreeMap<(String, String, String, String), Value> = BTreeMap::new();

    for doc in docs {
        let offset = (doc["start_unix"].as_f64().unwrap_or(start) - start).round() as u64;
        end = end.max(doc["start_unix"].as_f64().unwrap_or(start) - start + doc["duration_s"].as_f64().unwrap_or(0.0));
        abandoned += num(doc, "abandoned");
        interrupted |= doc["stop_reason"] == "interrupted";
        if let Some(h) = doc["connect_histogram"].as_str() {
            connect.add(histogram_from_base64(h)?).map_err(|e| format!("{e:?}"))?;
        }
        for e in doc["endpoints"].as_array().into_iter().flatten() {
            let id = id_of(key_of(e), &mut names);
            totals.resize_with(names.len(), EndpointStats::default);
            totals[id].merge(&stats_of(e)?);
        }
        for sec in doc["timeseries"].as_array().into_iter().flatten() {
            let t = num(sec, "t") + offset;
            *users.entry(t).or_default() += num(sec, "users");
            for e in sec["endpoints"].as_array().into_iter().flatten() {
                let id = id_of(key_of(e), &mut names);
                let slot = timeline.entry(t).or_default();
                slot.resize_with(names.len(), EndpointStats::default);
                slot[id].merge(&stats_of(e)?);
            }
        }
        for e in doc["errors"].as_array().into_iter().flatten() {
            let k = |f: &str| e[f].as_str().unwrap_or("").to_string();
            let entry = errors.entry((k("method"), k("name"), k("kind"), k("message"))).or_insert_with(|| {
                let mut v = e.clone();
                v["count"] = 0.into();
                v
            });
            entry["count"] = (num(entry, "count") + num(e, "count")).into();
            let shift = |f: &str| e[f].as_f64().unwrap_or(0.0) + offset as f64;
            entry["first_seen_s"] =
                entry["first_seen_s"].as_f64().unwrap_or(f64::MAX).min(shift("first_seen_s")).into();
            entry["last_seen_s"] = entry["last_seen_s"].as_f64().unwrap_or(0.0).max(shift("last_seen_s")).into();
        }
    }
    totals.resize_with(names.len(), EndpointStats::default);
    let load: LoadReport = LoadReport {
        model: first["load"]["model"].as_str().unwrap_or("").to_string(),
        connections: users.values().copied().max().unwrap_or(0) as usize,
        threads: docs.len(),
        requests: None,
        duration_s: Some(end),
        ramp_s: None,
        http2: first["load"]["http2"].as_bool().unwrap_or(false),
        keepalive: first["load"]["keepalive"].as_bool().unwrap_or(true),
        timeout_s: first["load"]["timeout_s"].as_f64().unwrap_or(0.0),
    };
    let users_at = |t: u64| users.get(&t).copied().unwrap_or(0);
    let mut merged = result::build(result::Inputs {
        kind: first["kind"].as_str().unwrap_or(""),
        url: first["url"].as_str().unwrap_or("").to_string(),
        method: first["method"].as_str().unwrap_or("").to_string(),
        start_unix: start,
        load,
        names,
        users_at: &users_at,
        open_model: None,
        reason: if interrupted {
            StopReason::Interrupted
        } else {
            StopReason::parse(first["stop_reason"].as_str().unwrap_or(""))
        },
        duration: Duration::from_secs_f64(end.max(0.0)),
        totals,
        errors: HashMap::new(),
        connect,
        timeline,
        abandoned,
    });
    let mut errors: Vec<Value> = errors.into_values().collect();
    errors.sort_by_key(|e| std::cmp::Reverse(num(e, "count")));
    merged.errors = errors
        .into_iter()
        .map(|e| result::ErrorReport {
            method: e["method"].as_str().unwrap_or("").into(),
            name: e["name"].as_str().unwrap_or("").into(),
            kind: e["kind"].as_str().unwrap_or("").into(),
            status: e["status"].as_u64().map(|s| s as u16),
            message: e["message"].as_str().unwrap_or("").into(),
            count: num(&e, "count"),
            first_seen_s: e["first_seen_s"].as_f64().unwrap_or(0.0),
            last_seen_s: e["last_seen_s"].as_f64().unwrap_or(0.0),
        })
        .collect();
    Ok(merged)
}
