//! Native users: a scripted user whose tasks are nothing but requests with fixed arguments, run by
//! the engine without a turn of Python per request.
//!
//! Policy: the script decides (python/squall/user/native.py reads each task's bytecode and hands over
//! a `Plan` only when every task is a sequence of `self.client.<verb>(constants)` calls whose
//! responses nothing reads, the wait time is one of Locust's own, and nothing else would see a
//! request: no `request` listener, hook or `catch_response`). Here the plan runs as Python would run
//! it: a task picked uniformly from the weighted list (Locust's `random.choice`), its requests in
//! order, each sent, followed, timed and recorded exactly as a script's request is (`measure`, the
//! same path, the same cookie jar and connections), then the wait. What differs is only what nobody
//! could see: the response's header lines and body are not kept (`Keep::Cookies`: its Set-Cookie and
//! Location still are), and no completion is handed to Python.
//!
//! Why: with Python in the loop a request costs a task's bytecode, two greenlet switches, a crossing
//! each way and a response object (12.3 µs of Python a request saturated, 39.4 µs with think time,
//! bench/RESULTS.md); a plan costs none of them. Measured (bench/script_bench.py, 50 users
//! `constant(0)`, the same file both ways): 0.86 of the C floor's requests per CPU-second against 0.47
//! in Python; 1,000 users `between(0.1, 0.2)` once running 0.67 against 0.23.
//!
//! Ending: the test's end (`--stop-timeout`: users finish their task) ends each plan at its next wait
//! (`ScriptEngine::end_plans`), and so does a `request` listener added mid-run (the users go on in
//! Python, where it sees their requests). The plan's end is a completion under its id, which resumes
//! the user's greenlet. A stopped user (`close_user`) ends its plan at once, a request in flight
//! abandoned as a script's is.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Exp1};
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;
use std::task::Poll;
use std::time::{Duration, Instant};

use super::engine::{Engine, NativeUser, Step, Steps};
use super::request::{measure, Sender};
use super::{Checked, Completion, ScriptRequest};

/// The wait between a native user's tasks: Locust's wait-time functions, with their math.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Wait {
    /// `constant(s)`: s seconds.
    Constant(f64),
    /// `between(a, b)`: uniform in [a, b).
    Between(f64, f64),
    /// `constant_pacing(s)` (and `constant_throughput(n)`, s = 1/n): `max(0, s - time since the last
    /// task began)`, the first wait a whole s (as squall's Python `constant_pacing`).
    Pacing(f64),
    /// `poisson(rate)`: exponential of mean 1/rate.
    Poisson(f64),
}

impl Wait {
    /// Never 0: a user thinks between tasks.
    pub fn thinks(&self) -> bool {
        match *self {
            Wait::Constant(s) | Wait::Pacing(s) => s > 0.0,
            Wait::Between(a, _) => a > 0.0,
            Wait::Poisson(_) => true,
        }
    }

    /// The next wait, at `now`; `paced` is the last task's start for `Pacing`.
    fn next(&self, rng: &mut SmallRng, paced: &mut Option<Instant>, now: Instant) -> Duration {
        let seconds = match *self {
            Wait::Constant(s) => s,
            Wait::Between(a, b) => a + rng.random::<f64>() * (b - a),
            Wait::Pacing(s) => {
                let ran = paced.map_or(0.0, |started| now.saturating_duration_since(started).as_secs_f64());
                let wait = (s - ran).max(0.0);
                *paced = Some(now + Duration::from_secs_f64(wait));
                wait
            }
            Wait::Poisson(rate) => {
                let e: f64 = Exp1.sample(rng);
                e / rate
            }
        };
        Duration::try_from_secs_f64(seconds).unwrap_or(Duration::ZERO)
    }
}

/// A user's tasks as the engine runs them: the weighted list (a task of weight w appears w times, as
/// in Locust's), each task its requests in order.
#[derive(Clone)]
pub struct Plan {
    pub tasks: Vec<Vec<Checked>>,
    pub wait: Wait,
    /// Which plan it is: its users share its requests resolved once (`Engine::plan_steps`); a clone is
    /// the same plan.
    id: u64,
}

/// The next plan's id.
static PLANS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl Plan {
    pub fn new(tasks: Vec<Vec<Checked>>, wait: Wait) -> Plan {
        Plan { tasks, wait, id: PLANS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) }
    }

    /// Checks what only a script can get wrong: a task list, a task with a request, requests the
    /// engine records itself, waits that are numbers.
    pub fn check(&self) -> Result<(), String> {
        if self.tasks.is_empty() || self.tasks.iter().any(|t| t.is_empty()) {
            return Err("a native plan needs tasks, each with a request".into());
        }
        if self.tasks.iter().flatten().any(|s| !s.record) {
            return Err("a native plan's requests are recorded by the engine (no catch_response)".into());
        }
        let ok = |s: f64| s.is_finite() && s >= 0.0;
        let fine = match self.wait {
            Wait::Constant(s) | Wait::Pacing(s) => ok(s),
            Wait::Between(a, b) => ok(a) && ok(b),
            Wait::Poisson(rate) => rate.is_finite() && rate > 0.0,
        };
        if !fine {
            return Err(format!("a native plan's wait must be a number of seconds, not {:?}", self.wait));
        }
        Ok(())
    }
}

