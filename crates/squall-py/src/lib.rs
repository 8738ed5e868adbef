//! squall._engine: the thin Python face of the Rust engine. The boundary is typed: configurations come
//! in as Python dicts deserialized straight into the engine's serde types (an unknown or mistyped key
//! is a `UsageError`), live numbers and completions go out as classes with named fields, and results
//! as the result document's dict (the same structure `--json` writes), never as JSON text.

/// The engine's own allocations (its tasks, buffers, request shapes) go to mimalloc, Python's to its own.
/// glibc's malloc took 4.1% of a scripted request's samples (perf, bench/locustfiles/shop.py), most of
/// them tokio's task allocations, whose 128-byte alignment takes glibc's slow `_int_memalign` path.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple, PyType};
use pythonize::{depythonize, pythonize};
use squall_engine::mqtt::codec::Version;
use squall_engine::mqtt::script::{Op, OwnedHello};
use squall_engine::run::{Load, Progress as EngineProgress, Run as EngineRun, RunCore};
use squall_engine::script::native::{Plan, Wait};
use squall_engine::script::{
    Checked, Endpoint, Head, Headers, Judged, RequestShape, ScriptEngine as Engine, ScriptOptions, ScriptRequest,
    StreamHandle, Taken, Verdict,
};
use squall_engine::stats::result::{self, RunResult};
use squall_engine::ws::WsOp;
use squall_engine::{BenchConfig, StartError, StopReason};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A document as Python dicts whose keys are interned strings. pythonize makes a new str for every key
/// of every dict, and a result's dicts repeat a few dozen (`requests`, `percentiles_us`, "99.9", ...):
/// with 5,000 endpoint names, 1 million objects, 63 MB, most of them copies of the same keys (issue 41).
fn to_py<'py, T: serde::Serialize>(py: Python<'py>, value: &T) -> PyResult<Bound<'py, PyAny>> {
    Ok(pythonize::pythonize_custom::<InternedKeys, _>(py, value)?)
}

struct InternedKeys;

impl pythonize::PythonizeTypes for InternedKeys {
    type Map = InternedKeys;
    type NamedMap = pythonize::PythonizeUnnamedMappingAdapter<InternedKeys>;
    type List = pyo3::types::PyList;
}

impl pythonize::PythonizeMappingType for InternedKeys {
    type Builder<'py> = Bound<'py, PyDict>;

    fn builder<'py>(py: Python<'py>, _len: Option<usize>) -> PyResult<Self::Builder<'py>> {
        Ok(PyDict::new(py))
    }

    fn push_item<'py>(dict: &mut Self::Builder<'py>, key: Bound<'py, PyAny>, value: Bound<'py, PyAny>) -> PyResult<()> {
        if !key.is_exact_instance_of::<PyString>() {
            return dict.set_item(key, value);
        }
        let mut ptr = key.into_ptr();
        // SAFETY: `ptr` is an owned reference to an exact str; PyUnicode_InternInPlace replaces it with
        // an owned reference to the interned equal str (the same one if it was the first) and releases
        // the one it was given. (PyString::intern copies the text out and in again: a live reading of
        // 5,000 endpoints took 80-136 ms so, 57-92 ms this way, 60-75 ms without interning.)
        let key = unsafe {
            pyo3::ffi::PyUnicode_InternInPlace(&mut ptr);
            Bound::from_owned_ptr(dict.py(), ptr)
        };
        dict.set_item(key, value)
    }

    fn finish<'py>(dict: Self::Builder<'py>) -> PyResult<Bound<'py, pyo3::types::PyMapping>> {
        Ok(dict.into_mapping())
    }
}

pyo3::create_exception!(_engine, UsageError, PyValueError, "The configuration or URL is invalid.");
pyo3::create_exception!(_engine, TargetError, PyRuntimeError, "The target cannot be reached.");
pyo3::create_exception!(
    _engine,
    StreamCut,
    PyRuntimeError,
    "A streamed response's body ended otherwise than its framing says (its message: why)."
);

/// What the Python side needs of any run on the engine's run core, whatever its load.
trait RunHandle: Send + Sync {
    fn progress(&self) -> EngineProgress;
    fn stop(&self);
    fn is_finished(&self) -> bool;
    fn core(&self) -> &Arc<RunCore>;
    fn wait(self: Box<Self>) -> RunResult;
}

impl<L: Load> RunHandle for EngineRun<L> {
    fn progress(&self) -> EngineProgress {
        EngineRun::progress(self)
    }
    fn stop(&self) {
        EngineRun::stop(self)
    }
    fn is_finished(&self) -> bool {
        EngineRun::is_finished(self)
    }
    fn core(&self) -> &Arc<RunCore> {
        EngineRun::core(self)
    }
    fn wait(self: Box<Self>) -> RunResult {
        EngineRun::wait(*self)
    }
}

/// Live numbers of a run.
#[pyclass(module = "squall._engine", frozen, get_all)]
struct Progress {
    elapsed: f64,
    completed: u64,
    failed: u64,
    users: u64,
    finished: bool,
    /// `running`, or MQTT's phase: connecting, running, draining, closed.
    phase: &'static str,
    /// MQTT: connections made, messages sent, published (acknowledged), failed, delivered.
    connected: u64,
    sent: u64,
    published: u64,
    mqtt_failed: u64,
    delivered: u64,
}

impl From<EngineProgress> for Progress {
    fn from(p: EngineProgress) -> Self {
        let m = p.mqtt.unwrap_or_default();
        Progress {
            elapsed: p.elapsed,
            completed: p.completed,
            failed: p.failed,
            users: p.users,
            finished: p.finished,
            phase: p.phase,
            connected: m.connected,
            sent: m.sent,
            published: m.published,
            mqtt_failed: m.failed,
            delivered: m.delivered,
        }
    }
}

/// A run of `squall bench` or `squall mqtt` on the engine's threads. The GIL is released while it runs.
#[pyclass(module = "squall._engine")]
struct Run {
    run: Mutex<Option<Box<dyn RunHandle>>>,
}

fn usage(e: impl std::fmt::Display) -> PyErr {
    UsageError::new_err(e.to_string())
}

#[pymethods]
impl Run {
    /// `squall bench`: checks the configuration, resolves and connects once (up to the timeout), then
    /// starts. Ctrl-C stays live meanwhile.
    #[staticmethod]
    fn bench(py: Python<'_>, config: &Bound<'_, PyDict>, body: Vec<u8>) -> PyResult<Run> {
        let cfg: BenchConfig = depythonize(config).map_err(usage)?;
        let run = start_checking_signals(py, move || squall_engine::bench::start(cfg, body))?;
        Ok(Run { run: Mutex::new(Some(Box::new(run))) })
    }

    /// `squall mqtt`: connects once to the broker (and subscribes when verifying), then starts.
    #[staticmethod]
    fn mqtt(py: Python<'_>, config: &Bound<'_, PyDict>) -> PyResult<Run> {
        let cfg: squall_engine::mqtt::MqttConfig = depythonize(config).map_err(usage)?;
        let run = start_checking_signals(py, move || squall_engine::mqtt::start(cfg))?;
        Ok(Run { run: Mutex::new(Some(Box::new(run))) })
    }

    fn progress(&self) -> PyResult<Progress> {
        let guard = self.run.lock().unwrap();
        let run = guard.as_ref().ok_or_else(|| PyRuntimeError::new_err("the run's result was taken"))?;
        Ok(run.progress().into())
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
            if self.run.lock().unwrap().as_ref().is_none_or(|r| r.is_finished()) {
                return true;
            }
            if std::time::Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        })
    }

    /// The live stream from `cursor` on (waiting up to `timeout` for a new second) and the live totals:
    /// a dict `{cursor, timeseries, totals}` (see `live_to_py`); with `histograms`, every second's and
    /// total's serialized histogram too (a distributed worker's stream).
    #[pyo3(signature = (cursor, timeout, histograms=false))]
    fn live<'py>(&self, py: Python<'py>, cursor: u64, timeout: f64, histograms: bool) -> PyResult<Bound<'py, PyAny>> {
        let guard = self.run.lock().unwrap();
        let run = guard.as_ref().ok_or_else(|| PyRuntimeError::new_err("the run's result was taken"))?;
        let core = run.core().clone();
        drop(guard);
        py.detach(|| core.timeline.seconds_since(cursor, Duration::from_secs_f64(timeout.max(0.0))));
        live_to_py(py, &core, cursor, histograms)
    }

    /// Starts the live totals afresh (the dashboard's "reset stats"); the result keeps everything.
    fn reset_totals(&self) -> PyResult<()> {
        let guard = self.run.lock().unwrap();
        let run = guard.as_ref().ok_or_else(|| PyRuntimeError::new_err("the run's result was taken"))?;
        run.core().timeline.reset_totals();
        Ok(())
    }

    /// Waits for the end of the run and returns its result document.
    fn result<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let run = self.run.lock().unwrap().take().ok_or_else(|| PyRuntimeError::new_err("the result was taken"))?;
        let result = py.detach(|| run.wait());
        to_py(py, &result)
    }
}

