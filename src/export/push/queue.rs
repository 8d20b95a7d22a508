//! Pushing off the program's way: one thread of stallscope's own process takes jobs (a window to
//! build from its profile file, then push) from a queue of [`CAPACITY`]; a job offered while the
//! queue is full is refused and counted as lost, so a server that is down, slow or refusing
//! never makes the recording wait and never grows memory. The first failure is reported once;
//! [`Pusher::finish`] waits for what is queued at most the push timeout.

use super::{Target, Window, engines};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Jobs waiting at most: one being pushed, this many more.
pub const CAPACITY: usize = 2;

/// A job: builds the window to push for the target (None: its profile could not be read).
pub type Job = Box<dyn FnOnce(&Target) -> Option<Window> + Send>;

#[derive(Default)]
struct Counts {
    pushed: AtomicU64,
    /// Refused when the queue was full.
    dropped: AtomicU64,
    /// Whose push failed (the server down, slow, refusing).
    failed: AtomicU64,
    /// Whose profile could not be read.
    unread: AtomicU64,
    first_error: Mutex<Option<String>>,
}

/// What became of the windows offered.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub pushed: u64,
    /// Never pushed: the queue was full, the push failed, or the push timeout passed at the end.
    pub lost: u64,
    pub unread: u64,
    pub first_error: Option<String>,
}

impl Outcome {
    /// One line for the user.
    pub fn describe(&self, target: &str) -> String {
        let mut s = format!(
            "{} window{} pushed to {target}",
            self.pushed,
            if self.pushed == 1 { "" } else { "s" }
        );
        if self.lost > 0 {
            s += &format!(", {} lost", self.lost);
            if let Some(e) = &self.first_error {
                s += &format!(" (first: {e})");
            } else {
                s += " (the server was slower than the windows)";
            }
        }
        if self.unread > 0 {
            s += &format!(", {} not readable", self.unread);
        }
        s
    }
}

pub struct Pusher {
    tx: Option<SyncSender<Job>>,
    done: Receiver<()>,
    counts: Arc<Counts>,
    offered: u64,
    timeout: Duration,
}

impl Pusher {
    /// Starts the pushing thread. `quiet`: the first failure is not printed when it happens.
    pub fn start(target: Target, quiet: bool) -> std::io::Result<Pusher> {
        let (tx, rx) = sync_channel::<Job>(CAPACITY);
        let (done_tx, done) = sync_channel::<()>(1);
        let counts = Arc::new(Counts::default());
        let c = counts.clone();
        let timeout = target.timeout;
        std::thread::Builder::new()
            .name("stallscope-push".into())
            .spawn(move || {
                for job in rx {
                    let Some(window) = job(&target) else {
                        c.unread.fetch_add(1, Ordering::Relaxed);
                        continue;
                    };
                    match engines::send(&target, &window) {
                        Ok(()) => {
                            c.pushed.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => {
                            c.failed.fetch_add(1, Ordering::Relaxed);
                            let mut first = c.first_error.lock().unwrap_or_else(|p| p.into_inner());
                            if first.is_none() {
                                if !quiet {
                                    eprintln!(
                                        "stallscope: pushing to {} failed: {e} (the windows it cannot take are lost and counted; the program is not slowed)",
                                        target.describe()
                                    );
                                }
                                *first = Some(e);
                            }
                        }
                    }
                }
                let _ = done_tx.send(());
            })?;
        Ok(Pusher {
            tx: Some(tx),
            done,
            counts,
            offered: 0,
            timeout,
        })
    }

    /// Queues a job; when the queue is full, gives it back (it is counted as lost).
    pub fn offer(&mut self, job: Job) -> Result<(), Job> {
        self.offered += 1;
        let Some(tx) = &self.tx else {
            return Err(job);
        };
        match tx.try_send(job) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(job) | TrySendError::Disconnected(job)) => {
                self.counts.dropped.fetch_add(1, Ordering::Relaxed);
                Err(job)
            }
        }
    }

    /// Waits for the queued jobs at most the push timeout; what is left is lost.
    pub fn finish(mut self) -> Outcome {
        self.tx = None;
        let _ = self.done.recv_timeout(self.timeout);
        let c = &self.counts;
        let pushed = c.pushed.load(Ordering::Relaxed);
        let unread = c.unread.load(Ordering::Relaxed);
        Outcome {
            pushed,
            lost: self.offered.saturating_sub(pushed + unread),
            unread,
            first_error: c
                .first_error
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
        }
    }
}
