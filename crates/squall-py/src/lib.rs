//! squall._engine: the thin Python face of the Rust engine. Configuration goes in and results come
//! out as JSON, so the Python side stays plain and the engine stays free of Python.

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use squall_engine::run::{Load, Run};
use squall_engine::script::{ScriptRequest, Session, Verdict};
use squall_engine::{BenchConfig, StartError, StopReason};
use std::sync::Mutex;
use std::time::Duration;

pyo3::create_exception!(_engine, UsageError, PyValueError, "The configuration or URL is invalid.");
pyo3::create_exception!(_engine, TargetError, PyRuntimeError, "The target cannot be reached.");

/// A running `bench` load. Starts at construction; the GIL is released while it runs.
#[pyclass(module = "squall._engine")]
struct BenchRun {
    run: Mutex<Option<Run<squall_engine::bench::Bench>>>,
}

#[pymethods]
impl BenchRun {
    /// Resolves and connects once (up to the timeout), then starts. Ctrl-C stays live meanwhile:
    /// the start runs on its own thread while this one checks for signals.
    #[new]
    fn new(py: Python<'_>, config_json: &str, body: Vec<u8>) -> PyResult<Self> {
        let cfg = BenchConfig::from_json(config_json).map_err(UsageError::new_err)?;
        let run = start_checking_signals(py, move || squall_engine::bench::start(cfg, body))?;
        Ok(BenchRun { run: Mutex::new(Some(run)) })
    }

    /// (elapsed seconds, completed, failed, finished)
    fn progress(&self) -> PyResult<(f64, u64, u64, bool)> {
        let guard = self.run.lock().unwrap();
        let run = guard.as_ref().ok_or_else(|| PyRuntimeError::new_err("the run's result was taken"))?;
        let p = run.progress();
        Ok((p.elapsed, p.completed, p.failed, p.finished))
    }

    /// Ends the run early; the result still holds everything measured so far.
    fn stop(&self) {
        if let Some(run) = self.run.lock().unwrap().as_ref() {
            run.stop();
        }
    }

    /// Waits up to `timeout` seconds for the end; True once finished.
    fn wait(&self, py: Python<'_>, timeout: f64) -> bool {
        wait_until(py, timeout, || self.run.lock().unwrap().as_ref().is_none_or(|r| r.is_finished()))
    }

    /// The result document as JSON (waits for the end of the run).
    fn result_json(&self, py: Python<'_>) -> PyResult<String> {
        result_json(py, &self.run)
    }
}

/// Starts a run on its own thread (resolving and connecting can take up to the timeout) while this
/// one keeps Ctrl-C live.
fn start_checking_signals<R: Send + 'static>(
    py: Python<'_>,
    start: impl FnOnce() -> Result<R, StartError> + Send + 'static,
) -> PyResult<R> {
    let starting = std::thread::spawn(start);
    while !starting.is_finished() {
        py.detach(|| std::thread::sleep(Duration::from_millis(20)));
        py.check_signals()?;
    }
    starting.join().expect("starting a run does not panic").map_err(|e| match e {
        StartError::Usage(m) => UsageError::new_err(m),
        StartError::Target(m) => TargetError::new_err(m),
    })
}