#[derive(serde::Serialize)]
struct LiveView {
    /// Seconds published so far: the cursor of the next call.
    cursor: u64,
    timeseries: Vec<result::SecondReport>,
    totals: TotalsView,
}

#[derive(serde::Serialize)]
struct TotalsView {
    aggregate: result::EndpointReport,
    endpoints: Vec<result::EndpointReport>,
    errors: Vec<result::ErrorReport>,
    /// The seconds since the start they count from, after a reset (as a result's `reset_s`).
    #[serde(skip_serializing_if = "Option::is_none")]
    reset_s: Option<u64>,
}

/// The seconds published from `cursor` on, as the result's time series has them, and the live totals.
fn live_to_py<'py>(py: Python<'py>, core: &RunCore, cursor: u64, histograms: bool) -> PyResult<Bound<'py, PyAny>> {
    let timeline = &core.timeline;
    let names = timeline.names();
    let seconds = timeline.seconds_since(cursor, Duration::ZERO);
    let totals = timeline.totals();
    let reset_s = (totals.since > 0).then_some(totals.since);
    let t = result::live_totals(&totals, &names, histograms);
    let view = LiveView {
        cursor: cursor + seconds.len() as u64,
        timeseries: seconds.iter().map(|s| result::live_second(s, &names, core.start_unix, histograms)).collect(),
        totals: TotalsView { aggregate: t.aggregate, endpoints: t.endpoints, errors: t.errors, reset_s },
    };
    to_py(py, &view)
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

/// One request as a script makes it, converted and checked once (a CR or LF in the method or a
/// header, a cookie that cannot be sent, are a `UsageError` here) and sent by `ScriptEngine.send` as
/// often as the script makes it again: a user's session keeps one for each distinct call.
/// `base` is the user's host; `name` None: the path and query; `max_redirects` None: redirects are
/// not followed; `record` False: the script judges the response (`catch_response`); `insecure`: no
/// certificate check (`verify=False`).
#[pyclass(module = "squall._engine", frozen)]
struct Prepared {
    shape: Checked,
}

#[pymethods]
impl Prepared {
    #[new]
    #[pyo3(signature = (method, url, *, base, name, headers, body, timeout, record, max_redirects, insecure, cookies=Vec::new()))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        method: String,
        url: String,
        base: String,
        name: Option<String>,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
        timeout: f64,
        record: bool,
        max_redirects: Option<u32>,
        insecure: bool,
        cookies: Vec<(String, String)>,
    ) -> PyResult<Self> {
        let timeout = Duration::from_secs_f64(timeout.max(0.001));
        let (headers, base) = (Headers::new(headers).map_err(usage)?, base.into());
        let shape =
            RequestShape { method, base, url, name, headers, cookies, body, timeout, record, max_redirects, insecure };
        Ok(Prepared { shape: shape.checked().map_err(usage)? })
    }
}

/// What every call of a session shares while its settings hold: its host, its headers converted and
/// checked, its timeout and redirects, whether certificates are checked. A session makes one when its
/// settings change (squall.clients.HttpSession._call_base) and each call then crosses as its method,
/// URL, name and what it adds (`prepare`, whose Prepared `ScriptEngine.send` sends), not as eleven
/// keywords of a `Prepared` made anew for every URL a script builds: that cost 3.0 µs a call on the
/// development host (timeit), of a 53 µs scripted request whose URL holds an id
/// (bench/locustfiles/shop.py).
///
/// A call's headers merged with the session's are kept (`merged`, the last `MERGED_KEPT` distinct
/// additions), so that a script's calls that add the same headers (an auth header in each call, as
/// bench/locustfiles/shop.py's) share one checked list: merging, copying and checking them again for
/// each call cost 0.3 µs of the call's 0.9 (20,000 calls of shop.py's view_item against an engine
/// never polled, timed from Python).
#[pyclass(module = "squall._engine", frozen)]
struct CallBase {
    base: Arc<str>,
    headers: Headers,
    timeout: Duration,
    max_redirects: u32,
    insecure: bool,
    merged: Mutex<Vec<(MergeKey, Headers)>>,
}

/// What a call adds to its session's headers: its own (a None value removes one) and its body's
/// Content-Type.
type MergeKey = (Vec<(String, Option<String>)>, Option<String>);

/// How many distinct additions a session's `CallBase` keeps merged, the least recently used giving way:
/// a script that sends a new header value in some calls (a request id, say) still keeps the additions
/// its other calls repeat.
const MERGED_KEPT: usize = 8;

#[pymethods]
impl CallBase {
    #[new]
    fn new(
        base: String,
        headers: Vec<(String, String)>,
        timeout: f64,
        max_redirects: u32,
        insecure: bool,
    ) -> PyResult<Self> {
        let headers = Headers::new(headers).map_err(usage)?;
        let timeout = Duration::from_secs_f64(timeout.max(0.001));
        Ok(CallBase { base: base.into(), headers, timeout, max_redirects, insecure, merged: Default::default() })
    }

    /// The call as a `Prepared`, for `ScriptEngine.send` (or a native plan: squall.user.native).
    /// `url`: whole (http:// or https://, any case) or joined to the base as text, as Locust joins
    /// them; `name` None: the path and query; `record` False: the script judges it; `follow`:
    /// redirects are followed; `headers`: the call's own, merged with the session's (a None value
    /// removes one); `content_type`: the body's, sent after the headers; `timeout` None: the
    /// session's.
    #[pyo3(signature = (method, url, name, record, follow, body=None, headers=None, content_type=None, timeout=None))]
    #[allow(clippy::too_many_arguments)]
    fn prepare(
        &self,
        method: String,
        url: String,
        name: Option<String>,
        record: bool,
        follow: bool,
        body: Option<Vec<u8>>,
        headers: Option<CallHeaders>,
        content_type: Option<String>,
        timeout: Option<f64>,
    ) -> PyResult<Prepared> {
        let shape = self.shape(method, url, name, record, follow, body, headers, content_type, timeout)?;
        Ok(Prepared { shape })
    }
}

/// A call's own headers, (name, value or None to remove the session's), from a dict as it is (its
/// items read in place: `list(headers.items())` made a list and a tuple a header for nothing) or
/// any sequence of pairs. A name or value that is not text is a TypeError (the session then
/// prepares the call in Python, as requests converts or refuses it).
struct CallHeaders(Vec<(String, Option<String>)>);

impl<'a, 'py> FromPyObject<'a, 'py> for CallHeaders {
    type Error = PyErr;

    fn extract(obj: pyo3::Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(dict) = obj.cast_exact::<PyDict>() {
            let mut pairs = Vec::with_capacity(dict.len());
            for (name, value) in dict.iter() {
                pairs.push((name.extract()?, value.extract()?));
            }
            return Ok(CallHeaders(pairs));
        }
        Ok(CallHeaders(obj.extract()?))
    }
}

impl CallBase {
    /// The call's checked shape (`prepare`'s, `ScriptEngine.call`'s).
    #[allow(clippy::too_many_arguments)]
    fn shape(
        &self,
        mut method: String,
        url: String,
        name: Option<String>,
        record: bool,
        follow: bool,
        body: Option<Vec<u8>>,
        headers: Option<CallHeaders>,
        content_type: Option<String>,
        timeout: Option<f64>,
    ) -> PyResult<Checked> {
        let headers = self.headers_with(headers.map(|h| h.0).unwrap_or_default(), content_type)?;
        method.make_ascii_uppercase();
        let shape = RequestShape {
            method,
            base: self.base.clone(),
            url,
            name,
            headers,
            cookies: Vec::new(),
            body: body.unwrap_or_default(),
            timeout: timeout.map_or(self.timeout, |t| Duration::from_secs_f64(t.max(0.001))),
            record,
            max_redirects: follow.then_some(self.max_redirects),
            insecure: self.insecure,
        };
        shape.checked().map_err(usage)
    }

