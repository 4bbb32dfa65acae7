//! How long a client may take to send a request body, on every door that faces clients.
//! A connection whose body never comes holds a socket, a task and, while a handler waits
//! on it, whatever the handler took before reading (a request slot); so a body must
//! arrive within a total time, and, after a short grace, no slower than a minimum rate:
//! a client that sends its head and then nothing, or a byte every few seconds, is cut
//! long before the total time, while a large body on a slow but honest link still
//! arrives.
//!
//! [`BodyPace`] is the rule (pure, the clock an input); [`paced`] wraps a body so that
//! whoever reads it (`to_bytes`, a form or JSON extractor, a library) gets an error at the
//! moment the body is late, and leaves a [`BodyWatch`] behind that tells the door it was,
//! so it can answer 408 and close the connection.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use tokio::time::{Instant, Sleep};

/// The deadlines of one body, counted from the moment its reader first waits on it (a
/// request that waited for its turn is not blamed for the wait).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyPace {
    /// The whole body must have arrived within this long.
    pub total: Duration,
    /// After `grace`, at least this many bytes a second must have arrived on average
    /// (counted from the end of the grace).
    pub min_bytes_per_s: u32,
    /// How long the rate is not checked: the first bytes of an honest client may be
    /// held up by its network.
    pub grace: Duration,
}

impl BodyPace {
    /// When a body of which `received` bytes have arrived is late, counted from the start
    /// of reading: at the total time, or when the bytes fall behind the minimum rate
    /// (`received < min_bytes_per_s × (t − grace)`), whichever comes first.
    pub fn late_at(&self, received: u64) -> Duration {
        let rate = f64::from(self.min_bytes_per_s.max(1));
        let by_rate = self
            .grace
            .saturating_add(Duration::from_secs_f64(received as f64 / rate));
        by_rate.min(self.total)
    }
}

/// The error a paced body gives its reader once it is late.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the request body did not arrive in time")]
pub struct BodyTooSlow;

/// Whether `error`, or any error it wraps, is a [`BodyTooSlow`]: the readers of a body
/// (axum's, a library's) wrap its error once or twice.
pub fn is_too_slow(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut at = Some(error);
    while let Some(e) = at {
        if e.downcast_ref::<BodyTooSlow>().is_some() {
            return true;
        }
        at = e.source();
    }
    false
}

/// What became of a paced body, for the door that wrapped it.
#[derive(Debug, Default)]
pub struct BodyWatch {
    late: AtomicBool,
    finished: AtomicBool,
}

impl BodyWatch {
    /// The body missed its deadline while someone read it.
    pub fn late(&self) -> bool {
        self.late.load(Ordering::Acquire)
    }

    /// The body was read to its end.
    pub fn finished(&self) -> bool {
        self.finished.load(Ordering::Acquire)
    }
}

/// `body`, cut by `pace` while it is read; the watch says what happened.
pub fn paced(body: Body, pace: BodyPace) -> (Body, Arc<BodyWatch>) {
    let watch = Arc::new(BodyWatch::default());
    let paced = PacedBody {
        inner: body,
        pace,
        started: None,
        received: 0,
        timer: None,
        watch: watch.clone(),
    };
    (Body::new(paced), watch)
}

struct PacedBody {
    inner: Body,
    pace: BodyPace,
    started: Option<Instant>,
    received: u64,
    /// Set to the moment the body is late, while its reader waits.
    timer: Option<Pin<Box<Sleep>>>,
    watch: Arc<BodyWatch>,
}

impl PacedBody {
    fn too_slow(&mut self) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        self.watch.late.store(true, Ordering::Release);
        Poll::Ready(Some(Err(axum::Error::new(BodyTooSlow))))
    }
}

impl HttpBody for PacedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = self.get_mut();
        if this.watch.late() {
            return this.too_slow();
        }
        let started = *this.started.get_or_insert_with(Instant::now);
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.received += data.len() as u64;
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(None) => {
                this.watch.finished.store(true, Ordering::Release);
                Poll::Ready(None)
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e))),
            Poll::Pending => {
                let late_at = started + this.pace.late_at(this.received);
                if Instant::now() >= late_at {
                    return this.too_slow();
                }
                let timer = this
                    .timer
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(late_at)));
                if timer.deadline() != late_at {
                    timer.as_mut().reset(late_at);
                }
                match timer.as_mut().poll(cx) {
                    Poll::Ready(()) => this.too_slow(),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;

    const PACE: BodyPace = BodyPace {
        total: Duration::from_secs(10),
        min_bytes_per_s: 1_000,
        grace: Duration::from_secs(2),
    };

    #[test]
    fn nothing_at_all_is_late_at_the_end_of_the_grace() {
        assert_eq!(PACE.late_at(0), Duration::from_secs(2));
    }

    #[test]
    fn each_byte_buys_time_at_the_minimum_rate_up_to_the_total() {
        assert_eq!(PACE.late_at(1_000), Duration::from_secs(3));
        assert_eq!(PACE.late_at(500), Duration::from_millis(2_500));
        assert_eq!(PACE.late_at(1_000_000), Duration::from_secs(10));
    }

    #[test]
    fn a_late_body_is_found_under_the_errors_that_wrap_it() {
        let once = axum::Error::new(BodyTooSlow);
        let twice = axum::Error::new(once);
        assert!(is_too_slow(&twice));
        assert!(!is_too_slow(&axum::Error::new(std::io::Error::other("x"))));
    }

    /// A body whose sender sends `chunks`, one every `every`, then stops without ending.
    fn trickle(chunks: usize, every: Duration) -> Body {
        let stream = futures_util::stream::unfold(0, move |n| async move {
            if n < chunks {
                tokio::time::sleep(every).await;
                Some((Ok::<_, std::io::Error>(Bytes::from_static(b"x")), n + 1))
            } else {
                std::future::pending().await
            }
        });
        Body::from_stream(stream)
    }

    #[tokio::test]
    async fn a_body_that_trickles_is_cut_after_the_grace_and_the_watch_says_so() {
        let quick = BodyPace {
            total: Duration::from_secs(10),
            min_bytes_per_s: 1_000,
            grace: Duration::from_millis(200),
        };
        let (body, watch) = paced(trickle(100, Duration::from_millis(100)), quick);
        let started = Instant::now();
        let read = axum::body::to_bytes(body, 1_000).await;
        let err = read.expect_err("too slow");
        assert!(is_too_slow(&err), "{err}");
        assert!(watch.late() && !watch.finished());
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(200) && took < Duration::from_secs(2),
            "{took:?}"
        );
    }

    #[tokio::test]
    async fn a_body_that_arrives_in_time_is_read_whole() {
        let stream =
            futures_util::stream::iter([Ok::<_, std::io::Error>(Bytes::from_static(b"{\"a\":1}"))]);
        let (body, watch) = paced(Body::from_stream(stream), PACE);
        let mut data = body.into_data_stream();
        assert_eq!(data.next().await.unwrap().unwrap(), "{\"a\":1}");
        assert!(data.next().await.is_none());
        assert!(watch.finished() && !watch.late());
    }
}
