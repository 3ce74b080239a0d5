//! A Bolt 4 ⇄ Bolt 5 bridge for the test harness, so that the real driver (neo4rs 0.8,
//! which proposes only Bolt 4.1 and 4.0) runs its real statements on a real Cypher
//! engine (FalkorDB, whose Bolt port answers only Bolt 5 proposals). It is test
//! equipment, not product: production talks to Neo4j 5, which speaks both.
//!
//! Per client connection the bridge:
//! 1. **Handshake.** Reads the client's four proposals and answers the highest Bolt 4
//!    version among them ([`choose_bolt4`]); proposes 5.4 down to 5.0 upstream and
//!    accepts whatever 5.x the server picks.
//! 2. **Authentication.** Bolt 4 authenticates in `HELLO` (`scheme`, `principal`,
//!    `credentials` next to `user_agent`); Bolt 5.1+ splits it into `HELLO`
//!    (`user_agent`, `bolt_agent`) and `LOGON` ([`upstream_hello`], [`upstream_logon`]).
//!    An empty password sends no `credentials` key (FalkorDB's passwordless default
//!    user refuses empty credentials). The client gets the upstream `HELLO`'s
//!    `SUCCESS` (or the first `FAILURE`).
//! 3. **Traffic.** Client messages (`BEGIN`, `RUN`, `PULL`, `COMMIT`, `ROLLBACK`,
//!    `RESET`) are the same in both versions and pass through byte for byte, but
//!    `DISCARD`, which FalkorDB mishandles ([`request_upstream`]), and `GOODBYE`, which
//!    is not forwarded (FalkorDB mishandles it too: see `pump`).
//!    Server `RECORD`s are decoded and their graph structures rewritten to the Bolt 4
//!    shapes ([`to_bolt4`]): Bolt 5 appends element ids to `Node` (4 fields → 3),
//!    `Relationship` (8 → 5) and `UnboundRelationship` (4 → 3). Other server messages
//!    pass through.
//!
//! `BOLT_BRIDGE_TRACE=1` prints every message both ways (decoded) to stderr.
//!
//! Not translated (nothing in the tests returns them): Bolt 5's UTC `DateTime` (`0x49`,
//! `0x69`) versus Bolt 4's legacy local-time structures.

pub mod packstream;
mod pump;
#[cfg(test)]
mod tests;

use std::io;
use std::net::SocketAddr;

use packstream::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use pump::Upstream;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Bolt's handshake preamble.
pub const MAGIC: [u8; 4] = [0x60, 0x60, 0xB0, 0x17];
/// Proposed upstream: 5.4 with a range of 4 (5.4, 5.3, 5.2, 5.1, 5.0).
pub const UPSTREAM_PROPOSAL: [u8; 4] = [0x00, 0x04, 0x04, 0x05];

/// Message tags (the structure tag of a message).
pub mod tag {
    /// Client `HELLO`.
    pub const HELLO: u8 = 0x01;
    /// Client `LOGON` (Bolt 5.1+).
    pub const LOGON: u8 = 0x6A;
    /// Client `GOODBYE` (unanswered).
    pub const GOODBYE: u8 = 0x02;
    /// Client `DISCARD`.
    pub const DISCARD: u8 = 0x2F;
    /// Client `PULL`.
    pub const PULL: u8 = 0x3F;
    /// Server `SUCCESS`.
    pub const SUCCESS: u8 = 0x70;
    /// Server `RECORD`.
    pub const RECORD: u8 = 0x71;
    /// `Node` structure.
    pub const NODE: u8 = 0x4E;
    /// `Relationship` structure.
    pub const RELATIONSHIP: u8 = 0x52;
    /// `UnboundRelationship` structure (inside a `Path`).
    pub const UNBOUND: u8 = 0x72;
}

/// A running bridge. Dropping it stops listening and closes every client connection at
/// once (an outage, as the driver sees it); upstream, each connection first gets the
/// answers to what it already asked and is then closed (see `pump`). [`close`]
/// does the same and waits for upstream to settle.
///
/// [`close`]: BoltBridge::close
pub struct BoltBridge {
    /// Where neo4rs connects.
    pub address: SocketAddr,
    task: JoinHandle<()>,
    stop: watch::Sender<bool>,
    upstream: Arc<Upstream>,
}

impl BoltBridge {
    /// Listens on a free loopback port and bridges every connection to the Bolt 5
    /// server at `upstream` (`host:port`). An unreachable upstream closes the client's
    /// connection, as an unreachable server would.
    pub async fn start(upstream: String) -> io::Result<BoltBridge> {
        BoltBridge::start_at(upstream, SocketAddr::from(([127, 0, 0, 1], 0))).await
    }