/// Starts `user` on `plan`: its requests resolved for this engine once, at its first user's start (a
/// URL that cannot be requested is an error, before anything is sent), and shared by all its users
/// (`Steps`). Returns the user's state and the future that runs it.
pub(super) fn start(
    engine: &Rc<Engine>,
    user: u64,
    op: u64,
    plan: &Plan,
) -> Result<(Rc<NativeUser>, impl std::future::Future<Output = ()> + 'static), String> {
    let steps = match engine.plan_steps(plan.id) {
        Some(steps) => steps,
        None => {
            let steps = Rc::new(resolve(engine, plan)?);
            engine.keep_plan_steps(plan.id, &steps);
            steps
        }
    };
    let state = Rc::new(NativeUser {
        op,
        task: RefCell::new(None),
        in_flight: Cell::new(false),
        waiting: Cell::new(false),
        ending: Cell::new(false),
        thinks: plan.wait.thinks(),
        home: steps.home,
        conn: RefCell::new(None),
        slot: engine.native_slot(user),
        expired: Cell::new(false),
        waker: RefCell::new(None),
    });
    Ok((state.clone(), run(engine.clone(), user, state, steps, plan.wait)))
}

/// The plan's requests resolved for `engine`: their URLs, endpoints and (over HTTP/1.1) bytes.
fn resolve(engine: &Engine, plan: &Plan) -> Result<Steps, String> {
    plan.check()?;
    let thinks = plan.wait.thinks();
    let mut tasks = Vec::with_capacity(plan.tasks.len());
    for task in &plan.tasks {
        let mut steps = Vec::with_capacity(task.len());
        for shape in task {
            let (known, _, endpoint) = engine.resolve(shape)?;
            let bytes = (!engine.options.http2)
                .then(|| engine.h1_prepared(&shape.method, &known.url, &shape.headers, &shape.body));
            let request = ScriptRequest { shape: shape.clone(), read: false, stamp: thinks };
            steps.push(Step { request, known, endpoint, bytes });
        }
        tasks.push(steps);
    }
    let mut origins = tasks.iter().flatten().map(|s: &Step| (s.known.origin, s.request.insecure));
    let first = origins.next();
    let home = first.filter(|&o| origins.all(|other| other == o) && !engine.options.http2);
    Ok(Steps { tasks, home })
}

async fn run(engine: Rc<Engine>, user: u64, state: Rc<NativeUser>, steps: Rc<Steps>, wait: Wait) {
    let tasks = &steps.tasks;
    let mut rng = SmallRng::from_rng(&mut rand::rng());
    let mut paced = None;
    loop {
        let task = &tasks[if tasks.len() == 1 { 0 } else { rng.random_range(0..tasks.len()) }];
        for step in task {
            let _flight = Flight::new(&engine, &state);
            let begin = Instant::now();
            let held = (state.home == Some((step.known.origin, step.request.insecure))).then_some(&state.conn);
            let sender = Sender { user, bytes: step.bytes.as_ref(), held };
            let sent = measure(&engine, sender, &step.request, &step.known, begin, step.endpoint);
            // Past its deadline the watchdog ends the request (`ScriptEngine::time_out`, every
            // `WATCH_TICK`): the exchange is dropped, its connection closed, as a script's is.
            engine.set_native_deadline(state.slot, begin.checked_add(step.request.timeout));
            state.expired.set(false);
            let mut sent = std::pin::pin!(sent);
            let done = std::future::poll_fn(|cx| {
                if state.expired.replace(false) {
                    return Poll::Ready(false);
                }
                let polled = sent.as_mut().poll(cx).map(|_| true);
                if polled.is_pending() {
                    state.park(cx.waker());
                }
                polled
            })
            .await;
            engine.set_native_deadline(state.slot, None);
            if !done {
                let now = Instant::now();
                engine.timed_out(now, step.endpoint, now.saturating_duration_since(begin), true);
            }
        }
        if state.ending.get() {
            end(&engine, user, &state);
            return;
        }
        let pause = wait.next(&mut rng, &mut paced, Instant::now());
        state.waiting.set(true);
        if pause.is_zero() {
            tokio::task::yield_now().await; // as gevent.sleep(0): the others run first
        } else {
            think(&engine, Instant::now() + pause).await;
        }
        state.waiting.set(false);
    }
}

/// Waits until `until`, woken by the engine's passes (`Thinkers`) rather than a tokio timer.
async fn think(engine: &Engine, until: Instant) {
    let ms = engine.thinkers.borrow().millisecond(until);
    let mut added = false;
    std::future::poll_fn(|cx| {
        let mut thinkers = engine.thinkers.borrow_mut();
        if thinkers.passed(ms) {
            return Poll::Ready(());
        }
        if !added {
            thinkers.add(ms, cx.waker().clone());
            added = true;
        }
        Poll::Pending
    })
    .await
}

/// A native request in flight, counted while it lives (an aborted task drops it).
struct Flight<'a>(&'a Engine, &'a NativeUser);

