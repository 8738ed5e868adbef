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
//! Driven users (`NativeUser::driven`): a plan whose every task is one request over the user's own
//! HTTP/1.1 connection, with a think before each, runs in the engine's passes while `poll` reads in
//! ticks (`TICK`), the user's task asleep (`rest`). The pass that ends a think sends the request
//! (`send_now`: the prepared bytes, once no cookie would go with them) and a later pass reads its
//! response when the reactor says it came (`receive_now`), records it as `measure` records any
//! (`record_response`: timed from the send to the kernel's receive stamp), draws the next think and
//! task, and puts the user back in the ring. Whatever one read does not finish simply (a response in
//! pieces, a chunked body, a Set-Cookie, a Location, a close, an end of stream, an error, a timeout)
//! goes back to the user's task, whose exchange goes on from the bytes read (`hand_back`), and so does
//! every user when `poll` stops reading in ticks (`hand_back_all`).
//!
//! Why: a request through the task costs two of its polls (one to send, one to read), each through
//! tokio's task machinery into the task's cold memory: about half the engine's 7 µs a request over
//! the floor's 1.4 (perf, 1,000 users `between(0.1, 0.2)`). Driven, it costs neither: the engine's
//! share of the run's samples went from 29.8% to 22.9%, and the CPU once running 0.91x (0.71-0.99, 8
//! alternated rounds of 6 s). Sending alone from the pass, the task still waking to read, had saved
//! nothing measurable (1.00x, 10 rounds): the task's poll was the cost, not where the send was made.
//!
//! Ending: the test's end (`--stop-timeout`: users finish their task) ends each plan at its next wait
//! (`ScriptEngine::end_plans`), and so does a `request` listener added mid-run (the users go on in
//! Python, where it sees their requests). The plan's end is a completion under its id, which resumes
//! the user's greenlet. A stopped user (`close_user`) ends its plan at once, a request in flight
//! abandoned as a script's is.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;
use std::task::Poll;
use std::time::{Duration, Instant};

use super::engine::{native_stream_key, Engine, NativeUser, Step, Steps, Thinker};
use super::request::{cookie_header, measure, note_stamp, record_response, Sender};
use super::wait::Pace;
pub use super::wait::Wait;
use super::{Checked, Completion, ScriptRequest};
use crate::http::h1::Received;
use crate::stats::Phases;

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
    let steps: Rc<Steps> = match engine.plan_steps(plan.id) {
        Some(steps) => steps,
        None => {
            let steps = Rc::new(resolve(engine, plan)?);
            engine.keep_plan_steps(plan.id, &steps);
            steps
        }
    };
    let home = steps.home;
    // The engine's pass may run its requests (`send_now`, `receive_now`): each task one request over
    // its own plain HTTP/1.1 connection (TLS's records are the task's to write and read), with a think
    // before it.
    let one_plain = |t: &Vec<Step>| t.len() == 1 && t[0].bytes.is_some() && t[0].known.url.scheme() == "http";
    let driven = home.is_some() && plan.wait.thinks() && steps.tasks.iter().all(one_plain);
    let state = Rc::new(NativeUser {
        user,
        steps,
        op,
        task: RefCell::new(None),
        in_flight: Cell::new(false),
        waiting: Cell::new(false),
        ending: Cell::new(false),
        thinks: plan.wait.thinks(),
        home,
        conn: RefCell::new(None),
        slot: engine.native_slot(user),
        expired: Cell::new(false),
        waker: RefCell::new(None),
        pace: RefCell::new(Pace::new(plan.wait)),
        driven,
        armed: Cell::new(None),
        sent: Cell::new(None),
        handback: Cell::new(false),
    });
    Ok((state.clone(), run(engine.clone(), state)))
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
            let request = ScriptRequest { shape: shape.clone(), read: false, stamp: thinks, stream: None };
            steps.push(Step { request, known, endpoint, bytes });
        }
        tasks.push(steps);
    }
    let mut origins = tasks.iter().flatten().map(|s: &Step| (s.known.origin, s.request.insecure));
    let first = origins.next();
    let home = first.filter(|&o| origins.all(|other| other == o) && !engine.options.http2);
    Ok(Steps { tasks, home })
}