    /// The same, listening on `address` (e.g. where a stopped bridge listened).
    pub async fn start_at(upstream: String, address: SocketAddr) -> io::Result<BoltBridge> {
        let listener = TcpListener::bind(address).await?;
        let address = listener.local_addr()?;
        let (stop, stopped) = watch::channel(false);
        let open = Arc::new(Upstream::default());
        let ledger = open.clone();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let (upstream, stop, ledger) = (upstream.clone(), stopped.clone(), ledger.clone());
                // Detached: a connection outlives the accept loop until upstream is drained.
                tokio::spawn(async move {
                    if let Err(e) = bridge(client, &upstream, stop, &ledger).await {
                        eprintln!("bolt bridge: connection ended: {e}");
                    }
                });
            }
        });
        Ok(BoltBridge {
            address,
            task,
            stop,
            upstream: open,
        })
    }

    /// `bolt://127.0.0.1:PORT`, for `gateway.neo4j.uri`.
    pub fn uri(&self) -> String {
        format!("bolt://{}", self.address)
    }

    /// Stops the bridge and waits (up to a minute) until every upstream connection has
    /// been answered and closed, so the server is left with nothing in flight
    /// when the test (and its runtime) ends.
    pub async fn close(self) {
        let upstream = self.upstream.clone();
        drop(self);
        if !upstream.settled(Duration::from_secs(60)).await {
            eprintln!("bolt bridge: upstream still busy a minute after close");
        }
    }
}

impl Drop for BoltBridge {
    fn drop(&mut self) {
        self.task.abort();
        let _ = self.stop.send(true);
    }
}

fn protocol(reason: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, reason.into())
}

/// The highest Bolt 4 version among four handshake proposals (`[_, range, minor,
/// major]` each; a proposal covers `minor - range ..= minor`), as `(4, minor)`.
pub fn choose_bolt4(proposals: &[u8; 16]) -> Option<(u8, u8)> {
    proposals
        .chunks_exact(4)
        .filter(|p| p[3] == 4)
        .map(|p| p[2])
        .max()
        .map(|minor| (4, minor))
}

/// The upstream `HELLO` for a Bolt 4 client's `HELLO` fields: its `user_agent`, a
/// `bolt_agent` (required from 5.3), and, for Bolt 5.0 only, the authentication.
pub fn upstream_hello(client: &Value, upstream_minor: u8) -> Value {
    let user_agent = client
        .get("user_agent")
        .cloned()
        .unwrap_or_else(|| Value::text("neo4rs"));
    let mut extra = vec![
        ("user_agent".to_owned(), user_agent),
        (
            "bolt_agent".to_owned(),
            Value::map([("product", Value::text("orchestrata-test-bolt-bridge/1"))]),
        ),
    ];
    if upstream_minor == 0 {
        if let Value::Map(auth) = auth_of(client) {
            extra.extend(auth);
        }
    }
    Value::Struct(tag::HELLO, vec![Value::Map(extra)])
}

/// The `LOGON` (Bolt 5.1+) carrying a Bolt 4 `HELLO`'s authentication.
pub fn upstream_logon(client: &Value) -> Value {
    Value::Struct(tag::LOGON, vec![auth_of(client)])
}

/// `scheme`, `principal` and, when not empty, `credentials` of a client's `HELLO`.
fn auth_of(client: &Value) -> Value {
    let mut auth = vec![(
        "scheme".to_owned(),
        client
            .get("scheme")
            .cloned()
            .unwrap_or_else(|| Value::text("basic")),
    )];
    if let Some(p) = client.get("principal") {
        auth.push(("principal".to_owned(), p.clone()));
    }
    match client.get("credentials") {
        Some(Value::String(c)) if c.is_empty() => {}
        Some(c) => auth.push(("credentials".to_owned(), c.clone())),
        None => {}
    }
    Value::Map(auth)
}

/// A Bolt 5 value in its Bolt 4 shape: element ids dropped from nodes and
/// relationships, at any depth (lists, maps, paths).
pub fn to_bolt4(value: Value) -> Value {
    match value {
        Value::Struct(t, fields) => {
            let keep = match (t, fields.len()) {
                (tag::NODE, 4) => 3,
                (tag::RELATIONSHIP, 8) => 5,
                (tag::UNBOUND, 4) => 3,
                (_, n) => n,
            };
            Value::Struct(t, fields.into_iter().take(keep).map(to_bolt4).collect())
        }
        Value::List(items) => Value::List(items.into_iter().map(to_bolt4).collect()),
        Value::Map(pairs) => Value::Map(pairs.into_iter().map(|(k, v)| (k, to_bolt4(v))).collect()),
        other => other,
    }
}

/// A server message for a Bolt 4 client: `RECORD`s rewritten ([`to_bolt4`]), every
/// other message as it came.
pub fn server_message_to_bolt4(message: Vec<u8>) -> Result<Vec<u8>, packstream::DecodeError> {
    if message.get(1) != Some(&tag::RECORD) {
        return Ok(message);
    }
    Ok(packstream::encode(&to_bolt4(packstream::decode(&message)?)))
}

