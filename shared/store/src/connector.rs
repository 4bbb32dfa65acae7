//! How the pool opens a connection: each server of the URL in turn, each bounded as a
//! whole, and every connection watched for a server that stops replying.
//!
//! tokio-postgres's own connect bounds only the TCP connect with `connect_timeout`: a
//! server that accepts the connection and then says nothing (a frozen process, whose
//! kernel still completes the handshake; a proxy or a network that swallows what follows)
//! holds the startup for ever, and the servers after it in the URL are never asked. Here
//! the TCP connect, the startup and the read-write check together get `connect_timeout`
//! per server. The server that last gave a writable session is asked first, so that once
//! the standby was promoted, new connections do not each wait on the old primary first;
//! and the next server is asked as well once the one before it stayed silent for
//! [`STAGGER`], so that the first connection after a promotion (or one whose caller gives
//! up after a couple of seconds, as a readiness probe does) does not wait a whole connect
//! timeout on the old primary.
//!
//! A connection in use has the same problem: a request sent to a server that went silent
//! waits for ever, since its kernel (or the proxy's) acknowledges every byte and TCP's own
//! bounds never fire. [`Watched`] fails the connection when a request waited longer than
//! the reply timeout (the server's statement timeout and a margin: a server that cancels a
//! statement answers, so such a silence means it is gone); its caller sees a closed
//! connection, which every caller treats as transient, and the pool drops it.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant as StdInstant};

use deadpool_postgres::Connect;
use futures_util::future::BoxFuture;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpStream, UnixStream};
use tokio::time::Sleep;
use tokio_postgres::config::{Host, LoadBalanceHosts, TargetSessionAttrs};
use tokio_postgres::{Client, Config, Error, NoTls};

/// The pool's connector (see the module's documentation).
pub(crate) struct FailoverConnect {
    /// Watch connections with this reply bound; `None` leaves them unwatched.
    pub reply_timeout: Option<Duration>,
    /// The server of the URL that last gave a session of the kind asked for.
    pub preferred: Arc<AtomicUsize>,
    /// When some connection of the pool last found its server silent (a reply or a health
    /// check that timed out): every connection opened before then is suspect.
    pub silent_since: Silence,
}

/// When a connection of the pool last found its server silent.
pub(crate) type Silence = Arc<Mutex<Option<StdInstant>>>;

/// Records that a server was found silent now.
pub(crate) fn heard_silence(silence: &Silence) {
    *silence.lock().unwrap_or_else(|e| e.into_inner()) = Some(StdInstant::now());
}

/// How long the connector waits on one server before it asks the next one as well: a
/// healthy server finishes a startup in milliseconds, so a server still silent after this
/// long is most likely gone (it keeps its whole connect timeout, in case it is only slow).
const STAGGER: Duration = Duration::from_secs(1);

type Attempt<'a> = Pin<Box<dyn Future<Output = (usize, Result<Connected, Error>)> + Send + 'a>>;
type Connected = (Client, tokio::task::JoinHandle<()>);

