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

    /// Hands tokens from the shared queue to idle workers, or, while none is idle, starts worker
    /// 0, 1, ... `workers - 1` with one (`start_worker(index, token)`), until the queue closes and is empty.
    pub async fn run(
        &self,
        rx: &async_channel::Receiver<Instant>,
        workers: usize,
        mut start_worker: impl FnMut(usize, Instant),
    ) {
        let mut started = 0;
        loop {
            while self.idle.borrow().is_empty() && started == workers {
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
                    start_worker(started, token);
                    started += 1;
                }
            }
        }
        self.closed.set(true);
        for slot in self.idle.borrow_mut().drain(..) {
            slot.wake.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_start_only_when_none_is_idle() {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        tokio::task::LocalSet::new().block_on(&rt, async {
            let dispatch = Rc::new(Dispatch::default());
            let (tx, rx) = async_channel::unbounded();
            let t0 = Instant::now();
            let tokens: Vec<Instant> = (0..4).map(|i| t0 + std::time::Duration::from_millis(i)).collect();
            for t in &tokens[..3] {
                tx.send(*t).await.unwrap();
            }
            let started = Rc::new(RefCell::new(Vec::new()));
            let run = {
                let (dispatch, rx, started) = (dispatch.clone(), rx.clone(), started.clone());
                tokio::task::spawn_local(
                    async move { dispatch.run(&rx, 2, |i, t| started.borrow_mut().push((i, t))).await },
                )
            };
            tokio::task::yield_now().await;
            // Two tokens started the two workers; the third waits for one of them to be idle.
            assert_eq!(*started.borrow(), [(0, tokens[0]), (1, tokens[1])]);
            let slot = Rc::new(Slot::default());
            assert_eq!(dispatch.next(&slot, &rx).await, Some(tokens[2])); // already due: taken at once
            let last = tokens[3];
            tokio::task::spawn_local(async move {
                tokio::task::yield_now().await;
                tx.send(last).await.unwrap();
            });
            assert_eq!(dispatch.next(&slot, &rx).await, Some(last)); // handed to the idle worker
            assert_eq!(dispatch.next(&slot, &rx).await, None); // the sender is gone: the queue is finished
            run.await.unwrap();
            assert_eq!(started.borrow().len(), 2);
        });
    }
}
