//! The bounds on gRPC requests served at once, by kind: calls that wait for a proof
//! (AwaitProof and Prove, parked until their job ends) have a bound of their own, apart
//! from the one on every other call, so that parked waits never lock out GetStatus,
//! CancelProof or SubmitProof. A request past its bound is refused (RESOURCE_EXHAUSTED)
//! before its message is read.

use std::{
    future::Future,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use axum::http;
use tokio::sync::Semaphore;
use tonic::Status;
use tower::{Layer, Service};

/// The methods whose calls wait for a job to end.
const WAITING: [&str; 2] = ["/cuzk.v1.ProvingEngine/AwaitProof", "/cuzk.v1.ProvingEngine/Prove"];

/// One bound: its permits and how a refusal names it.
#[derive(Clone)]
struct Bound {
    permits: Arc<Semaphore>,
    most: usize,
    what: &'static str,
}

/// The layer that bounds a service's requests ([`Bounded`]).
#[derive(Clone)]
pub struct Bounds {
    waits: Bound,
    others: Bound,
}

impl Bounds {
    /// At most `max_waits` waiting calls and `max_requests` others at once.
    pub fn new(max_waits: usize, max_requests: usize) -> Self {
        let bound = |most: usize, what| Bound { permits: Arc::new(Semaphore::new(most)), most, what };
        Self {
            waits: bound(max_waits, "calls waiting for a proof (AwaitProof, Prove; [daemon] max_waits)"),
            others: bound(max_requests, "other requests ([daemon] max_requests)"),
        }
    }
}

impl<S> Layer<S> for Bounds {
    type Service = Bounded<S>;

    fn layer(&self, inner: S) -> Bounded<S> {
        Bounded { inner, bounds: self.clone() }
    }
}

/// A service whose requests are bounded by kind ([`Bounds`]).
#[derive(Clone)]
pub struct Bounded<S> {
    inner: S,
    bounds: Bounds,
}

impl<S, B, R> Service<http::Request<B>> for Bounded<S>
where
    S: Service<http::Request<B>, Response = http::Response<R>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    R: Default + Send + 'static,
{
    type Response = http::Response<R>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let bound = match WAITING.contains(&request.uri().path()) {
            true => &self.bounds.waits,
            false => &self.bounds.others,
        };
        let Ok(permit) = Arc::clone(&bound.permits).try_acquire_owned() else {
            let refused = Status::resource_exhausted(format!(
                "the daemon is serving {} {} at once, its most; try again when one ends",
                bound.most, bound.what
            ));
            return Box::pin(std::future::ready(Ok(refused.into_http())));
        };
        // The clone that was made ready serves this request; the fresh one waits for the next.
        let fresh = self.inner.clone();
        let mut ready = std::mem::replace(&mut self.inner, fresh);
        let response = ready.call(request);
        Box::pin(async move {
            let response = response.await;
            drop(permit);
            response
        })
    }
}
