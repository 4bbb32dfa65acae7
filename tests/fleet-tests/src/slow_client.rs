//! A client that misbehaves over raw TCP (sends nothing, or a head or a body a byte at a
//! time) until the server closes the connection, to see how and when the server does.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{sleep, timeout, Instant};

/// How the server ended one slow connection.
#[derive(Debug, Clone, Copy)]
pub struct Cut {
    /// The status of the answer, if the server answered before closing.
    pub status: Option<u16>,
    /// How long the connection was open.
    pub held: Duration,
}

/// Opens a connection to `addr`, sends `opening`, then `filler` every `every` (never when
/// `None`) until the server closes the connection: how it did, or `None` when it still
/// held the connection after `guard` (so a bug fails rather than hangs).
pub async fn trickle(
    addr: &str,
    opening: &[u8],
    filler: &[u8],
    every: Option<Duration>,
    guard: Duration,
) -> Option<Cut> {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let started = Instant::now();
    let (mut reader, mut writer) = stream.split();
    writer.write_all(opening).await.expect("send the opening");
    let (mut answer, mut buf, mut writing) = (Vec::new(), [0u8; 1024], every.is_some());
    let every = every.unwrap_or(guard);
    timeout(guard, async {
        loop {
            tokio::select! {
                read = reader.read(&mut buf) => match read {
                    Ok(0) | Err(_) => return,
                    Ok(n) => answer.extend_from_slice(&buf[..n]),
                },
                () = sleep(every), if writing => {
                    writing = writer.write_all(filler).await.is_ok();
                }
            }
        }
    })
    .await
    .ok()?;
    let status = std::str::from_utf8(&answer)
        .ok()
        .and_then(|a| a.strip_prefix("HTTP/1.1 "))
        .and_then(|a| a.get(..3))
        .and_then(|s| s.parse().ok());
    Some(Cut {
        status,
        held: started.elapsed(),
    })
}
