//! squall._engine: the thin Python face of the Rust engine. Configuration goes in and results come
//! out as JSON, so the Python side stays plain and the engine stays free of Python.

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use squall_engine::{BenchConfig, Run, StartError};
use std::sync::Mutex;
use std::time::Duration;

pyo3::create_exception!(_engine, UsageError, PyValueError, "The configuration or URL is invalid.");
pyo3::create_exception!(_engine, TargetError, PyRuntimeError, "The target cannot be reached.");

/// A running `bench` load. Starts at construction; the GIL is released while it runs.
#[pyclass(module = "squall._engine")]
struct BenchRun {
    run: Mutex<Option<Run>>,
}

#[pymethods]
impl BenchRun {
    /// Resolves and connects once (up to the timeout), then starts. Ctrl-C stays live meanwhile:
    /// the start runs on its own thread while this one checks for signals.
    #[new]
    fn new(py: Python<'_>, config_json: &str, body: Vec<u8>) -> PyResult<Self> {
        let cfg = BenchConfig::from_json(config_json).map_err(UsageError::new_err)?;
        let starting = std::thread::spawn(move || Run::start(cfg, body));
        while !starting.is_finished() {
            py.detach(|| std::thread::sleep(Duration::from_millis(20)));
            py.check_signals()?;
        }
        let run = starting.join().expect("starting a run does not panic").map_err(|e| match e {
            StartError::Usage(m) => UsageError::new_err(m),
            StartError::Target(m) => TargetError::new_err(m),
        })?;
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
        let deadline = std::time::Instant::now() + Duration::from_secs_f64(timeout.max(0.0));
        py.detach(|| loop {
            let done = self.run.lock().unwrap().as_ref().is_none_or(|r| r.is_finished());
            if done || std::time::Instant::now() >= deadline {
                return done;
            }
            std::thread::sleep(Duration::from_millis(10));
        })
    }

    /// The result document as JSON (waits for the end of the run).
    fn result_json(&self, py: Python<'_>) -> PyResult<String> {
        let run = self.run.lock().unwrap().take().ok_or_else(|| PyRuntimeError::new_err("the result was already taken"))?;
        let result = py.detach(|| run.wait());
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

#[pymodule]
fn _engine(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", squall_engine::VERSION)?;
    m.add("PERCENTILES", squall_engine::stats::PERCENTILES.to_vec())?;
    m.add("UsageError", m.py().get_type::<UsageError>())?;
    m.add("TargetError", m.py().get_type::<TargetError>())?;
    m.add_class::<BenchRun>()?;
    m.add_class::<DemoTarget>()?;
    Ok(())
}
