//! The traffic phase of one bridged connection, and how it ends.
//!
//! FalkorDB 4.16 can crash (SIGSEGV, "stack smashing detected") when a Bolt client goes
//! away while one of its requests is still being processed (FalkorDB/FalkorDB#897: a
//! client that times out and drops its connection). Orchestrata's driver does exactly
//! that when `knowledge.query` times out, and the tests drop whole bridges to simulate
//! an outage. So the bridge never closes its upstream side abruptly: when the client
//! side ends (closed, reset, `GOODBYE`, or the bridge stopped), it stops forwarding
//! requests, closes the client's socket at once, keeps reading upstream until every
//! request already sent there is answered, then closes. The client sees what it would
//! see from a real server that went away; the server sees a client that waited for its
//! answers.
//!
//! The bridge never sends `GOODBYE` upstream, not even the client's: after a `GOODBYE`,
//! FalkorDB 4.16.3's Bolt listener stops completing handshakes (the next connection
//! hangs until it is closed), so a connection simply ends once it is drained.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch, Notify};

use super::{packstream, write_message};
use super::{protocol, read_message, request_upstream, server_message_to_bolt4, tag};

/// How many upstream connections are still open, so a test can wait until the server
/// has answered everything it was asked (see [`Upstream::settled`]).
#[derive(Default)]
pub struct Upstream {
    open: AtomicUsize,
    changed: Notify,
}

/// One open upstream connection; closing it (drop) is counted.
pub struct Open(Arc<Upstream>);

impl Upstream {
    /// Counts one more open upstream connection until the returned guard drops.
    pub fn open(self: &Arc<Self>) -> Open {
        self.open.fetch_add(1, Ordering::SeqCst);
        Open(self.clone())
    }

    /// Waits until every upstream connection has ended (at most `bound`; a server that
    /// never answers a request it was sent would otherwise hold the test forever).
    /// Whether it settled.
    pub async fn settled(&self, bound: Duration) -> bool {
        let wait = async {
            loop {
                let changed = self.changed.notified();
                if self.open.load(Ordering::SeqCst) == 0 {
                    return;
                }
                changed.await;
            }
        };
        tokio::time::timeout(bound, wait).await.is_ok()
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::SeqCst);
        self.0.changed.notify_waiters();
    }
}

/// Pumps messages both ways until the client side ends (or `stop` turns true), then
/// drains upstream and closes it (see the module docs). Errors only when the
/// server misbehaves or goes away with requests unanswered.
pub async fn pump(
    client: TcpStream,
    server: TcpStream,
    mut stop: watch::Receiver<bool>,
    trace: bool,
) -> io::Result<()> {
    let (mut client_rx, client_tx) = client.into_split();
    let (mut server_rx, mut server_tx) = server.into_split();
    // Answers come in request order; the answer side learns from this queue which
    // request each summary ends (DISCARD's records are dropped, see `request_upstream`).
    let (pending_tx, mut pending_rx) = mpsc::unbounded_channel::<bool>();
    let (gone_tx, mut gone) = watch::channel(false);
    let requests = async move {
        loop {
            let message = tokio::select! {
                m = read_message(&mut client_rx) => match m {
                    Ok(Some(m)) => m,
                    _ => break,
                },
                _ = stop.wait_for(|s| *s) => break,
            };
            if trace {
                eprintln!("bolt bridge: -> {:?}", packstream::decode(&message));
            }
            let (message, discard) = request_upstream(message);
            if message.get(1) == Some(&tag::GOODBYE) {
                break; // not forwarded: see the module docs
            }
            if pending_tx.send(discard).is_err()
                || write_message(&mut server_tx, &message).await.is_err()
            {
                break;
            }
        }
        let _ = gone_tx.send(true);
        server_tx
    };
    let answers = async move {
        let mut client_tx = Some(client_tx);
        loop {
            // The next request to answer; none left once the client side is over.
            let discard = tokio::select! {
                d = pending_rx.recv() => match d {
                    Some(d) => d,
                    None => return Ok(()),
                },
                _ = gone.wait_for(|g| *g), if client_tx.is_some() => {
                    client_tx = None; // the client's socket closes now
                    continue;
                }
            };
            loop {
                let message = tokio::select! {
                    m = read_message(&mut server_rx) => m?
                        .ok_or_else(|| protocol("the server closed with a request unanswered"))?,
                    _ = gone.wait_for(|g| *g), if client_tx.is_some() => {
                        client_tx = None;
                        continue;
                    }
                };
                if trace {
                    eprintln!("bolt bridge: <- {:?}", packstream::decode(&message));
                }
                let summary = message.get(1) != Some(&tag::RECORD);
                if let Some(tx) = client_tx.as_mut() {
                    if summary || !discard {
                        let message = server_message_to_bolt4(message)
                            .map_err(|e| protocol(e.to_string()))?;
                        if write_message(tx, &message).await.is_err() {
                            client_tx = None;
                        }
                    }
                }
                if summary {
                    break; // a summary ends the request
                }
            }
        }
    };
    tokio::pin!(requests);
    tokio::pin!(answers);
    let mut server_tx = tokio::select! {
        tx = &mut requests => tx,
        // The server ended first: nothing of ours is left running there.
        r = &mut answers => return r,
    };
    answers.await?;
    server_tx.shutdown().await
}
