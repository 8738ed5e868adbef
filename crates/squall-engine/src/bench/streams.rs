//! Bench's event streams (`stats::streams`): the `StreamWatch` an HTTP/1.1 exchange tells of a
//! `text/event-stream` body as it reads it.

use crate::http::h1::StreamWatch;
use crate::stats::{Failure, Received, Recorder, StreamClock, Tokens};
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// One request's watch: its events timed into the thread's recorder (endpoint 0, bench's one), and
/// the watchdog's clock (`started`) pushed back while its bytes keep coming, so that for a stream
/// `--timeout` is the longest wait for its head or its next bytes, not for its end. `streaming` tells
/// the watchdog that a timeout cuts a stream.
pub(super) struct BenchStreams<'a> {
    pub recorder: &'a RefCell<Recorder>,
    /// The run's count of streams being read (`Bench::streams_open`).
    pub open: &'a AtomicU64,
    pub started: &'a Cell<Option<Instant>>,
    pub streaming: &'a Cell<bool>,
    pub clock: StreamClock,
    pub opened: bool,
    /// The stream's bytes (HTTP/1.1), each counted received in its second as it came (`read`,
    /// `framing`); a completed one's response is recorded without them (`h1_request`).
    pub received: Received,
}

impl BenchStreams<'_> {
    /// The exchange is over: a stream it read completed, or was cut by its failure.
    pub fn ended(&mut self, failure: Option<&Failure>) {
        if !self.opened {
            return;
        }
        self.streaming.set(false);
        self.open.fetch_sub(1, Ordering::SeqCst);
        self.recorder.borrow_mut().stream_ended(Instant::now(), 0, &mut self.clock, failure);
    }
}

impl StreamWatch for BenchStreams<'_> {
    const WATCHING: bool = true;

    fn opened(&mut self, at: Instant) {
        self.opened = true;
        self.streaming.set(true);
        self.open.fetch_add(1, Ordering::SeqCst);
        self.started.set(Some(at));
        self.recorder.borrow_mut().stream(0).streams += 1;
    }

    fn read(&mut self, n: u64) {
        self.received.count(self.recorder, 0, n, n);
    }

    fn framing(&mut self, n: u64) {
        self.received.count(self.recorder, 0, 0, n);
    }

    fn progress(&mut self, at: Instant, events: u64, tokens: Tokens) {
        self.started.set(Some(at));
        self.recorder.borrow_mut().events(at, 0, events, tokens, &mut self.clock);
    }
}