/// Waits without the GIL until `done` or `timeout` seconds; returns `done`.
fn wait_until(py: Python<'_>, timeout: f64, done: impl Fn() -> bool + Sync) -> bool {
    let deadline = std::time::Instant::now() + Duration::from_secs_f64(timeout.max(0.0));
    py.detach(|| loop {
        if done() {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    })
}

/// Takes a run out of its slot, waits for its end without the GIL, and returns its result as JSON.
fn result_json<L: Load>(py: Python<'_>, slot: &Mutex<Option<Run<L>>>) -> PyResult<String> {
    let run = slot.lock().unwrap().take().ok_or_else(|| PyRuntimeError::new_err("the result was already taken"))?;
    let result = py.detach(|| run.wait());
    serde_json::to_string(&result).map_err(|e| PyRuntimeError::new_err(e.to_string()))
}

/// A running `squall mqtt` load. Starts at construction (after one preflight connection).
#[pyclass(module = "squall._engine")]
struct MqttRun {
    run: Mutex<Option<squall_engine::mqtt::MqttRun>>,
}

#[pymethods]
impl MqttRun {
    #[new]
    fn new(py: Python<'_>, config_json: &str) -> PyResult<Self> {
        let cfg = squall_engine::mqtt::MqttConfig::from_json(config_json).map_err(UsageError::new_err)?;
        let run = start_checking_signals(py, move || squall_engine::mqtt::start(cfg))?;
        Ok(MqttRun { run: Mutex::new(Some(run)) })
    }

    /// (elapsed seconds, phase, connected, sent, published, failed, delivered, finished)
    fn progress(&self) -> PyResult<MqttProgressTuple> {
        let guard = self.run.lock().unwrap();
        let run = guard.as_ref().ok_or_else(|| PyRuntimeError::new_err("the run's result was taken"))?;
        let p = run.progress();
        let m = p.mqtt.unwrap_or_default();
        Ok((p.elapsed, p.phase, m.connected, m.sent, m.published, m.failed, m.delivered, p.finished))
    }

    fn stop(&self) {
        if let Some(run) = self.run.lock().unwrap().as_ref() {
            run.stop();
        }
    }

    fn wait(&self, py: Python<'_>, timeout: f64) -> bool {
        wait_until(py, timeout, || self.run.lock().unwrap().as_ref().is_none_or(|r| r.is_finished()))
    }

    fn result_json(&self, py: Python<'_>) -> PyResult<String> {
        result_json(py, &self.run)
    }
}

/// (elapsed seconds, phase, connected, sent, published, failed, delivered, finished)
type MqttProgressTuple = (f64, &'static str, u64, u64, u64, u64, u64, bool);
/// (user, topic, payload, qos) of a message that arrived for a scripted user.
type MessageTuple<'py> = (u64, String, Bound<'py, PyBytes>, u8);
/// (user, id, operation, target, payload, qos, retain, options JSON)
type MqttOpTuple = (u64, u64, String, String, Vec<u8>, u8, bool, String);
/// (id, user, method, url, headers, body, timeout seconds, stats name, engine records it, follow redirects)
type RequestTuple = (u64, u64, String, String, Vec<(String, String)>, Vec<u8>, f64, String, bool, bool);
/// (id, status or 0, raw header lines, Set-Cookie values, body, elapsed microseconds, error or None,
/// final URL if redirects changed it)
type CompletionTuple<'py> =
    (u64, u16, Bound<'py, PyBytes>, Vec<String>, Bound<'py, PyBytes>, u64, Option<String>, Option<String>);

/// The engine side of scripted users: requests go in, completions come back in batches.
#[pyclass(module = "squall._engine")]
struct ScriptSession {
    inner: Mutex<Option<Session>>,
}

impl ScriptSession {
    fn with<T>(&self, f: impl FnOnce(&Session) -> T) -> PyResult<T> {
        let guard = self.inner.lock().unwrap();
        guard.as_ref().map(f).ok_or_else(|| PyRuntimeError::new_err("the session has finished"))
    }
}

#[pymethods]
impl ScriptSession {
    #[new]
    #[pyo3(signature = (insecure=false))]
    fn new(insecure: bool) -> Self {
        ScriptSession { inner: Mutex::new(Some(Session::start(insecure))) }
    }

    fn submit(&self, batch: Vec<RequestTuple>) -> PyResult<()> {
        let requests = batch
            .into_iter()
            .map(|(id, user, method, url, headers, body, timeout, name, record, follow_redirects)| ScriptRequest {
                id,
                user,
                method,
                url,
                headers,
                body,
                timeout: Duration::from_secs_f64(timeout.max(0.001)),
                name,
                record,
                follow_redirects,
            })
            .collect();
        self.with(|s| s.submit(requests))
    }

    /// Completions so far, waiting up to `timeout` seconds for the first (GIL released).
    fn poll<'py>(&self, py: Python<'py>, timeout: f64) -> PyResult<Vec<CompletionTuple<'py>>> {
        let wait = Duration::from_secs_f64(timeout.max(0.0));
        let done = {
            let guard = self.inner.lock().unwrap();
            let session = guard.as_ref().ok_or_else(|| PyRuntimeError::new_err("the session has finished"))?;
            py.detach(|| session.poll(wait))
        };
        Ok(done
            .into_iter()
            .map(|c| {
                let head = PyBytes::new(py, &c.head);
                (c.id, c.status, head, c.set_cookies, PyBytes::new(py, &c.body), c.elapsed_us, c.error, c.url)
            })
            .collect())
    }

    /// MQTT operations: (user, id, op, target, payload, qos, retain, options JSON). `op` is connect
    /// (target: the broker URL; options: client_id, username, password, keepalive, clean_session,
    /// mqtt_version, timeout, insecure), publish (target: the topic), subscribe (target: the filter)
    /// or disconnect.
    fn submit_mqtt(&self, batch: Vec<MqttOpTuple>) -> PyResult<()> {
        use squall_engine::mqtt::script::{Op, OwnedHello};
        let mut ops = Vec::with_capacity(batch.len());
        for (user, id, op, target, payload, qos, retain, options) in batch {
            let op = match op.as_str() {
                "connect" => {
                    let o: serde_json::Value =
                        serde_json::from_str(&options).map_err(|e| UsageError::new_err(e.to_string()))?;
                    let text = |k: &str| o[k].as_str().map(str::to_string);
                    let version = match o["mqtt_version"].as_str().unwrap_or("3.1.1") {
                        "5" | "5.0" => squall_engine::mqtt::codec::Version::V5,
                        _ => squall_engine::mqtt::codec::Version::V311,
                    };
                    Op::Connect {
                        id,
                        broker: target,
                        hello: OwnedHello {
                            client_id: text("client_id").unwrap_or_default(),
                            keepalive: o["keepalive"].as_u64().unwrap_or(60).min(65_535) as u16,
                            clean: o["clean_session"].as_bool().unwrap_or(true),
                            login: text("username").map(|u| (u, text("password").unwrap_or_default())),
                        },
                        version,
                        timeout: Duration::from_secs_f64(o["timeout"].as_f64().unwrap_or(10.0).max(0.001)),
                        insecure: o["insecure"].as_bool().unwrap_or(false),
                    }
                }
                "publish" => Op::Publish { id, topic: target, payload: payload.into(), qos: qos.min(2), retain },
                "subscribe" => Op::Subscribe { id, filter: target, qos: qos.min(2) },
                "disconnect" => Op::Disconnect { id },
                other => return Err(UsageError::new_err(format!("unknown MQTT operation '{other}'"))),
            };
            ops.push((user, op));
        }
        self.with(|s| s.submit_mqtt(ops))
    }

    /// MQTT messages that arrived for users' subscriptions: (user, topic, payload, qos).
    fn messages<'py>(&self, py: Python<'py>) -> PyResult<Vec<MessageTuple<'py>>> {
        let messages = self.with(|s| s.messages())?;
        Ok(messages.into_iter().map(|m| (m.user, m.topic, PyBytes::new(py, &m.payload), m.qos)).collect())
    }

    #[pyo3(signature = (method, name, elapsed_us, status, body_bytes, failure=None))]
    fn record(
        &self,
        method: String,
        name: String,
        elapsed_us: u64,
        status: u16,
        body_bytes: u64,
        failure: Option<String>,
    ) -> PyResult<()> {
        self.with(|s| s.record(Verdict { method, name, elapsed_us, status, body_bytes, failure }))
    }

    fn close_user(&self, user: u64) -> PyResult<()> {
        self.with(|s| s.close_user(user))
    }

    /// (completed, failed) so far.
    fn counts(&self) -> PyResult<(u64, u64)> {
        self.with(|s| s.counts())
    }

    /// Live totals per endpoint, as JSON: [{"method", "name", ...summary}].
    fn snapshot_json(&self, py: Python<'_>) -> PyResult<String> {
        let snap = {
            let guard = self.inner.lock().unwrap();
            let session = guard.as_ref().ok_or_else(|| PyRuntimeError::new_err("the session has finished"))?;
            py.detach(|| session.snapshot())
        };
        let rows: Vec<_> = snap
            .into_iter()
            .map(|e| {
                let mut v = serde_json::to_value(&e.summary).unwrap_or_default();
                v["method"] = e.method.into();
                v["name"] = e.name.into();
                v
            })
            .collect();
        serde_json::to_string(&rows).map_err(|e| PyRuntimeError::new_err(e.to_string()))
    }

    /// Ends the session; returns the result document as JSON. `users[t]` is the user count at second t.
    fn finish(&self, py: Python<'_>, reason: &str, url: String, users: Vec<u64>) -> PyResult<String> {
        let session = self.inner.lock().unwrap().take().ok_or_else(|| PyRuntimeError::new_err("already finished"))?;
        let reason = match reason {
            "interrupted" => StopReason::Interrupted,
            "duration" => StopReason::Deadline,
            _ => StopReason::Completed,
        };
        let users_at = move |t: u64| users.get(t as usize).or(users.last()).copied().unwrap_or(0);
        let result = py.detach(|| session.finish(reason, url, &users_at));
        serde_json::to_string(&result).map_err(|e| PyRuntimeError::new_err(e.to_string()))
    }
}