    /// The session's headers with a call's (`merged_headers`) and its body's Content-Type after
    /// them, checked; the same list for the same additions while `merged` keeps them.
    fn headers_with(&self, call: Vec<(String, Option<String>)>, content_type: Option<String>) -> PyResult<Headers> {
        if call.is_empty() && content_type.is_none() {
            return Ok(self.headers.clone());
        }
        let key = (call, content_type);
        let mut kept = self.merged.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(at) = kept.iter().position(|(k, _)| *k == key) {
            kept[..=at].rotate_right(1); // the most recently used first
            return Ok(kept[0].1.clone());
        }
        let mut merged = squall_engine::script::merged_headers(&self.headers, key.0.clone());
        // The body's type unless the call or the session gave one (`application/merge-patch+json` with
        // `json=`), as requests and Locust's FastHttpSession keep the one given.
        if let Some(content_type) = &key.1 {
            if !merged.iter().any(|(k, _)| k.eq_ignore_ascii_case("content-type")) {
                merged.push(("Content-Type".to_string(), content_type.clone()));
            }
        }
        let headers = Headers::new(merged).map_err(usage)?;
        kept.insert(0, (key, headers.clone()));
        kept.truncate(MERGED_KEPT); // (the least recently used goes)
        Ok(headers)
    }
}

/// A native user's plan (squall_engine::script::native): its weighted task list, each task the
/// requests it makes in order, and its wait, given as exactly one of `constant` (seconds), `between`
/// ((low, high) seconds), `pacing` (seconds a task) or `poisson` (tasks a second).
#[pyclass(module = "squall._engine", frozen)]
struct NativePlan {
    plan: Plan,
}

#[pymethods]
impl NativePlan {
    #[new]
    #[pyo3(signature = (tasks, *, constant=None, between=None, pacing=None, poisson=None))]
    fn new(
        tasks: Vec<Vec<PyRef<'_, Prepared>>>,
        constant: Option<f64>,
        between: Option<(f64, f64)>,
        pacing: Option<f64>,
        poisson: Option<f64>,
    ) -> PyResult<Self> {
        let waits = [
            constant.map(Wait::Constant),
            between.map(|(a, b)| Wait::Between(a, b)),
            pacing.map(Wait::Pacing),
            poisson.map(Wait::Poisson),
        ];
        let mut given = waits.into_iter().flatten();
        let (Some(wait), None) = (given.next(), given.next()) else {
            return Err(usage("a native plan takes one wait: constant, between, pacing or poisson"));
        };
        let tasks = tasks.iter().map(|t| t.iter().map(|p| p.shape.clone()).collect()).collect();
        let plan = Plan::new(tasks, wait);
        plan.check().map_err(usage)?;
        Ok(NativePlan { plan })
    }
}

/// What came back for a scripted MQTT or WebSocket operation (a request's is a Response).
#[pyclass(module = "squall._engine", frozen, get_all)]
struct Completion {
    id: u64,
    elapsed_us: u64,
    /// Why it failed; None when it succeeded.
    error: Option<String>,
    /// A WebSocket exchange's or receive's message (else empty), and whether it is binary.
    content: Py<PyBytes>,
    binary: bool,
    /// A WebSocket operation's: the message's opcode (1 text, 2 binary, 8 the server's close frame), or
    /// for a refused handshake its HTTP status.
    status: u16,
    /// A failed WebSocket operation's kind ("timeout", "closed", "http", "connect_refused" ...).
    kind: Option<String>,
}

/// A scripted request's response, as the engine's poll hands it over: status, URL, body and timing
/// set once; the headers kept as they came (HTTP/1.1's raw lines, HTTP/2's decoded pairs) and parsed
/// only when read (`header_pairs`, `cookies`). squall.clients.Response, requests' and Locust's
/// attributes, is its Python subclass, and `poll` makes instances of that class (`use_response_class`)
/// without running any Python: the class is called with no arguments and its fields filled here.
/// `endpoint` and `engine` say where the script's verdict on it goes (`ScriptEngine.poll`'s `verdicts`).
#[pyclass(module = "squall._engine", subclass)]
struct Response {
    #[pyo3(get)]
    id: u64,
    /// 0 when no response arrived (then `error` says why).
    #[pyo3(get, set)]
    status_code: u16,
    /// The final URL, after redirects (`url`).
    url: Text,
    #[pyo3(get, set)]
    content: Py<PyAny>,
    #[pyo3(get, set)]
    elapsed_us: u64,
    #[pyo3(get, set)]
    error: Option<Py<PyAny>>,
    /// The stats name (`name`).
    name: Text,
    /// The text encoding the script set (`encoding`); None: requests' reading of the headers.
    encoding: Option<Py<PyAny>>,
    head: Head,
    request: Option<Checked>,
    endpoint: Option<Endpoint>,
    engine: u64,
    /// A streamed response's hold on its body (`ScriptEngine.stream_take`): dropped with it, the
    /// engine closes the stream.
    stream: Option<StreamHandle>,
    /// The redirects followed on the way, until `take_history` makes them responses (boxed, as the
    /// completion's: most responses have none, and every response's fields are copied into it once).
    #[allow(clippy::box_collection)]
    history: Option<Box<Vec<squall_engine::script::Redirect>>>,
}

/// A response's text as the engine gave it, made a Python str only when read: a script's request made
/// two (its URL and its stats name) that the common script never reads, 40-60 ns a request to make and
/// free (timeit of two such decodes); or what the script set.
enum Text {
    Engine(String),
    Py(Py<PyAny>),
}

impl Text {
    fn get(&self, py: Python<'_>) -> Py<PyAny> {
        match self {
            Text::Engine(text) => PyString::new(py, text).into_any().unbind(),
            Text::Py(object) => object.clone_ref(py),
        }
    }
}

impl Response {
    /// This response as an instance of `class` (a Python subclass: called with no arguments, its fields
    /// filled here, no Python run), or of this class.
    fn made(self, py: Python<'_>, class: Option<&Py<PyType>>) -> PyResult<Py<PyAny>> {
        match class {
            Some(class) => {
                let made = class.bind(py).call0()?;
                *made.cast::<Response>()?.borrow_mut() = self;
                Ok(made.unbind())
            }
            None => Ok(Py::new(py, self)?.into_any()),
        }
    }
}

#[pymethods]
impl Response {
    #[new]
    fn new(py: Python<'_>) -> Self {
        Response {
            id: 0,
            status_code: 0,
            url: Text::Engine(String::new()),
            content: PyBytes::new(py, b"").into_any().unbind(),
            elapsed_us: 0,
            error: None,
            name: Text::Engine(String::new()),
            encoding: None,
            head: Head::default(),
            request: None,
            endpoint: None,
            engine: 0,
            stream: None,
            history: None,
        }
    }

    /// requests' `history`: a response of the plain class for each redirect followed, first first
    /// (its status, URL, headers and body as they came; `request` the hop it answered; not timed
    /// apart: its `elapsed` 0), made once: the next call returns an empty list (squall.clients keeps
    /// the first).
    fn take_history(&mut self, py: Python<'_>) -> PyResult<Vec<Py<PyAny>>> {
        let hops = self.history.take().map_or_else(Vec::new, |h| *h);
        let class = RESPONSE_CLASSES.lock().unwrap_or_else(|e| e.into_inner()).as_ref().map(|c| c.plain.clone_ref(py));
        hops.into_iter()
            .map(|hop| {
                let filled = Response {
                    status_code: hop.status,
                    url: Text::Engine(hop.request.url.clone()),
                    content: PyBytes::new(py, &hop.body).into_any().unbind(),
                    head: hop.head,
                    request: Some(hop.request),
                    engine: self.engine,
                    ..Response::new(py)
                };
                filled.made(py, class.as_ref())
            })
            .collect()
    }

    /// The final URL, after redirects.
    #[getter]
    fn url(&self, py: Python<'_>) -> Py<PyAny> {
        self.url.get(py)
    }

    #[setter]
    fn set_url(&mut self, url: Py<PyAny>) {
        self.url = Text::Py(url);
    }

    /// The stats name.
    #[getter]
    fn name(&self, py: Python<'_>) -> Py<PyAny> {
        self.name.get(py)
    }

    /// Whether its body is streamed: read from `ScriptEngine.stream_take` under its id, not in `content`.
    #[getter]
    fn streamed(&self) -> bool {
        self.stream.is_some()
    }

    /// Each header as (lower-case name, value), in order, repeated ones apart.
    fn header_pairs(&self) -> Vec<(String, String)> {
        self.head.pairs()
    }