async fn run(engine: Rc<Engine>, state: Rc<NativeUser>) {
    let (user, steps) = (state.user, state.steps.clone());
    let tasks = &steps.tasks;
    let _flight = Flight(&engine, &state);
    // The next task, and when the engine's pass sent its request (`send_now`), if it did.
    let (mut task, mut sent) = (state.pace.borrow_mut().pick(tasks.len()), None);
    loop {
        for (i, step) in tasks[task].iter().enumerate() {
            let ahead = if i == 0 { sent.take() } else { None };
            let begin = match ahead {
                Some(at) => at, // counted in flight, its deadline set, when it went (`send_now`)
                None => {
                    flight_begins(&engine, &state);
                    let begin = Instant::now();
                    engine.set_native_deadline(state.slot, begin.checked_add(step.request.timeout));
                    state.expired.set(false);
                    begin
                }
            };
            let held = (state.home == Some((step.known.origin, step.request.insecure))).then_some(&state.conn);
            let sender = Sender { user, bytes: step.bytes.as_ref(), held };
            let key = native_stream_key(state.slot);
            let sent = measure(&engine, sender, &step.request, &step.known, (key, begin), step.endpoint);
            // Past its deadline the watchdog ends the request (`ScriptEngine::time_out`, every
            // `WATCH_TICK`): the exchange is dropped, its connection closed, as a script's is.
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
            if !done {
                // (A request sent ahead may time out before an exchange took its connection.)
                state.conn.borrow_mut().take();
                let now = Instant::now();
                let failure = engine.timed_out(now, step.endpoint, now.saturating_duration_since(begin), true);
                engine.cut_stream(key, step.endpoint, &failure);
            }
            request_ends(&engine, &state);
        }
        if state.ending.get() {
            end(&engine, user, &state);
            return;
        }
        let now = Instant::now();
        let pause;
        (pause, task) = state.pace.borrow_mut().next(now, tasks.len());
        state.waiting.set(true);
        if pause.is_zero() {
            tokio::task::yield_now().await; // as gevent.sleep(0): the others run first
        } else if state.driven {
            (task, sent) = rest(&engine, &state, now + pause, task).await;
        } else {
            think(&engine, now + pause).await;
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
            thinkers.add(ms, Thinker::Wakes(cx.waker().clone()));
            added = true;
        }
        Poll::Pending
    })
    .await
}

/// A driven user's think (`NativeUser::driven`): until `until`, then `task`, and the thinks and tasks
/// after it, run by the engine's passes while they can (`send_now`, `receive_now`), the user's task
/// asleep. It wakes when they hand the user back (`hand_back`): for the task to send (returned with
/// None) or to go on with the exchange of the one they sent (with when it went), or when the watchdog
/// ends that one.
async fn rest(engine: &Engine, state: &Rc<NativeUser>, until: Instant, task: usize) -> (usize, Option<Instant>) {
    state.armed.set(Some(task));
    let ms = engine.thinkers.borrow().millisecond(until);
    engine.thinkers.borrow_mut().add(ms, Thinker::Sends(state.clone()));
    std::future::poll_fn(|cx| {
        if state.handback.replace(false) || (state.expired.get() && state.sent.get().is_some()) {
            let task = state.armed.take().unwrap_or(task);
            return Poll::Ready((task, state.sent.take()));
        }
        state.park(cx.waker());
        Poll::Pending
    })
    .await
}

/// The engine's pass, for the users whose think has ended (`Thinkers::wake`): a driven one's request
/// goes now if the engine reads in ticks (`sends`: see `TICK`) and it may (`send_now`); any other is
/// woken, to send its own.
pub(super) fn wake_thinkers(engine: &Engine, now: Instant, sends: bool) {
    engine.thinkers.borrow_mut().wake(now, |t| match t {
        Thinker::Wakes(waker) => waker.wake(),
        Thinker::Sends(user) => {
            if user.armed.get().is_none() {
                return; // stopped meanwhile
            }
            if !(sends && send_now(engine, &user)) {
                hand_back(&user);
            }
        }
    });
}

/// Sends the request of the task a driven user thinks before (`rest`), now, on its own connection, as
/// its exchange would: the same bytes (its cookies are checked as a request's are: with any, the
/// exchange makes the request), timed from now, counted in flight, its deadline set. Its response is
/// read by the engine's pass (`receive_now`). False if it did not go: cookies, no idle stamping
/// connection, or the socket took nothing.
fn send_now(engine: &Engine, state: &Rc<NativeUser>) -> bool {
    let Some(task) = state.armed.get() else { return false };
    let step = &state.steps.tasks[task][0];
    let Some(bytes) = step.bytes.as_ref() else { return false };
    let host = step.known.url.host_str().unwrap_or_default();
    if cookie_header(engine, state.user, &step.request, &step.request.headers, host).is_some() {
        return false;
    }
    let mut conn = state.conn.borrow_mut();
    let Some(c) = conn.as_mut() else { return false };
    let Some(at) = c.send_now(&bytes.whole) else { return false };
    drop(conn);
    state.waiting.set(false);
    state.sent.set(Some(at));
    flight_begins(engine, state);
    engine.set_native_deadline(state.slot, at.checked_add(step.request.timeout));
    state.expired.set(false);
    engine.driven.borrow_mut().push(state.clone());
    true
}

