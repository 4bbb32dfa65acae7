//! A TCP proxy of the test's own in front of a server, which can go silent: after
//! [`SilentProxy::swallow`] it forwards nothing in either direction and answers nothing,
//! yet closes no socket and keeps accepting connections, as a network that drops every
//! packet (a partition, a black-holed address) looks to a client whose kernel still sees
//! its connections open. [`SilentProxy::close`] then closes everything, as the fencing of
//! the server behind it would. Dropping the proxy closes everything too.

use std::sync::{Arc, Mutex};

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Forwarding,
    Swallowing,
    Closed,
}

pub struct SilentProxy {
    port: u16,
    mode: watch::Sender<Mode>,
    tasks: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl SilentProxy {
    /// Listens on a port of 127.0.0.1 outside the ephemeral range ([`crate::fixed_port`])
    /// and forwards every connection to `127.0.0.1:target`.
    pub async fn start(target: u16) -> SilentProxy {
        let port = crate::fixed_port();
        let listener = TcpListener::bind(("127.0.0.1", port))
            .await
            .expect("the proxy's port");
        let (mode, watching) = watch::channel(Mode::Forwarding);
        let tasks: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let accepting = {
            let tasks = tasks.clone();
            let mut watching = watching.clone();
            tokio::spawn(async move {
                loop {
                    let accepted = tokio::select! {
                        accepted = listener.accept() => accepted,
                        _ = watching.wait_for(|m| *m == Mode::Closed) => return,
                    };
                    let Ok((client, _)) = accepted else { continue };
                    let task = tokio::spawn(carry(client, target, watching.clone()));
                    tasks.lock().unwrap().push(task);
                }
            })
        };
        tasks.lock().unwrap().push(accepting);
        SilentProxy { port, mode, tasks }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// From now on nothing goes through and nothing is closed.
    pub fn swallow(&self) {
        self.mode.send_replace(Mode::Swallowing);
    }

    /// Closes the listener and every connection.
    pub fn close(&self) {
        self.mode.send_replace(Mode::Closed);
        for task in self.tasks.lock().unwrap().drain(..) {
            task.abort();
        }
    }
}

impl Drop for SilentProxy {
    fn drop(&mut self) {
        self.close();
    }
}

/// One client's connection: forwarded to the target while the proxy forwards, then held
/// open with nothing read or written until the proxy closes.
async fn carry(mut client: TcpStream, target: u16, mut mode: watch::Receiver<Mode>) {
    let held = if *mode.borrow() == Mode::Forwarding {
        match TcpStream::connect(("127.0.0.1", target)).await {
            Ok(mut server) => {
                tokio::select! {
                    // Either side closed: so does the other (dropped here).
                    _ = tokio::io::copy_bidirectional(&mut client, &mut server) => return,
                    _ = mode.wait_for(|m| *m != Mode::Forwarding) => Some(server),
                }
            }
            Err(_) => return,
        }
    } else {
        None
    };
    let _ = mode.wait_for(|m| *m == Mode::Closed).await;
    drop((client, held));
}
