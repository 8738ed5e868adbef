//! Types every part of the engine shares. A leaf: it imports nothing from the crate, so that the
//! load kinds (bench, scripts, MQTT), the run lifecycle and the statistics can all use it without
//! depending on one another.

use serde::{Deserialize, Serialize};

/// The engine's version (the crate's): the result's `squall_version` and the User-Agent.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Why a run could not start. `Usage` is the caller's input; `Target` is the target being unusable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartError {
    Usage(String),
    Target(String),
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::Usage(m) | StartError::Target(m) => f.write_str(m),
        }
    }
}

/// Why a run ended (or `Running` while it has not). Serialized as in the result document:
/// `completed`, `duration`, `interrupted`, `drain_timeout`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[repr(u8)]
pub enum StopReason {
    #[serde(rename = "running")]
    Running = 0,
    /// Everything asked for was done (the request count, the messages, every user stopped).
    #[serde(rename = "completed")]
    Completed = 1,
    /// The duration was up.
    #[serde(rename = "duration")]
    Deadline = 2,
    /// Ctrl-C, SIGTERM, or a stop from the script or a driver.
    #[serde(rename = "interrupted")]
    Interrupted = 3,
    /// The open model's backlog did not drain within one timeout after the schedule ended.
    #[serde(rename = "drain_timeout")]
    DrainTimeout = 4,
    /// A threshold failed and `--threshold-abort` stopped the run (set by the driver, which stops
    /// the engine as an interruption and then names the reason).
    #[serde(rename = "threshold")]
    Threshold = 5,
}

impl StopReason {
    pub fn from_u8(v: u8) -> Self {
        match v {
            1 => StopReason::Completed,
            2 => StopReason::Deadline,
            3 => StopReason::Interrupted,
            4 => StopReason::DrainTimeout,
            5 => StopReason::Threshold,
            _ => StopReason::Running,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Running => "running",
            StopReason::Completed => "completed",
            StopReason::Deadline => "duration",
            StopReason::Interrupted => "interrupted",
            StopReason::DrainTimeout => "drain_timeout",
            StopReason::Threshold => "threshold",
        }
    }

    /// The inverse of `as_str`; None for an unknown word.
    pub fn parse(s: &str) -> Option<Self> {
        [Self::Running, Self::Completed, Self::Deadline, Self::Interrupted, Self::DrainTimeout, Self::Threshold]
            .into_iter()
            .find(|r| r.as_str() == s)
    }

    /// Of two processes' reasons, the one a merged run reports: an interruption anywhere stands
    /// for the whole run; otherwise the first process's.
    pub fn combine(self, other: StopReason) -> StopReason {
        if other == StopReason::Interrupted {
            other
        } else {
            self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_round_trip_through_their_words_and_json() {
        for r in [
            StopReason::Completed,
            StopReason::Deadline,
            StopReason::Interrupted,
            StopReason::DrainTimeout,
            StopReason::Threshold,
        ] {
            assert_eq!(StopReason::parse(r.as_str()), Some(r));
            assert_eq!(StopReason::from_u8(r as u8), r);
            let json = serde_json::to_string(&r).unwrap();
            assert_eq!(json, format!("\"{}\"", r.as_str()));
            assert_eq!(serde_json::from_str::<StopReason>(&json).unwrap(), r);
        }
    }
}