/// The engine's pass, for the requests it sent (`send_now`): reads what came for each, without
/// waiting (a socket with nothing new costs no system call: the reactor's last turn said so), and
/// records a response read whole, as `measure` does, then draws the user's next think and task and
/// puts it back in the ring; else hands the user back, its exchange to go on from what was read.
pub(super) fn receive_now(engine: &Engine) {
    if engine.driven.borrow().is_empty() {
        return;
    }
    let mut driven = std::mem::take(&mut *engine.driven.borrow_mut());
    driven.retain(|state| {
        let (Some(task), Some(begin)) = (state.armed.get(), state.sent.get()) else {
            return false; // stopped, timed out or handed back meanwhile
        };
        let step = &state.steps.tasks[task][0];
        let received = match state.conn.borrow_mut().as_mut() {
            Some(c) => c.receive_now(step.request.method == "HEAD"),
            None => Received::Exchange,
        };
        match received {
            Received::Nothing => true,
            Received::Exchange => {
                hand_back(state);
                false
            }
            Received::Whole(resp, timing) => {
                note_stamp(engine, resp.received);
                let now = Instant::now();
                let seen = (Duration::ZERO, Phases::default(), timing);
                record_response(engine, &step.request, begin, step.endpoint, &resp, seen, now);
                state.sent.set(None);
                request_ends(engine, state);
                next(engine, state, now);
                false
            }
        }
    });
    driven.append(&mut engine.driven.borrow_mut()); // (none: nothing sends while this runs)
    *engine.driven.borrow_mut() = driven;
}

/// A driven user's request ended in the engine's pass (`receive_now`) at `now`: its plan ends if the
/// test is ending, else it thinks before its next task, in the ring again (`rest` goes on).
fn next(engine: &Engine, state: &Rc<NativeUser>, now: Instant) {
    if state.ending.get() {
        state.abort(); // its task ends here, asleep in `rest`
        end(engine, state.user, state);
        return;
    }
    let (pause, task) = state.pace.borrow_mut().next(now, state.steps.tasks.len());
    state.armed.set(Some(task));
    state.waiting.set(true);
    if pause.is_zero() {
        hand_back(state); // (`constant_pacing` behind its period: the task runs it at once)
        return;
    }
    let ms = engine.thinkers.borrow().millisecond(now + pause);
    engine.thinkers.borrow_mut().add(ms, Thinker::Sends(state.clone()));
}

/// The user's task takes over from the engine's pass (`rest` returns): to send its next request, or
/// to go on with the exchange of the one sent.
fn hand_back(state: &NativeUser) {
    state.handback.set(true);
    let waker = state.waker.borrow().clone();
    if let Some(waker) = waker {
        waker.wake();
    }
}

/// Every request the engine's pass sent goes back to its user's task, whose exchange reads it as
/// responses come: when `poll` stops reading in ticks (`TICK`).
pub(super) fn hand_back_all(engine: &Engine) {
    for state in std::mem::take(&mut *engine.driven.borrow_mut()) {
        if state.armed.get().is_some() && state.sent.get().is_some() {
            hand_back(&state);
        }
    }
}

/// A native user's request is sent: counted in flight (see `TICK`).
fn flight_begins(engine: &Engine, state: &NativeUser) {
    state.in_flight.set(true);
    engine.native_in_flight.set(engine.native_in_flight.get() + 1);
    engine.native_sent.notify_one();
}

/// Its request is over: its deadline cleared, no longer in flight.
fn request_ends(engine: &Engine, state: &NativeUser) {
    engine.set_native_deadline(state.slot, None);
    flight_ends(engine, state);
}

/// No longer in flight (also an abandoned request's, its task aborted: `Flight`; not its deadline, whose
/// slot a stopped user has given up: `Engine::remove_native`).
fn flight_ends(engine: &Engine, state: &NativeUser) {
    if state.in_flight.replace(false) {
        engine.native_in_flight.set(engine.native_in_flight.get() - 1);
    }
}

/// A native user's task: a request it has in flight when the task ends (aborted) is no longer counted.
struct Flight<'a>(&'a Engine, &'a NativeUser);

impl Drop for Flight<'_> {
    fn drop(&mut self) {
        flight_ends(self.0, self.1);
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

    #[test]
    fn a_native_users_task_stays_small() {
        // The task's future is what each of its polls loads from and stores to (twice a request, its
        // memory cold after a think time); HTTP/2's exchange and a connect, boxed where they run,
        // are not part of it (request.rs `exchange_h2`): 4,256 bytes unboxed, 1,864 boxed, and 3%
        // less CPU once running with 1,000 users `between(0.1, 0.2)` (0.80-1.11, 10 alternated
        // rounds of 6 s). The bound keeps a future that grows back from going unnoticed.
        let engine = Rc::new(Engine::new(super::super::ScriptOptions::default(), crate::run::RunCore::new()));
        let plan = Plan::new(vec![vec![super::super::plain_get()]], Wait::Between(0.1, 0.2));
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