/// The built-in demo target on 127.0.0.1.
#[pyclass(module = "squall._engine")]
struct DemoTarget {
    inner: Mutex<Option<squall_target::DemoTarget>>,
    #[pyo3(get)]
    port: u16,
}

#[pymethods]
impl DemoTarget {
    #[new]
    #[pyo3(signature = (port=0))]
    fn new(port: u16) -> PyResult<Self> {
        let t = squall_target::DemoTarget::start(port)
            .map_err(|e| TargetError::new_err(format!("cannot start the demo target on port {port}: {e}")))?;
        Ok(DemoTarget { port: t.addr.port(), inner: Mutex::new(Some(t)) })
    }

    #[staticmethod]
    fn endpoints() -> Vec<(&'static str, &'static str)> {
        squall_target::ENDPOINTS.to_vec()
    }

    fn stop(&self, py: Python<'_>) {
        let t = self.inner.lock().unwrap().take();
        py.detach(move || drop(t));
    }
}

/// Starts the demo's embedded MQTT broker on 127.0.0.1 (port 0: a free one); returns its port.
/// It runs until the process ends.
#[pyfunction]
#[pyo3(signature = (port=0))]
fn start_demo_broker(py: Python<'_>, port: u16) -> PyResult<u16> {
    py.detach(|| squall_target::broker::start(port))
        .map_err(|e| TargetError::new_err(format!("cannot start the demo MQTT broker: {e}")))
}

/// Merges result documents (JSON) of several runs into one, losslessly; returns JSON.
#[pyfunction]
fn merge_results_json(docs: Vec<String>) -> PyResult<String> {
    let merged = squall_engine::stats::merge::merge_json(&docs).map_err(UsageError::new_err)?;
    serde_json::to_string(&merged).map_err(|e| PyRuntimeError::new_err(e.to_string()))
}

#[pymodule]
fn _engine(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", squall_engine::VERSION)?;
    m.add("PERCENTILES", squall_engine::stats::PERCENTILES.to_vec())?;
    m.add("UsageError", m.py().get_type::<UsageError>())?;
    m.add("TargetError", m.py().get_type::<TargetError>())?;
    m.add_class::<BenchRun>()?;
    m.add_class::<MqttRun>()?;
    m.add_class::<DemoTarget>()?;
    m.add_class::<ScriptSession>()?;
    m.add_function(wrap_pyfunction!(merge_results_json, m)?)?;
    m.add_function(wrap_pyfunction!(start_demo_broker, m)?)?;
    Ok(())
}