    /// The cookies this response set (name -> value), from each Set-Cookie header.
    #[getter]
    fn cookies<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let found = PyDict::new(py);
        for (name, value) in self.head.pairs() {
            if name == "set-cookie" {
                let (cookie, rest) = value.split_once('=').unwrap_or((&value, ""));
                let value = rest.split(';').next().unwrap_or("");
                found.set_item(cookie.trim(), value.trim())?;
            }
        }
        Ok(found)
    }

    /// requests' `encoding`: what the script set, else what the headers say (`Head::encoding`: the
    /// Content-Type's charset, ISO-8859-1 for text, UTF-8 for JSON), else None.
    #[getter]
    fn encoding(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        match &self.encoding {
            Some(e) => Some(e.clone_ref(py)),
            None => self.head.encoding().map(|e| PyString::new(py, &e).into_any().unbind()),
        }
    }

    #[setter]
    fn set_encoding(&mut self, encoding: Option<Py<PyAny>>) {
        self.encoding = encoding;
    }

    /// requests' `text`: the body decoded with `encoding` (bad bytes replaced), as UTF-8 when there is
    /// none (requests guesses from the bytes then) or Python knows no such codec (requests' fallback).
    /// A UTF-8 body is decoded here, without the header dict that reading the Content-Type through
    /// `headers` makes: 5.7 µs of a 53 µs scripted request read so (py-spy, bench/locustfiles/shop.py).
    #[getter]
    fn text<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let content = self.content.bind(py);
        let encoding: Option<std::borrow::Cow<'_, str>> = match &self.encoding {
            Some(e) => Some(std::borrow::Cow::Owned(e.bind(py).extract()?)),
            None => self.head.encoding(),
        };
        let utf8 =
            encoding.as_deref().is_none_or(|e| e.eq_ignore_ascii_case("utf-8") || e.eq_ignore_ascii_case("utf8"));
        if utf8 {
            if let Ok(Ok(text)) = content.cast::<PyBytes>().map(|b| std::str::from_utf8(b.as_bytes())) {
                return Ok(PyString::new(py, text).into_any());
            }
        }
        let decode = pyo3::intern!(py, "decode");
        match content.call_method1(decode, (encoding.as_deref().unwrap_or("utf-8"), "replace")) {
            Err(e) if e.is_instance_of::<pyo3::exceptions::PyLookupError>(py) => {
                content.call_method1(decode, ("utf-8", "replace"))
            }
            other => other,
        }
    }

    /// requests' `ok`: a response came, and its status is not a failure (below 400: the engine's
    /// one rule, squall_engine::stats::failed_status).
    #[getter]
    fn ok(&self) -> bool {
        self.error.is_none() && 0 < self.status_code && !squall_engine::stats::failed_status(self.status_code)
    }

    /// The method of the request it answers.
    #[getter]
    fn request_method(&self) -> &str {
        self.request.as_ref().map_or("", |r| r.method.as_str())
    }

    /// The URL the request was made to, before any redirect (`url` is the final one): what Locust's
    /// request event calls its `url`. Made when read: only listeners read it.
    #[getter]
    fn requested_url(&self, py: Python<'_>) -> Py<PyAny> {
        match self.request.as_ref().map(|r| squall_engine::http::request::parse_url(&r.url)) {
            Some(Ok(url)) => PyString::new(py, url.as_str()).into_any().unbind(),
            _ => self.url.get(py),
        }
    }

    /// What was sent: the headers (the session's and the call's, merged) and the body.
    fn sent<'py>(&self, py: Python<'py>) -> (Vec<(String, String)>, Bound<'py, PyBytes>) {
        match &self.request {
            Some(r) => (r.headers.to_vec(), PyBytes::new(py, &r.body)),
            None => (Vec::new(), PyBytes::new(py, b"")),
        }
    }
}

/// The Python classes `poll` makes responses of (subclasses of Response): a request's, and a caught
/// one's (`catch_response`, whose script judges it), each read whole or streamed; the base class
/// until set.
struct ResponseClasses {
    plain: Py<PyType>,
    caught: Py<PyType>,
    streamed: Py<PyType>,
    streamed_caught: Py<PyType>,
}

impl ResponseClasses {
    fn clone_ref(&self, py: Python<'_>) -> ResponseClasses {
        ResponseClasses {
            plain: self.plain.clone_ref(py),
            caught: self.caught.clone_ref(py),
            streamed: self.streamed.clone_ref(py),
            streamed_caught: self.streamed_caught.clone_ref(py),
        }
    }
}
static RESPONSE_CLASSES: Mutex<Option<ResponseClasses>> = Mutex::new(None);

/// Makes `poll`'s responses instances of `cls`, a subclass of Response whose construction takes no
/// arguments (squall.clients.Response), and those of requests the script judges instances of `caught`
/// (squall.clients.ResponseContextManager; `cls` if not given), and those of streamed requests
/// (`stream=True`) instances of `streamed` and `streamed_caught` (`cls` and `caught` if not given).
#[pyfunction]
#[pyo3(signature = (cls, caught=None, streamed=None, streamed_caught=None))]
fn use_response_class(
    cls: Bound<'_, PyType>,
    caught: Option<Bound<'_, PyType>>,
    streamed: Option<Bound<'_, PyType>>,
    streamed_caught: Option<Bound<'_, PyType>>,
) -> PyResult<()> {
    let caught = caught.unwrap_or_else(|| cls.clone());
    let streamed = streamed.unwrap_or_else(|| cls.clone());
    let streamed_caught = streamed_caught.unwrap_or_else(|| caught.clone());
    for class in [&cls, &caught, &streamed, &streamed_caught] {
        if !class.is_subclass_of::<Response>()? {
            return Err(PyValueError::new_err("the response class must be a subclass of squall._engine.Response"));
        }
    }
    let classes = ResponseClasses {
        plain: cls.unbind(),
        caught: caught.unbind(),
        streamed: streamed.unbind(),
        streamed_caught: streamed_caught.unbind(),
    };
    *RESPONSE_CLASSES.lock().unwrap_or_else(|e| e.into_inner()) = Some(classes);
    Ok(())
}

/// An MQTT message that arrived for a scripted user's subscription.
#[pyclass(module = "squall._engine", frozen, get_all)]
struct Message {
    user: u64,
    topic: String,
    payload: Py<PyBytes>,
    qos: u8,
}

/// Lets a closure that touches the engine run with the GIL released. The engine is not `Send`, but
/// `detach` runs the closure on this same thread, so nothing crosses threads.
struct SameThread<T>(T);
// SAFETY: only used with `Python::detach`, which runs the closure on the calling thread.
unsafe impl<T> Send for SameThread<T> {}
impl<T> SameThread<T> {
    fn get(self) -> T {
        self.0
    }
}

/// The engine of scripted users, driven from the script's thread (see squall_engine::script).
#[pyclass(module = "squall._engine", unsendable)]
struct ScriptEngine {
    engine: Option<Engine>,
    /// This engine among the process's: a verdict on another engine's response is not recorded here.
    serial: u64,
}

static ENGINES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl ScriptEngine {
    /// A completion as Python sees it: a request's, a Response (of the class `use_response_class` set
    /// for it); any other operation's, a Completion.
    fn completion(
        &self,
        py: Python<'_>,
        c: squall_engine::script::Completion,
        classes: Option<&ResponseClasses>,
    ) -> PyResult<Py<PyAny>> {
        let Some((request, endpoint)) = c.request else {
            let completion = Completion {
                id: c.id,
                elapsed_us: c.elapsed_us,
                error: c.error.clone(),
                content: PyBytes::new(py, &c.body).unbind(),
                binary: c.status == 2, // a WebSocket message's opcode (websocket.rs)
                status: c.status,
                kind: (c.error.is_some() && !c.name.is_empty()).then_some(c.name),
            };
            return Ok(Py::new(py, completion)?.into_any());
        };
        let class = classes.map(|k| match (request.record, c.stream.is_some()) {
            (true, false) => &k.plain,
            (false, false) => &k.caught,
            (true, true) => &k.streamed,
            (false, true) => &k.streamed_caught,
        });
        let filled = Response {
            id: c.id,
            status_code: c.status,
            url: Text::Engine(c.url),
            content: PyBytes::new(py, &c.body).into_any().unbind(),
            elapsed_us: c.elapsed_us,
            error: c.error.map(|e| PyString::new(py, &e).into_any().unbind()),
            name: Text::Engine(c.name),
            encoding: None,
            head: c.head,
            request: Some(request),
            endpoint: Some(endpoint),
            engine: self.serial,
            stream: c.stream.map(StreamHandle),
            history: c.history,
        };
        filled.made(py, class)
    }

    fn engine(&self) -> PyResult<&Engine> {
        self.engine.as_ref().ok_or_else(|| PyRuntimeError::new_err("the run has finished"))
    }
}

