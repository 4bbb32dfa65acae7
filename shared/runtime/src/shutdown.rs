//! The process's shutdown signal: a [`CancellationToken`] cancelled on the first SIGTERM
//! (what Kubernetes and docker send) or SIGINT (Ctrl-C). Everything that runs until
//! shutdown takes a clone (or a child) of this one token.

use tokio::signal::unix::{signal, SignalKind};
use tokio_util::sync::CancellationToken;

/// Returns a token that is cancelled when the process receives SIGTERM or SIGINT.
///
/// Must be called inside a tokio runtime. The signal handlers are installed before this
/// returns, so a signal that arrives right after is not lost (nor does it kill the process
/// with the default action). If a handler cannot be installed the token is cancelled at
/// once: a process that cannot be stopped gracefully should not start work.
pub fn shutdown_token() -> CancellationToken {
    let token = CancellationToken::new();
    let (mut term, mut int) = match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(term), Ok(int)) => (term, int),
        (Err(error), _) | (_, Err(error)) => {
            tracing::error!(%error, "cannot install signal handlers; shutting down");
            token.cancel();
            return token;
        }
    };
    let cancel = token.clone();
    tokio::spawn(async move {
        let name = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
            // Someone else cancelled the token: stop listening.
            () = cancel.cancelled() => return,
        };
        tracing::info!(signal = name, "shutdown requested");
        cancel.cancel();
    });
    token
}