/// A client request as sent upstream, and whether it was a `DISCARD`. FalkorDB
/// answers `DISCARD` like `PULL` (records, then the summary) and then leaves the
/// transaction hanging (`COMMIT` is never answered), so the bridge sends `PULL` with
/// the same fields instead and drops the records it brings. Every other request
/// passes byte for byte (same shape in Bolt 4 and 5).
pub fn request_upstream(mut message: Vec<u8>) -> (Vec<u8>, bool) {
    let discard = message.get(1) == Some(&tag::DISCARD);
    if discard {
        message[1] = tag::PULL;
    }
    (message, discard)
}

/// Reads one chunked message (skipping Bolt's empty no-op chunks before it); `None`
/// when the peer closed between messages.
pub async fn read_message(stream: &mut (impl AsyncReadExt + Unpin)) -> io::Result<Option<Vec<u8>>> {
    let mut message = Vec::new();
    loop {
        let mut size = [0u8; 2];
        match stream.read_exact(&mut size).await {
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof && message.is_empty() => {
                return Ok(None)
            }
            other => other?,
        };
        let size = usize::from(u16::from_be_bytes(size));
        if size == 0 {
            if message.is_empty() {
                continue;
            }
            return Ok(Some(message));
        }
        let start = message.len();
        message.resize(start + size, 0);
        stream.read_exact(&mut message[start..]).await?;
    }
}

/// Writes `message` in chunks of at most 65,535 bytes and the end marker.
pub async fn write_message(
    stream: &mut (impl AsyncWriteExt + Unpin),
    message: &[u8],
) -> io::Result<()> {
    let mut framed = Vec::with_capacity(message.len() + 8);
    for chunk in message.chunks(0xFFFF) {
        framed.extend((chunk.len() as u16).to_be_bytes());
        framed.extend(chunk);
    }
    framed.extend([0, 0]);
    stream.write_all(&framed).await?;
    stream.flush().await
}

async fn expect_message(stream: &mut TcpStream, what: &str) -> io::Result<Vec<u8>> {
    read_message(stream)
        .await?
        .ok_or_else(|| protocol(format!("closed before {what}")))
}

/// One client connection: handshake both ways, authenticate, then [`pump::pump`].
async fn bridge(
    mut client: TcpStream,
    upstream: &str,
    stop: watch::Receiver<bool>,
    ledger: &Arc<Upstream>,
) -> io::Result<()> {
    let mut preamble = [0u8; 20];
    client.read_exact(&mut preamble).await?;
    if preamble[..4] != MAGIC {
        return Err(protocol("not a Bolt client (bad magic)"));
    }
    let mut proposals = [0u8; 16];
    proposals.copy_from_slice(&preamble[4..]);
    let Some((major, minor)) = choose_bolt4(&proposals) else {
        client.write_all(&[0; 4]).await?;
        return Err(protocol("the client proposed no Bolt 4 version"));
    };
    let trace = std::env::var_os("BOLT_BRIDGE_TRACE").is_some();
    if trace {
        eprintln!("bolt bridge: client proposes {proposals:?}, answering {major}.{minor}");
    }
    let mut server = TcpStream::connect(upstream).await?;
    let _open = ledger.open();
    let mut handshake = MAGIC.to_vec();
    handshake.extend(UPSTREAM_PROPOSAL);
    handshake.extend([0u8; 12]);
    server.write_all(&handshake).await?;
    let mut chosen = [0u8; 4];
    server.read_exact(&mut chosen).await?;
    if trace {
        eprintln!("bolt bridge: the server chose {chosen:?}");
    }
    if chosen[3] != 5 {
        return Err(protocol(format!("the server chose {chosen:?}, not Bolt 5")));
    }
    client.write_all(&[0, 0, minor, major]).await?;

    let hello = packstream::decode(&expect_message(&mut client, "HELLO").await?)
        .map_err(|e| protocol(e.to_string()))?;
    let fields = match &hello {
        Value::Struct(tag::HELLO, f) if f.len() == 1 => f[0].clone(),
        other => return Err(protocol(format!("expected HELLO, got {other:?}"))),
    };
    write_message(
        &mut server,
        &packstream::encode(&upstream_hello(&fields, chosen[2])),
    )
    .await?;
    let welcome = expect_message(&mut server, "HELLO's answer").await?;
    if welcome.get(1) == Some(&tag::SUCCESS) && chosen[2] >= 1 {
        write_message(&mut server, &packstream::encode(&upstream_logon(&fields))).await?;
        let logged_on = expect_message(&mut server, "LOGON's answer").await?;
        if logged_on.get(1) != Some(&tag::SUCCESS) {
            return write_message(&mut client, &logged_on).await;
        }
    }
    write_message(&mut client, &welcome).await?;

    pump::pump(client, server, stop, trace).await
}