#[pymethods]
impl ScriptEngine {
    #[new]
    #[pyo3(signature = (insecure=false, http2=false))]
    fn new(insecure: bool, http2: bool) -> PyResult<Self> {
        let engine = Engine::new(ScriptOptions { insecure, http2 })
            .map_err(|e| PyRuntimeError::new_err(format!("cannot start the engine: {e}")))?;
        let serial = ENGINES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(ScriptEngine { engine: Some(engine), serial })
    }

    /// Starts `user`'s request of `prepared`; returns its id (its completion comes from `poll`).
    fn send(&self, user: u64, prepared: &Prepared) -> PyResult<u64> {
        self.engine()?
            .submit(user, ScriptRequest { shape: prepared.shape.clone(), read: true, stamp: false, stream: None })
            .map_err(usage)
    }

    /// `base.prepare(...)` then `send`, in one crossing: a script's common call, with no Prepared made
    /// (squall.clients.HttpSession.request). Measured alone (shop.py's view_item call, best of 5 rounds
    /// of 20,000 against an engine that never polls): 2.8-3.2 us as two calls, 2.5-2.6 as one.
    #[pyo3(signature = (user, base, method, url, name, record, follow, body=None, headers=None, content_type=None, timeout=None))]
    #[allow(clippy::too_many_arguments)]
    fn call(
        &self,
        user: u64,
        base: &CallBase,
        method: String,
        url: String,
        name: Option<String>,
        record: bool,
        follow: bool,
        body: Option<Vec<u8>>,
        headers: Option<CallHeaders>,
        content_type: Option<String>,
        timeout: Option<f64>,
    ) -> PyResult<u64> {
        let shape = base.shape(method, url, name, record, follow, body, headers, content_type, timeout)?;
        self.engine()?.submit(user, ScriptRequest { shape, read: true, stamp: false, stream: None }).map_err(usage)
    }

    /// Starts `user`'s streamed request (requests' `stream=True`) of `prepared`: its completion, a
    /// Response whose `streamed` is true, comes at its head; its body then from `stream_take` under
    /// the same id, each wait for more bounded by `read_timeout` seconds.
    fn send_stream(&self, user: u64, prepared: &Prepared, read_timeout: f64) -> PyResult<u64> {
        let r = ScriptRequest {
            shape: prepared.shape.clone(),
            read: true,
            stamp: false,
            stream: Some(Duration::from_secs_f64(read_timeout.max(0.001))),
        };
        self.engine()?.submit_stream(user, r).map_err(usage)
    }

