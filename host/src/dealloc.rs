//! Freeing large buffers off the hot path.
//!
//! Dropping gigabytes of vectors is an munmap storm that blocks the thread doing it (the
//! seeds measured 10 s per 32 GiB proof). [`Dealloc`] hands such buffers to a background
//! thread, which drops them while the prover goes on; each drop is a `dealloc` span of
//! the proof it came from.

use std::{
    sync::mpsc::{channel, Sender},
    thread::JoinHandle,
};

type Garbage = (tracing::Span, Box<dyn Send>);

/// A background thread that drops what it is given.
pub struct Dealloc {
    sender: Option<Sender<Garbage>>,
    thread: Option<JoinHandle<()>>,
}

impl Dealloc {
    /// Starts the thread.
    pub fn new() -> Self {
        let (sender, receiver) = channel::<Garbage>();
        let dispatch = tracing::dispatcher::get_default(Clone::clone);
        let thread = std::thread::Builder::new()
            .name("bellhop-dealloc".into())
            .spawn(move || {
                // Report to the subscriber of whoever started the thread.
                tracing::dispatcher::with_default(&dispatch, || {
                    for (parent, garbage) in receiver {
                        let _span = tracing::info_span!(parent: &parent, "dealloc").entered();
                        drop(garbage);
                    }
                })
            })
            .expect("the dealloc thread starts");
        Self { sender: Some(sender), thread: Some(thread) }
    }

    /// Drops `value` on the background thread, accounted to the current span's proof.
    pub fn drop_later<T: Send + 'static>(&self, value: T) {
        let garbage = (tracing::Span::current(), Box::new(value) as Box<dyn Send>);
        if let Some(Err(returned)) = self.sender.as_ref().map(|s| s.send(garbage)) {
            drop(returned.0);
        }
    }
}

impl Dealloc {
    /// Waits until everything handed over so far is freed.
    pub fn flush(&self) {
        let (sender, receiver) = channel();
        self.drop_later(Flushed(sender));
        // The thread is gone only when this is being dropped, which cannot be.
        let _ = receiver.recv();
    }
}

/// Says so when the dealloc thread drops it: everything handed over before it is freed.
struct Flushed(Sender<()>);

impl Drop for Flushed {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

impl Default for Dealloc {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Dealloc {
    /// Waits until everything handed over is freed.
    fn drop(&mut self) {
        drop(self.sender.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
