//! What an MQTT run's threads share: the configuration as parsed, the run's phase (connecting,
//! running, draining, closed) and its counters, and the statistics' endpoint ids. A leaf below
//! everything that drives or reads it (run, publisher, verify, report), so that none of them imports
//! the module that drives the others.

use super::codec::Version;
use super::config::MqttConfig;
use super::delivery::Tracker;
use super::message::{Payloads, TopicTemplate};
use crate::net::Connector;
use crate::run::RunCore;
use crate::stats::Recorder;
use crate::types::StopReason;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;
use tokio::sync::{watch, Notify};

/// Endpoint ids in the statistics.
pub const CONNECT: usize = 0;
pub const PUBLISH: usize = 1;
pub const DELIVER: usize = 2;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Phase {
    /// Clients connect; nothing is published yet.
    Connecting = 0,
    Running = 1,
    /// No new messages; acknowledgements still in flight are awaited.
    Draining = 2,
    Closed = 3,
}

impl Phase {
    fn from_u8(v: u8) -> Phase {
        match v {
            0 => Phase::Connecting,
            1 => Phase::Running,
            2 => Phase::Draining,
            _ => Phase::Closed,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Connecting => "connecting",
            Phase::Running => "running",
            Phase::Draining => "draining",
            Phase::Closed => "closed",
        }
    }
}

pub struct MqttShared {
    pub cfg: MqttConfig,
    pub version: Version,
    pub topic: TopicTemplate,
    pub payloads: Payloads,
    pub connector: Connector,
    pub core: Arc<RunCore>,
    pub start: Instant,
    pub threads: usize,
    pub(super) phase: AtomicU8,
    pub(super) phase_tx: watch::Sender<Phase>,
    pub(super) load_start: Mutex<Option<Instant>>,
    pub(super) subscriber: Mutex<Option<JoinHandle<(Recorder, Tracker)>>>,
    pub(super) drain_since: Mutex<Option<Instant>>,
    pub connected: AtomicU64,
    pub first_attempt_done: AtomicUsize,
    /// Messages written to a connection.
    pub sent: AtomicU64,
    pub published: AtomicU64,
    pub failed: AtomicU64,
    /// Messages that fell due but were never written: no connection, or the run ended first (not part of `sent`).
    pub unsent: AtomicU64,
    pub delivered: AtomicU64,
    pub subscribed: AtomicUsize,
    pub(super) subscriber_error: Mutex<Option<String>>,
}

impl MqttShared {
    pub fn phase(&self) -> Phase {
        Phase::from_u8(self.phase.load(Ordering::Acquire))
    }

    pub fn phase_rx(&self) -> watch::Receiver<Phase> {
        self.phase_tx.subscribe()
    }

    pub(super) fn set_phase(&self, p: Phase) {
        if p > self.phase() {
            self.phase.store(p as u8, Ordering::Release);
            self.phase_tx.send_replace(p);
        }
    }

    pub(super) fn stop_with(&self, reason: StopReason, phase: Phase) {
        self.core.set_reason(reason);
        self.set_phase(phase);
    }

    /// Why the run is stopping; `Running` until something stops it.
    pub fn reason(&self) -> StopReason {
        self.core.reason()
    }

    /// When the measured time began, once clients may publish; None if the run closed first.
    pub async fn wait_for_load(&self, wake: &Notify) -> Option<Instant> {
        loop {
            match self.phase() {
                Phase::Connecting => wake.notified().await,
                Phase::Closed => return None,
                _ => return *self.load_start.lock().unwrap(),
            }
        }
    }

    pub fn note_subscriber_error(&self, f: &crate::stats::Failure) {
        self.subscriber_error.lock().unwrap().get_or_insert_with(|| f.message());
    }
}