    /// Up to `max` bytes of streamed response `stream`'s body that came (all of them: None): b"" once
    /// it has ended and all is taken, None while nothing has come yet (then `stream_wait`); StreamCut
    /// (its message: why) once a body cut short has given all it had.
    #[pyo3(signature = (stream, max=None))]
    fn stream_take<'py>(
        &self,
        py: Python<'py>,
        stream: u64,
        max: Option<usize>,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        match self.engine()?.stream_take(stream, max) {
            Taken::Bytes(data) => Ok(Some(PyBytes::new(py, &data))),
            Taken::Nothing => Ok(None),
            Taken::End => Ok(Some(PyBytes::new(py, b""))),
            Taken::Cut(why) => Err(StreamCut::new_err(why)),
        }
    }

    /// An operation whose completion (a Completion) comes when streamed response `stream` has more of
    /// its body or has ended.
    fn stream_wait(&self, stream: u64) -> PyResult<u64> {
        Ok(self.engine()?.stream_wait(stream))
    }

    /// The script is done with streamed response `stream` (read or not): its connection goes back to
    /// the user's pool if its body ended whole, else closes.
    fn stream_close(&self, stream: u64) -> PyResult<()> {
        self.engine()?.stream_close(stream);
        Ok(())
    }

    /// Records `verdicts`, the script's judgements of responses since the last poll (`catch_response`:
    /// (response, failure text or None), kept by the script rather than sent one by one), then runs
    /// the engine until completions are ready or `timeout` seconds pass (GIL released). A request's
    /// completion is a Response (of the class `use_response_class` set), an MQTT operation's a Completion.
    ///
    /// Given the hub's `pending` (operation id -> the greenlet waiting for it) and `ready` (a deque of
    /// (greenlet, value) to resume), a completion someone waits for is dispatched here: taken from
    /// `pending` and queued on `ready` with its greenlet, in the order they came; only the others are
    /// returned (an MQTT operation's that a callback watches). The same loop in the hub's Python cost
    /// a frame, a getter and two method calls a request (`Hub._dispatch`).
    #[pyo3(signature = (timeout, verdicts=Vec::new(), pending=None, ready=None))]
    fn poll(
        &self,
        py: Python<'_>,
        timeout: f64,
        verdicts: Vec<(PyRef<'_, Response>, Option<String>)>,
        pending: Option<&Bound<'_, PyDict>>,
        ready: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<Py<PyAny>>> {
        self.judge(py, verdicts)?;
        let engine = SameThread(self.engine()?);
        let timeout = Duration::from_secs_f64(timeout.max(0.0));
        let done = py.detach(move || engine.get().poll(timeout));
        let classes = RESPONSE_CLASSES.lock().unwrap_or_else(|e| e.into_inner()).as_ref().map(|c| c.clone_ref(py));
        let append = match ready {
            Some(ready) if pending.is_some() => Some(ready.getattr(pyo3::intern!(py, "append"))?),
            _ => None,
        };
        let mut rest = Vec::new();
        for c in done {
            let id = c.id;
            let made = self.completion(py, c, classes.as_ref())?;
            if let (Some(pending), Some(append)) = (pending, append.as_ref()) {
                let key = id.into_pyobject(py)?;
                if let Some(g) = pending.get_item(&key)? {
                    pending.del_item(&key)?;
                    append.call1(((g, made),))?;
                    continue;
                }
            }
            rest.push(made);
        }
        Ok(rest)
    }

    /// Records the script's verdicts on responses now (the last ones before the engine finishes);
    /// `poll` takes the others. A verdict on another engine's response is dropped.
    fn judge(&self, py: Python<'_>, verdicts: Vec<(PyRef<'_, Response>, Option<String>)>) -> PyResult<()> {
        if verdicts.is_empty() {
            return Ok(());
        }
        let engine = self.engine()?;
        for (response, failure) in verdicts {
            let Some(endpoint) = response.endpoint.filter(|_| response.engine == self.serial) else { continue };
            // A streamed response's size as Locust takes it at its head: the Content-Length, else 0.
            let body_bytes = match &response.stream {
                Some(_) => response.head.value("content-length").and_then(|v| v.parse().ok()).unwrap_or(0),
                None => response.content.bind(py).len().unwrap_or(0) as u64,
            };
            engine.record(Verdict {
                of: Judged::Request(endpoint),
                elapsed_us: response.elapsed_us,
                status: response.status_code,
                body_bytes,
                failure,
            });
        }
        Ok(())
    }

    /// MQTT messages that arrived for users' subscriptions.
    fn messages(&self, py: Python<'_>) -> PyResult<Vec<Message>> {
        Ok(self
            .engine()?
            .messages()
            .into_iter()
            .map(|m| Message {
                user: m.user,
                topic: m.topic,
                payload: PyBytes::new(py, &m.payload).unbind(),
                qos: m.qos,
            })
            .collect())
    }

    /// Connects a user's MQTT client (`mqtt_version` "3.1.1" or "5"); returns the operation's id.
    #[pyo3(signature = (user, broker, client_id, username, password, keepalive, clean_session, mqtt_version, timeout, insecure))]
    #[allow(clippy::too_many_arguments)]
    fn mqtt_connect(
        &self,
        user: u64,
        broker: String,
        client_id: String,
        username: Option<String>,
        password: Option<String>,
        keepalive: u16,
        clean_session: bool,
        mqtt_version: &str,
        timeout: f64,
        insecure: bool,
    ) -> PyResult<u64> {
        let version = match mqtt_version {
            "3.1.1" | "3" | "4" => Version::V311,
            "5" | "5.0" => Version::V5,
            other => return Err(usage(format!("unsupported MQTT version '{other}' (use 3.1.1 or 5)"))),
        };
        let hello = OwnedHello {
            client_id,
            keepalive,
            clean: clean_session,
            login: username.map(|u| (u, password.unwrap_or_default())),
        };
        let timeout = Duration::from_secs_f64(timeout.max(0.001));
        Ok(self.engine()?.submit_mqtt(user, |id| Op::Connect { id, broker, hello, version, timeout, insecure }))
    }

    /// `name`: the statistics' name of the publish (a client's own `_generate_event_name`), if not Locust's.
    #[pyo3(signature = (user, topic, payload, qos, retain, name=None))]
    fn mqtt_publish(
        &self,
        user: u64,
        topic: String,
        payload: Vec<u8>,
        qos: u8,
        retain: bool,
        name: Option<String>,
    ) -> PyResult<u64> {
        let payload = payload.into();
        Ok(self.engine()?.submit_mqtt(user, |id| Op::Publish { id, topic, payload, qos: qos.min(2), retain, name }))
    }

    #[pyo3(signature = (user, filter, qos, name=None))]
    fn mqtt_subscribe(&self, user: u64, filter: String, qos: u8, name: Option<String>) -> PyResult<u64> {
        Ok(self.engine()?.submit_mqtt(user, |id| Op::Subscribe { id, filter, qos: qos.min(2), name }))
    }

    fn mqtt_disconnect(&self, user: u64) -> PyResult<u64> {
        Ok(self.engine()?.submit_mqtt(user, |id| Op::Disconnect { id }))
    }

    /// Opens `user`'s WebSocket at `url` (ws:// or wss://), closing any it had; returns the operation's id.
    #[pyo3(signature = (user, url, headers, name=None, timeout=30.0))]
    fn ws_connect(
        &self,
        user: u64,
        url: String,
        headers: Vec<(String, String)>,
        name: Option<String>,
        timeout: f64,
    ) -> PyResult<u64> {
        let timeout = seconds(timeout);
        Ok(self.engine()?.submit_ws(user, |id| WsOp::Connect { id, url, headers, name, timeout }))
    }

    /// Sends a message on `user`'s WebSocket (done once written).
    #[pyo3(signature = (user, payload, binary, name=None))]
    fn ws_send(&self, user: u64, payload: Vec<u8>, binary: bool, name: Option<String>) -> PyResult<u64> {
        Ok(self.engine()?.submit_ws(user, |id| WsOp::Send { id, payload, binary, name }))
    }

    /// Sends a message and waits for the next one the server sends after it (the reply).
    #[pyo3(signature = (user, payload, binary, name=None, timeout=30.0))]
    fn ws_exchange(
        &self,
        user: u64,
        payload: Vec<u8>,
        binary: bool,
        name: Option<String>,
        timeout: f64,
    ) -> PyResult<u64> {
        let timeout = seconds(timeout);
        Ok(self.engine()?.submit_ws(user, |id| WsOp::Exchange { id, payload, binary, name, timeout }))
    }

    /// Waits for the next message on `user`'s WebSocket (the oldest unread, if one is waiting).
    #[pyo3(signature = (user, name=None, timeout=30.0))]
    fn ws_receive(&self, user: u64, name: Option<String>, timeout: f64) -> PyResult<u64> {
        let timeout = Some(seconds(timeout));
        Ok(self.engine()?.submit_ws(user, |id| WsOp::Receive { id, name, timeout }))
    }

    /// Closes `user`'s WebSocket (close 1000).
    fn ws_close(&self, user: u64) -> PyResult<u64> {
        let (code, reason, wait) = (1000, Vec::new(), Duration::ZERO);
        Ok(self.engine()?.submit_ws(user, |id| WsOp::Close { id, code, reason, wait }))
    }

    // websocket-client's connections (squall.contrib.websocket_client): any number a user, each
    // operation run beside the others on its connection, nothing recorded (the file fires its events).

    /// Opens a websocket-client connection at `url`; returns (the connection's id, the connect's id).
    /// `owner`: the user whose stop closes it (None: it lasts until the engine ends); `timeout` None:
    /// the longest wait.
    #[pyo3(signature = (owner, url, headers, timeout=None))]
    fn ws_client_connect(
        &self,
        owner: Option<u64>,
        url: String,
        headers: Vec<(String, String)>,
        timeout: Option<f64>,
    ) -> PyResult<(u64, u64)> {
        let timeout = seconds(timeout.unwrap_or(f64::NAN));
        let connect = |id| WsOp::Connect { id, url, headers, name: None, timeout };
        Ok(self.engine()?.ws_client_open(owner, connect))
    }

    /// Sends a message (text unless `binary`) on connection `socket`; done once written.
    fn ws_client_send(&self, socket: u64, payload: Vec<u8>, binary: bool) -> PyResult<u64> {
        Ok(self.engine()?.ws_client(socket, |id| WsOp::Send { id, payload, binary, name: None }))
    }

    /// Sends a ping (or, `ping` false, a pong) of the script's own.
    fn ws_client_control(&self, socket: u64, ping: bool, payload: Vec<u8>) -> PyResult<u64> {
        Ok(self.engine()?.ws_client(socket, |id| WsOp::Control { id, ping, payload }))
    }

    /// The next message on `socket`, receives served in the order asked; `timeout` None: no limit.
    #[pyo3(signature = (socket, timeout=None))]
    fn ws_client_recv(&self, socket: u64, timeout: Option<f64>) -> PyResult<u64> {
        let timeout = timeout.map(seconds);
        Ok(self.engine()?.ws_client(socket, |id| WsOp::Receive { id, name: None, timeout }))
    }

    /// A close frame (`code`, `reason`), then up to `wait` seconds for the server's close.
    fn ws_client_close(&self, socket: u64, code: u16, reason: Vec<u8>, wait: f64) -> PyResult<u64> {
        let wait = Duration::from_secs_f64(if wait.is_finite() { wait.max(0.0) } else { 0.0 });
        Ok(self.engine()?.ws_client(socket, |id| WsOp::Close { id, code, reason, wait }))
    }

    /// The script stopped waiting for operation `op` on `socket`: it ends, taking nothing.
    fn ws_client_cancel(&self, socket: u64, op: u64) -> PyResult<()> {
        self.engine()?.ws_client(socket, |_| WsOp::Cancel { op });
        Ok(())
    }

    /// The connection's Python object is gone: the engine closes it.
    fn ws_client_forget(&self, socket: u64) -> PyResult<()> {
        self.engine()?.ws_client_forget(socket);
        Ok(())
    }

    /// Records a verdict on a request the script names: a request event it fired itself.
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
        self.engine()?.record(Verdict { of: Judged::Named { method, name }, elapsed_us, status, body_bytes, failure });
        Ok(())
    }

    fn close_user(&self, user: u64) -> PyResult<()> {
        self.engine()?.close_user(user);
        Ok(())
    }

    /// The user's cookies: (name, value, domain); domain "" for cookies the script set for any host.
    fn cookies(&self, user: u64) -> PyResult<Vec<(String, String, String)>> {
        Ok(self.engine()?.cookies(user))
    }

    #[pyo3(signature = (user, name, value, domain=""))]
    fn set_cookie(&self, user: u64, name: &str, value: &str, domain: &str) -> PyResult<()> {
        self.engine()?.set_cookie(user, name, value, domain).map_err(usage)
    }

    #[pyo3(signature = (user, name=None))]
    fn remove_cookies(&self, user: u64, name: Option<&str>) -> PyResult<()> {
        self.engine()?.remove_cookies(user, name);
        Ok(())
    }

    /// Open model: task iterations from now on arrive at `rate` a second (0 pauses them), spaced
    /// `constant` or `poisson`; with `duration` (seconds), none arrives after that long from now.
    #[pyo3(signature = (rate, arrival="constant", duration=None))]
    fn set_rate(&self, rate: f64, arrival: &str, duration: Option<f64>) -> PyResult<()> {
        let arrival = match arrival {
            "constant" => squall_engine::Arrival::Constant,
            "poisson" => squall_engine::Arrival::Poisson,
            other => return Err(usage(format!("unknown arrival '{other}' (use constant or poisson)"))),
        };
        if !(rate >= 0.0 && rate.is_finite()) {
            return Err(usage(format!("invalid rate {rate}")));
        }
        self.engine()?.set_rate(rate, arrival, duration);
        Ok(())
    }

    /// Open model: the intended times (seconds since the start) of the arrivals that fell due.
    fn arrivals(&self) -> PyResult<Vec<f64>> {
        Ok(self.engine()?.arrivals())
    }

    /// Open model: `user` starts the iteration of the arrival due at `intended`.
    fn begin_iteration(&self, user: u64, intended: f64) -> PyResult<()> {
        self.engine()?.begin_iteration(user, intended);
        Ok(())
    }

    /// Runs `user`'s tasks in the engine (`plan`); returns the plan's id, whose completion comes when
    /// the plan ends (`end_plans`). UsageError for a URL that cannot be requested, nothing sent.
    fn run_plan(&self, user: u64, plan: &NativePlan) -> PyResult<u64> {
        self.engine()?.run_plan(user, &plan.plan).map_err(usage)
    }

    /// Ends every native plan at its next wait (at once for a user waiting now).
    fn end_plans(&self) -> PyResult<()> {
        self.engine()?.end_plans();
        Ok(())
    }

    /// The number of users now.
    fn set_users(&self, users: u64) -> PyResult<()> {
        self.engine()?.set_users(users);
        Ok(())
    }

    /// (completed, failed) so far.
    fn counts(&self) -> PyResult<(u64, u64)> {
        Ok(self.engine()?.counts())
    }

    /// Publishes what the users recorded now, the second in progress included (the users are done).
    fn publish_now(&self) -> PyResult<()> {
        self.engine()?.publish_now();
        Ok(())
    }

    /// The live stream and totals (see `Run.live`); never waits.
    #[pyo3(signature = (cursor, histograms=false))]
    fn live<'py>(&self, py: Python<'py>, cursor: u64, histograms: bool) -> PyResult<Bound<'py, PyAny>> {
        live_to_py(py, self.engine()?.core(), cursor, histograms)
    }

    /// Resets the totals (the live ones and the result's): empty now, counting from the start of the
    /// next second, which it returns.
    fn reset_totals(&self) -> PyResult<u64> {
        Ok(self.engine()?.reset_totals())
    }

    /// Ends the run (`reason`: completed, duration or interrupted); returns the result document.
    fn finish<'py>(&mut self, py: Python<'py>, reason: &str, url: String) -> PyResult<Bound<'py, PyAny>> {
        let engine = self.engine.take().ok_or_else(|| PyRuntimeError::new_err("already finished"))?;
        let reason = StopReason::parse(reason).ok_or_else(|| usage(format!("unknown stop reason '{reason}'")))?;
        let result = engine.finish(reason, url);
        to_py(py, &result)
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

