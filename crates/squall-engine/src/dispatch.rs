//! Open-model dispatch inside one worker thread: intended send times go to the most recently idle
//! worker (LIFO), as a connection pool would, so a low rate keeps reusing a few warm connections
//! instead of cycling through all of them. Workers are started only when none is idle, so a low rate
//! never starts most of them. A thread takes a token from the shared queue only when it has an idle
//! or unstarted worker, so tokens flow to whichever thread has capacity.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Instant;
use tokio::sync::Notify;

/// Where one worker receives its next intended send time.
#[derive(Default)]
pub struct Slot {
    token: Cell<Option<Instant>>,
    wake: Notify,
}

#[derive(Default)]
pub struct Dispatch {
    idle: RefCell<Vec<Rc<Slot>>>,
    has_idle: Notify,
    closed: Cell<bool>,
}

impl Dispatch {
    /// A worker waits here for its next intended send time; None once the queue is finished.
    /// A send that is already due is taken at once: during a burst of responses, sends interleave
    /// with the reads instead of waiting until the whole burst is read.
    pub async fn next(&self, slot: &Rc<Slot>, rx: &async_channel::Receiver<Instant>) -> Option<Instant> {
        if self.closed.get() {
            return None;
        }
        if let Ok(token) = rx.try_recv() {
            return Some(token);
        }
        self.idle.borrow_mut().push(slot.clone());
        self.has_idle.notify_one();
        loop {
            if let Some(t) = slot.token.take() {
                return Some(t);
            }
            if self.closed.get() {
                return None;
            }
            slot.wake.notified().await;
        }
    }

    /// Hands tokens from the shared queue to idle workers, or to `start_worker` while fewer than
    /// `workers` are started and none is idle, until the queue closes and is empty.
    pub async fn run(&self, rx: &async_channel::Receiver<Instant>, workers: usize, mut start_worker: impl FnMut(Instant)) {
        let mut unstarted = workers;
        loop {
            while self.idle.borrow().is_empty() && unstarted == 0 {
                self.has_idle.notified().await;
            }
            let Ok(token) = rx.recv().await else { break };
            let idle = self.idle.borrow_mut().pop();
            match idle {
                Some(slot) => {
                    slot.token.set(Some(token));
                    slot.wake.notify_one();
                }
                None => {
                    unstarted -= 1;
                    start_worker(token);
                }
            }
        }
        self.closed.set(true);
        for slot in self.idle.borrow_mut().drain(..) {
            slot.wake.notify_one();
        }
    }
}