impl<'a> Flight<'a> {
    fn new(engine: &'a Engine, state: &'a NativeUser) -> Flight<'a> {
        state.in_flight.set(true);
        engine.native_in_flight.set(engine.native_in_flight.get() + 1);
        engine.native_sent.notify_one();
        Flight(engine, state)
    }
}

impl Drop for Flight<'_> {
    fn drop(&mut self) {
        self.1.in_flight.set(false);
        self.0.native_in_flight.set(self.0.native_in_flight.get() - 1);
    }
}

/// The plan of `user` is over: its greenlet resumes with the plan's completion.
pub(super) fn end(engine: &Engine, user: u64, state: &NativeUser) {
    engine.remove_native(user);
    // Its connection goes back to the user's pool, for the requests its greenlet makes next.
    if let (Some((origin, insecure)), Some(conn)) = (state.home, state.conn.borrow_mut().take()) {
        engine.pool.borrow_mut().give_back((user, origin, insecure), conn);
    }
    engine.push(Completion { id: state.op, ..Completion::default() });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waits(w: Wait, n: usize) -> Vec<f64> {
        let mut rng = SmallRng::seed_from_u64(7);
        let mut paced = None;
        let now = Instant::now();
        (0..n).map(|_| w.next(&mut rng, &mut paced, now).as_secs_f64()).collect()
    }

    #[test]
    fn constant_and_between_keep_their_bounds() {
        assert!(waits(Wait::Constant(0.25), 10).iter().all(|&s| (s - 0.25).abs() < 1e-9));
        let b = waits(Wait::Between(0.1, 0.2), 10_000);
        assert!(b.iter().all(|&s| (0.1..0.2).contains(&s)));
        // Uniform on [0.1, 0.2): mean 0.15, standard deviation 0.1/sqrt(12) = 0.0289; the mean of
        // 10,000 is within 5 standard errors (0.0289 / 100 * 5 = 0.0014) of it.
        let mean = b.iter().sum::<f64>() / b.len() as f64;
        assert!((mean - 0.15).abs() < 0.0015, "{mean}");
    }

    #[test]
    fn poisson_waits_have_mean_one_over_rate() {
        // Exponential of rate 4: mean 0.25, standard deviation 0.25; 10,000 draws: standard error
        // 0.0025, 5 of them 0.0125.
        let p = waits(Wait::Poisson(4.0), 10_000);
        let mean = p.iter().sum::<f64>() / p.len() as f64;
        assert!((mean - 0.25).abs() < 0.0125, "{mean}");
    }

    #[test]
    fn pacing_waits_out_the_rest_of_the_period() {
        let mut rng = SmallRng::seed_from_u64(1);
        let mut paced = None;
        let t0 = Instant::now();
        let w = Wait::Pacing(1.0);
        // The first wait is the whole period (squall's Python constant_pacing); the task then
        // begins at t0 + 1 s.
        assert_eq!(w.next(&mut rng, &mut paced, t0), Duration::from_secs(1));
        // That task ran 0.3 s: 0.7 s left of its period.
        let after = t0 + Duration::from_millis(1300);
        assert_eq!(w.next(&mut rng, &mut paced, after), Duration::from_millis(700));
        // A task that overran its period starts the next at once.
        let late = t0 + Duration::from_millis(2000) + Duration::from_millis(1500);
        assert_eq!(w.next(&mut rng, &mut paced, late), Duration::ZERO);
    }

    #[test]
    fn a_native_users_task_stays_small() {
        // The task's future is what each of its polls loads from and stores to (twice a request, its
        // memory cold after a think time); HTTP/2's exchange and a connect, boxed where they run,
        // are not part of it (request.rs `exchange_h2`): 4,256 bytes unboxed, 1,864 boxed, and 3%
        // less CPU once running with 1,000 users `between(0.1, 0.2)` (0.80-1.11, 10 alternated
        // rounds of 6 s). The bound keeps a future that grows back from going unnoticed.
        let engine = Rc::new(Engine::new(super::super::ScriptOptions::default(), crate::run::RunCore::new()));
        let shape = super::super::RequestShape {
            method: "GET".into(),
            base: "http://127.0.0.1:9".into(),
            url: "/".into(),
            name: None,
            headers: Vec::new(),
            cookies: Vec::new(),
            body: Vec::new(),
            timeout: Duration::from_secs(60),
            record: true,
            max_redirects: Some(30),
            insecure: false,
        };
        let plan = Plan::new(vec![vec![shape.checked().unwrap()]], Wait::Between(0.1, 0.2));
        let (_state, task) = start(&engine, 1, 1, &plan).unwrap();
        let size = std::mem::size_of_val(&task);
        eprintln!("a native user's task: {size} bytes");
        assert!(size <= 2048, "a native user's task grew to {size} bytes");
    }

    #[test]
    fn a_plan_without_requests_is_refused() {
        let empty = Plan::new(vec![], Wait::Constant(0.0));
        assert!(empty.check().is_err());
        let hollow = Plan::new(vec![vec![]], Wait::Constant(0.0));
        assert!(hollow.check().is_err());
    }
}
