//! A native user's wait between tasks (Locust's wait-time functions, with their math) and its pace:
//! the wait, the random draws of its waits and task choices, and `constant_pacing`'s last start. Its
//! own module, below both the user's task (native.rs) and its state (engine.rs `NativeUser`), which
//! the engine's pass draws from too (native.rs `receive_now`).

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Exp1};
use std::time::{Duration, Instant};

/// The longest wait the engine keeps (about 31 years): a longer one (Locust's `constant(float("inf"))`,
/// a user that only runs its on_start) or NaN waits this long, which outlasts any run, instead of
/// overflowing an `Instant` (1e19 s aborted the process) or becoming no wait at all (1e30 s did).
/// squall.user.native leaves a user whose wait can be longer to Python (`squall._engine.LONGEST_WAIT_S`):
/// this is the engine's own guarantee.
pub const LONGEST_WAIT_S: f64 = 1e9;

/// `seconds` as a wait: none below 0, `LONGEST_WAIT_S` beyond it or for NaN.
pub fn wait_of(seconds: f64) -> Duration {
    if seconds.is_nan() || seconds >= LONGEST_WAIT_S {
        return Duration::from_secs_f64(LONGEST_WAIT_S);
    }
    Duration::try_from_secs_f64(seconds).unwrap_or(Duration::ZERO)
}

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
    pub(super) fn next(&self, rng: &mut SmallRng, paced: &mut Option<Instant>, now: Instant) -> Duration {
        let seconds = match *self {
            Wait::Constant(s) => s,
            Wait::Between(a, b) => a + rng.random::<f64>() * (b - a),
            Wait::Pacing(s) => {
                let ran = paced.map_or(0.0, |started| now.saturating_duration_since(started).as_secs_f64());
                let wait = (s - ran).max(0.0);
                *paced = Some(now + wait_of(wait));
                wait
            }
            Wait::Poisson(rate) => {
                let e: f64 = Exp1.sample(rng);
                e / rate
            }
        };
        wait_of(seconds)
    }
}

/// A native user's wait, its random numbers and its pacing: what draws its next wait and its next task.
pub(super) struct Pace {
    wait: Wait,
    rng: SmallRng,
    paced: Option<Instant>,
}

impl Pace {
    pub(super) fn new(wait: Wait) -> Pace {
        Pace { wait, rng: SmallRng::from_rng(&mut rand::rng()), paced: None }
    }

    /// The wait after a task that ended at `now`, and the task of `tasks` that follows it.
    pub(super) fn next(&mut self, now: Instant, tasks: usize) -> (Duration, usize) {
        (self.wait.next(&mut self.rng, &mut self.paced, now), self.pick(tasks))
    }

    /// The next task of `tasks` (a weighted list: uniform, as Locust's `random.choice`).
    pub(super) fn pick(&mut self, tasks: usize) -> usize {
        if tasks == 1 {
            0
        } else {
            self.rng.random_range(0..tasks)
        }
    }
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
    fn a_wait_past_the_longest_or_nan_is_the_longest_and_never_overflows_the_clock() {
        let longest = Duration::from_secs_f64(LONGEST_WAIT_S);
        for s in [f64::INFINITY, f64::NAN, 1e19, 1e30, f64::MAX, LONGEST_WAIT_S] {
            assert_eq!(waits(Wait::Constant(s), 1), vec![LONGEST_WAIT_S], "{s}");
            assert_eq!(wait_of(s), longest);
        }
        assert_eq!(waits(Wait::Between(1.0, f64::INFINITY), 1), vec![LONGEST_WAIT_S]);
        assert_eq!(wait_of(-1.0), Duration::ZERO);
        let (mut rng, mut paced, now) = (SmallRng::seed_from_u64(1), None, Instant::now());
        Wait::Pacing(f64::INFINITY).next(&mut rng, &mut paced, now); // (its next start: no overflow)
        assert_eq!(paced, Some(now + longest));
        let _ = now + longest; // the engine's `now + pause`
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
}