impl Connect for FailoverConnect {
    fn connect(&self, config: &Config) -> BoxFuture<'_, Result<Connected, Error>> {
        let config = config.clone();
        Box::pin(async move {
            let servers = config.get_hosts().len().max(1);
            let start = match config.get_load_balance_hosts() {
                LoadBalanceHosts::Disable => self.preferred.load(Ordering::Relaxed),
                // A random first server, as the URL asked (the preference left aside).
                _ => std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.subsec_nanos() as usize),
            };
            let order: Vec<usize> = (0..servers).map(|k| (start + k) % servers).collect();
            let bound = config
                .get_connect_timeout()
                .copied()
                .unwrap_or(crate::session_defaults::CONNECT_TIMEOUT);
            let attempt = |i: usize| -> Attempt<'_> {
                let config = &config;
                Box::pin(async move {
                    let result = match tokio::time::timeout(bound, self.connect_to(config, i)).await
                    {
                        Ok(result) => result,
                        Err(_) => {
                            tracing::warn!(
                                server = i,
                                "postgres server did not finish a new connection in time"
                            );
                            Err(Error::__private_api_timeout())
                        }
                    };
                    (i, result)
                })
            };
            // Servers in order from the preferred one, each started once the one before it
            // failed or stayed silent for STAGGER; the first session of the kind asked wins.
            let mut pending = futures_util::stream::FuturesUnordered::new();
            let mut next = 0;
            let mut last_error = None;
            loop {
                if pending.is_empty() {
                    let Some(&i) = order.get(next) else {
                        return Err(last_error.unwrap_or_else(Error::__private_api_timeout));
                    };
                    pending.push(attempt(i));
                    next += 1;
                }
                tokio::select! {
                    Some((i, result)) = futures_util::StreamExt::next(&mut pending) => match result {
                        Ok(connected) => {
                            self.preferred.store(i, Ordering::Relaxed);
                            return Ok(connected);
                        }
                        Err(e) => {
                            // The next connection starts with the next server.
                            let _ = self.preferred.compare_exchange(
                                i,
                                (i + 1) % servers,
                                Ordering::Relaxed,
                                Ordering::Relaxed,
                            );
                            last_error = Some(e);
                        }
                    },
                    _ = tokio::time::sleep(STAGGER), if next < order.len() => {
                        pending.push(attempt(order[next]));
                        next += 1;
                    }
                }
            }
        })
    }
}

impl FailoverConnect {
    /// A session on server `i` of the URL, checked as `target_session_attrs` asks.
    async fn connect_to(
        &self,
        config: &Config,
        i: usize,
    ) -> Result<(Client, tokio::task::JoinHandle<()>), Error> {
        let port = match config.get_ports() {
            [] => 5432,
            [one] => *one,
            ports => ports.get(i).copied().unwrap_or(5432),
        };
        let host = config.get_hosts().get(i);
        let hostaddr = config.get_hostaddrs().get(i);
        let (client, task) = match (host, hostaddr) {
            (Some(Host::Unix(dir)), _) => {
                match UnixStream::connect(dir.join(format!(".s.PGSQL.{port}"))).await {
                    Ok(stream) => self.start(config, stream).await?,
                    Err(e) => return Err(io_error(config, e).await),
                }
            }
            (_, Some(addr)) => {
                let stream = self.tcp(config, &[(*addr, port).into()]).await?;
                self.start(config, stream).await?
            }
            (Some(Host::Tcp(name)), None) => {
                let addrs: Vec<std::net::SocketAddr> =
                    match tokio::net::lookup_host((name.as_str(), port)).await {
                        Ok(addrs) => addrs.collect(),
                        Err(e) => return Err(io_error(config, e).await),
                    };
                let stream = self.tcp(config, &addrs).await?;
                self.start(config, stream).await?
            }
            (None, None) => {
                let stream = self.tcp(config, &[([127, 0, 0, 1], port).into()]).await?;
                self.start(config, stream).await?
            }
        };
        if config.get_target_session_attrs() != TargetSessionAttrs::Any {
            // One round trip that fails, with the server's own error, where the session is
            // not of the kind asked for (a standby refuses read-write sessions).
            let want_writes = config.get_target_session_attrs() == TargetSessionAttrs::ReadWrite;
            let check = if want_writes {
                "DO $$BEGIN IF current_setting('transaction_read_only') = 'on' THEN RAISE EXCEPTION USING ERRCODE = 'read_only_sql_transaction', MESSAGE = 'this server does not accept writes (target_session_attrs=read-write)'; END IF; END$$"
            } else {
                "DO $$BEGIN IF current_setting('transaction_read_only') = 'off' THEN RAISE EXCEPTION USING ERRCODE = 'read_only_sql_transaction', MESSAGE = 'this server accepts writes (target_session_attrs=read-only)'; END IF; END$$"
            };
            if let Err(e) = client.batch_execute(check).await {
                task.abort();
                return Err(e);
            }
        }
        Ok((client, task))
    }