/// A call's URL on its session's base, as Locust joins them (squall_engine::script::joined_url: the
/// engine's one join, which every request's shape gets too).
#[pyfunction]
fn joined_url(base: &str, url: &str) -> String {
    squall_engine::script::joined_url(base, url)
}

/// Whether `data` holds a run of 19 or more ASCII digits: where a JSON body may hold an integer past
/// 64 bits, which orjson reads as a float and json.loads as an int (squall.clients.Response.json reads
/// such a body with json.loads). A byte loop: a regular expression took 1.4 µs for 100 bytes.
#[pyfunction]
fn long_digit_run(data: &[u8]) -> bool {
    let mut run = 0;
    for &b in data {
        run = if b.is_ascii_digit() { run + 1 } else { 0 };
        if run >= 19 {
            return true;
        }
    }
    false
}

/// `json=`'s body as `json.dumps(obj).encode()` writes it (its defaults: ASCII with `\uXXXX` escapes,
/// ", " and ": " between items, NaN and Infinity as themselves), for the plain data scripts post:
/// dicts with text keys, lists, tuples, text, ints, floats, bools and None, of exactly those types,
/// nested at most `JSON_DEPTH` deep. None for anything else (a subclass, another key, a lone
/// surrogate, a cycle): json.dumps encodes those (squall.clients.json_body), and refuses what it
/// refuses. 0.25 µs against json's own C encoder's 1.7 for `{"item_id": 1234, "quantity": 2}`
/// (timeit), a JSON post's only Python left before the engine.
#[pyfunction]
fn json_dumps<'py>(py: Python<'py>, obj: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let mut out = Vec::with_capacity(64);
    if !json_write(&mut out, obj, 0)? {
        return Ok(None);
    }
    Ok(Some(PyBytes::new(py, &out)))
}

/// Deeper than this, `json_dumps` leaves the value to json.dumps (which finds a cycle, or recurses).
const JSON_DEPTH: usize = 64;

/// Writes `obj` as json.dumps does; false (with `out` part-written) when it is not one of
/// `json_dumps`'s plain types.
fn json_write(out: &mut Vec<u8>, obj: &Bound<'_, PyAny>, depth: usize) -> PyResult<bool> {
    if depth > JSON_DEPTH {
        return Ok(false);
    }
    if let Ok(text) = obj.cast_exact::<PyString>() {
        return Ok(json_string(out, text));
    }
    if obj.is_none() {
        out.extend_from_slice(b"null");
    } else if let Ok(flag) = obj.cast_exact::<PyBool>() {
        out.extend_from_slice(if flag.is_true() { b"true" } else { b"false" });
    } else if obj.is_exact_instance_of::<PyInt>() {
        out.extend_from_slice(obj.str()?.to_str()?.as_bytes());
    } else if let Ok(number) = obj.cast_exact::<PyFloat>() {
        let value = number.value();
        if value.is_nan() {
            out.extend_from_slice(b"NaN");
        } else if value.is_infinite() {
            out.extend_from_slice(if value > 0.0 { b"Infinity" } else { b"-Infinity" });
        } else {
            out.extend_from_slice(obj.repr()?.to_str()?.as_bytes()); // float.__repr__, as json's
        }
    } else if let Ok(dict) = obj.cast_exact::<PyDict>() {
        out.push(b'{');
        for (i, (key, value)) in dict.iter().enumerate() {
            if i > 0 {
                out.extend_from_slice(b", ");
            }
            let Ok(key) = key.cast_exact::<PyString>() else { return Ok(false) };
            if !json_string(out, key) {
                return Ok(false);
            }
            out.extend_from_slice(b": ");
            if !json_write(out, &value, depth + 1)? {
                return Ok(false);
            }
        }
        out.push(b'}');
    } else if let Ok(list) = obj.cast_exact::<PyList>() {
        return json_items(out, list.iter(), depth);
    } else if let Ok(tuple) = obj.cast_exact::<PyTuple>() {
        return json_items(out, tuple.iter(), depth);
    } else {
        return Ok(false);
    }
    Ok(true)
}

fn json_items<'py>(out: &mut Vec<u8>, items: impl Iterator<Item = Bound<'py, PyAny>>, depth: usize) -> PyResult<bool> {
    out.push(b'[');
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.extend_from_slice(b", ");
        }
        if !json_write(out, &item, depth + 1)? {
            return Ok(false);
        }
    }
    out.push(b']');
    Ok(true)
}

/// `text` quoted as json's `encode_basestring_ascii`: printable ASCII as it is but `"` and `\`, the
/// usual short escapes, everything else `\u` and four lower-case hex digits (a surrogate pair past
/// the BMP). False for text that is not UTF-8 (a lone surrogate).
fn json_string(out: &mut Vec<u8>, text: &Bound<'_, PyString>) -> bool {
    let Ok(text) = text.to_str() else { return false };
    json_escape(out, text);
    true
}

fn json_escape(out: &mut Vec<u8>, text: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    let unit = |out: &mut Vec<u8>, u: u16| {
        out.extend_from_slice(b"\\u");
        for shift in [12, 8, 4, 0] {
            out.push(HEX[((u >> shift) & 0xf) as usize]);
        }
    };
    for c in text.chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            '\u{8}' => out.extend_from_slice(b"\\b"),
            '\u{c}' => out.extend_from_slice(b"\\f"),
            ' '..='~' => out.push(c as u8),
            _ => {
                let mut pair = [0u16; 2];
                for u in c.encode_utf16(&mut pair) {
                    unit(out, *u);
                }
            }
        }
    }
    out.push(b'"');
}

/// requests' `params=` (and form `data=`) as its query string: requests' `_encode_params` (a dict's
/// items or a list of pairs; a list or tuple value a pair each; None values dropped; text as UTF-8,
/// numbers as `str` writes them) then `urlencode(doseq=True)` (squall_engine::http::query). None when
/// the pairs hold anything else (another mapping or iterable, an object, a lone surrogate): Python's
/// own encoding takes those (squall.clients._encode_params), so every case reads as requests reads it.
#[pyfunction]
fn encoded_params(params: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
    let mut out = String::new();
    if let Ok(dict) = params.cast_exact::<PyDict>() {
        for (key, values) in dict.iter() {
            if !quote_values(&mut out, &key, &values)? {
                return Ok(None);
            }
        }
    } else if params.is_exact_instance_of::<PyList>() || params.is_exact_instance_of::<PyTuple>() {
        for item in params.try_iter()? {
            let item = item?;
            let Ok(kv) = item.cast_exact::<PyTuple>() else { return Ok(None) };
            if kv.len() != 2 || !quote_values(&mut out, &kv.get_item(0)?, &kv.get_item(1)?)? {
                return Ok(None);
            }
        }
    } else {
        return Ok(None);
    }
    Ok(Some(out))
}