    /// The first of `addrs` that accepts a TCP connection, with the URL's keepalives and
    /// `tcp_user_timeout` set on it.
    async fn tcp(
        &self,
        config: &Config,
        addrs: &[std::net::SocketAddr],
    ) -> Result<TcpStream, Error> {
        let mut last = None;
        for addr in addrs {
            match TcpStream::connect(addr).await {
                Ok(stream) => {
                    let _ = stream.set_nodelay(true);
                    let socket = socket2::SockRef::from(&stream);
                    if config.get_keepalives() {
                        let mut keepalive =
                            socket2::TcpKeepalive::new().with_time(config.get_keepalives_idle());
                        if let Some(interval) = config.get_keepalives_interval() {
                            keepalive = keepalive.with_interval(interval);
                        }
                        if let Some(retries) = config.get_keepalives_retries() {
                            keepalive = keepalive.with_retries(retries);
                        }
                        let _ = socket.set_tcp_keepalive(&keepalive);
                    }
                    if let Some(timeout) = config.get_tcp_user_timeout() {
                        let _ = socket.set_tcp_user_timeout(Some(*timeout));
                    }
                    return Ok(stream);
                }
                Err(e) => last = Some(e),
            }
        }
        let e = last.unwrap_or_else(|| std::io::Error::other("the host has no address"));
        Err(io_error(config, e).await)
    }

    /// The startup on `stream`, its connection task spawned.
    async fn start<S>(
        &self,
        config: &Config,
        stream: S,
    ) -> Result<(Client, tokio::task::JoinHandle<()>), Error>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let watched = Watched::new(stream, self.reply_timeout, self.silent_since.clone());
        let (client, connection) = config.connect_raw(watched, NoTls).await?;
        let task = tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::warn!(error = %e, "postgres connection ended");
            }
        });
        Ok((client, task))
    }
}

/// A stream that fails its reads once a request it carried waited longer than its reply
/// timeout without a byte in answer (see the module's documentation). Bytes read clear the
/// wait; the next write starts another.
pub(crate) struct Watched<S> {
    inner: S,
    reply_timeout: Option<Duration>,
    /// Armed while a request awaits its first byte of reply.
    waiting: Option<Pin<Box<Sleep>>>,
    silent_since: Silence,
}

impl<S> Watched<S> {
    fn new(inner: S, reply_timeout: Option<Duration>, silent_since: Silence) -> Self {
        Watched {
            inner,
            reply_timeout,
            waiting: None,
            silent_since,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        match Pin::new(&mut self.inner).poll_read(cx, buf) {
            Poll::Ready(result) => {
                if buf.filled().len() > before {
                    self.waiting = None;
                }
                Poll::Ready(result)
            }
            Poll::Pending => {
                let Some(waiting) = self.waiting.as_mut() else {
                    return Poll::Pending;
                };
                if waiting.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                heard_silence(&self.silent_since);
                Poll::Ready(Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "the postgres server sent no reply within the reply timeout",
                )))
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let written = Pin::new(&mut self.inner).poll_write(cx, data);
        if let (Poll::Ready(Ok(n)), None, Some(timeout)) =
            (&written, &self.waiting, self.reply_timeout)
        {
            if *n > 0 {
                let mut sleep = Box::pin(tokio::time::sleep(timeout));
                // Registered with the connection's task now: its read may already have
                // been polled in this round, and nothing else would wake it.
                let _ = sleep.as_mut().poll(cx);
                self.waiting = Some(sleep);
            }
        }
        written
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// `e` as tokio-postgres reports an I/O error (`error communicating with the server: …`),
/// so that a refused connection is logged as what it is. tokio-postgres makes such errors
/// only itself: a startup on a stream that fails with `e` has it make one.
async fn io_error(config: &Config, e: std::io::Error) -> Error {
    let failed = Failed(Some(e));
    match config.connect_raw(failed, NoTls).await {
        Err(error) => error,
        Ok(_) => Error::__private_api_timeout(),
    }
}

/// A stream whose first read or write fails with its error (then every one, as closed).
struct Failed(Option<std::io::Error>);

impl Failed {
    fn error(&mut self) -> std::io::Error {
        self.0
            .take()
            .unwrap_or_else(|| std::io::ErrorKind::NotConnected.into())
    }
}

impl AsyncRead for Failed {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        _: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Poll::Ready(Err(self.error()))
    }
}

impl AsyncWrite for Failed {
    fn poll_write(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        _: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Poll::Ready(Err(self.error()))
    }

    fn poll_flush(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Err(self.error()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