/// One key's pairs (squall_engine::http::query::push_pair): one a value of a list or tuple, else the
/// value's; none for a None. False if the key or a value is not one `scalar` reads.
fn quote_values(out: &mut String, key: &Bound<'_, PyAny>, values: &Bound<'_, PyAny>) -> PyResult<bool> {
    use squall_engine::http::query::push_pair;
    let Some(key) = scalar(key)? else { return Ok(false) };
    let mut one = |value: Bound<'_, PyAny>| -> PyResult<bool> {
        if value.is_none() {
            return Ok(true);
        }
        let Some(value) = scalar(&value)? else { return Ok(false) };
        push_pair(out, &key, &value);
        Ok(true)
    };
    if let Ok(list) = values.cast_exact::<PyList>() {
        list.iter().try_fold(true, |ok, v| Ok(ok && one(v)?))
    } else if let Ok(tuple) = values.cast_exact::<PyTuple>() {
        tuple.iter().try_fold(true, |ok, v| Ok(ok && one(v)?))
    } else {
        one(values.clone())
    }
}

/// A key or value as requests' encoding reaches `quote_plus`: text (its UTF-8) or bytes as they are,
/// an int, float or bool as `str` writes it; None for anything else (and for text with a lone
/// surrogate, which Python's encoding refuses in its own words).
fn scalar<'a>(v: &'a Bound<'_, PyAny>) -> PyResult<Option<std::borrow::Cow<'a, [u8]>>> {
    use std::borrow::Cow;
    Ok(if let Ok(text) = v.cast::<PyString>() {
        text.to_str().ok().map(|t| Cow::Borrowed(t.as_bytes()))
    } else if let Ok(bytes) = v.cast::<PyBytes>() {
        Some(Cow::Borrowed(bytes.as_bytes()))
    } else if v.is_exact_instance_of::<PyInt>()
        || v.is_exact_instance_of::<PyFloat>()
        || v.is_exact_instance_of::<PyBool>()
    {
        Some(Cow::Owned(v.str()?.to_str()?.as_bytes().to_vec()))
    } else {
        None
    })
}

/// Merges the result documents (the JSON text of `--json` files) of several runs into one,
/// losslessly; returns the merged document.
#[pyfunction]
fn merge_results<'py>(py: Python<'py>, docs: Vec<String>) -> PyResult<Bound<'py, PyAny>> {
    let merged = py.detach(|| squall_engine::stats::merge::merge_json(&docs)).map_err(UsageError::new_err)?;
    Ok(pythonize(py, &merged)?)
}

/// Exact values of a serialized histogram (an endpoint's `histogram` in a result) at the percentiles
/// given (0 to 100), in microseconds.
#[pyfunction]
fn histogram_percentiles(histogram: &str, percentiles: Vec<f64>) -> PyResult<Vec<u64>> {
    let h = squall_engine::stats::histogram_from_base64(histogram).map_err(UsageError::new_err)?;
    Ok(percentiles.iter().map(|&p| if h.is_empty() { 0 } else { h.value_at_percentile(p.clamp(0.0, 100.0)) }).collect())
}

/// Serialized histograms added into one, and what the live stream shows of it: the statistics exact
/// to the histograms' resolution (a distributed run's driver merges its workers' seconds with it).
#[pyclass(module = "squall._engine", frozen, get_all)]
struct MergedHistogram {
    /// The sum, serialized as a result's `histogram`.
    histogram: String,
    count: u64,
    min_us: u64,
    max_us: u64,
    mean_us: f64,
    stdev_us: f64,
    /// At `PERCENTILES`, keyed as a summary's `percentiles_us`.
    percentiles_us: std::collections::BTreeMap<String, u64>,
    spectrum: Vec<(f64, u64)>,
    buckets: Vec<(u64, u64)>,
}

#[pyfunction]
fn merge_histograms(py: Python<'_>, histograms: Vec<String>) -> PyResult<MergedHistogram> {
    py.detach(|| {
        let mut sum = squall_engine::stats::new_histogram();
        for h in &histograms {
            squall_engine::stats::add_base64(&mut sum, h).map_err(UsageError::new_err)?;
        }
        let s = result::summarize(&sum, sum.len(), 0, 0, 0);
        Ok(MergedHistogram {
            histogram: squall_engine::stats::histogram_to_base64(&sum),
            count: sum.len(),
            min_us: s.min_us,
            max_us: s.max_us,
            mean_us: s.mean_us,
            stdev_us: s.stdev_us,
            percentiles_us: s.percentiles_us,
            spectrum: result::spectrum(&sum),
            buckets: result::le_buckets(&sum),
        })
    })
}

/// What a series of histograms (an endpoint's seconds, in order) add up to after each: the median and
/// the mean of the sum so far, in microseconds, as a second's `cumulative` has them before the clamp
/// to the exact minimum and maximum (the history CSV's totals of each endpoint, and after a reset).
#[pyclass(module = "squall._engine", frozen, get_all)]
struct RunningHistogram {
    /// Values in the sum so far.
    counts: Vec<u64>,
    medians_us: Vec<u64>,
    means_us: Vec<f64>,
}

#[pyfunction]
fn running_histogram(py: Python<'_>, histograms: Vec<String>) -> PyResult<RunningHistogram> {
    py.detach(|| {
        let mut sum = squall_engine::stats::new_histogram();
        let n = histograms.len();
        let (mut counts, mut medians_us, mut means_us) =
            (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
        for h in &histograms {
            squall_engine::stats::add_base64(&mut sum, h).map_err(UsageError::new_err)?;
            let empty = sum.is_empty();
            counts.push(sum.len());
            medians_us.push(if empty { 0 } else { sum.value_at_percentile(50.0) });
            means_us.push(if empty { 0.0 } else { sum.mean() });
        }
        Ok(RunningHistogram { counts, medians_us, means_us })
    })
}

#[pymodule]
fn _engine(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", squall_engine::VERSION)?;
    m.add("PERCENTILES", squall_engine::stats::PERCENTILES.to_vec())?;
    m.add("LONGEST_WAIT_S", squall_engine::script::LONGEST_WAIT_S)?;
    m.add("UsageError", m.py().get_type::<UsageError>())?;
    m.add("TargetError", m.py().get_type::<TargetError>())?;
    m.add("StreamCut", m.py().get_type::<StreamCut>())?;
    m.add_class::<Run>()?;
    m.add_class::<Progress>()?;
    m.add_class::<Prepared>()?;
    m.add_class::<CallBase>()?;
    m.add_class::<NativePlan>()?;
    m.add_class::<Completion>()?;
    m.add_class::<Response>()?;
    m.add_function(wrap_pyfunction!(use_response_class, m)?)?;
    m.add_class::<Message>()?;
    m.add_class::<ScriptEngine>()?;
    m.add_class::<DemoTarget>()?;
    m.add_function(wrap_pyfunction!(merge_results, m)?)?;
    m.add_function(wrap_pyfunction!(long_digit_run, m)?)?;
    m.add_function(wrap_pyfunction!(json_dumps, m)?)?;
    m.add_function(wrap_pyfunction!(encoded_params, m)?)?;
    m.add_function(wrap_pyfunction!(joined_url, m)?)?;
    m.add_function(wrap_pyfunction!(histogram_percentiles, m)?)?;
    m.add_function(wrap_pyfunction!(merge_histograms, m)?)?;
    m.add_function(wrap_pyfunction!(running_histogram, m)?)?;
    m.add_class::<MergedHistogram>()?;
    m.add_class::<RunningHistogram>()?;
    m.add_function(wrap_pyfunction!(start_demo_broker, m)?)?;
    Ok(())
}

/// A timeout the script gives, in seconds: at least a millisecond, at most the engine's longest wait.
fn seconds(s: f64) -> Duration {
    Duration::from_secs_f64(if s.is_nan() {
        squall_engine::script::LONGEST_WAIT_S
    } else {
        s.clamp(0.001, squall_engine::script::LONGEST_WAIT_S)
    })
}
