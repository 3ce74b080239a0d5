//! TLS for the gateway (REQ-014-169): with `gateway.tls.cert_path` and `key_path` set,
//! the one listener speaks only HTTPS/WSS — the WebSocket on `wss://HOST:PORT/` and
//! `/health`, `/ready`, `/metrics`, `/console` over `https://`.
//!
//! ```yaml
//! gateway:
//!   tls:
//!     cert_path: /etc/orchestrata/tls/gateway.crt   # PEM, leaf first, then intermediates
//!     key_path: /etc/orchestrata/tls/gateway.key    # PEM: PKCS#8, PKCS#1 (RSA) or SEC1 (EC)
//! ```
//!
//! Both files are read once at start; an unreadable file or one without the expected
//! PEM block stops the start with an error naming the key and the file. Handshakes run
//! off the accept loop (at most [`MAX_HANDSHAKES`] at once, each within
//! [`HANDSHAKE_TIMEOUT`]), so a client that opens a socket and says nothing — or speaks
//! plain `ws://` to the TLS port — cannot hold up anyone else; it is dropped.

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::serve::Listener;
use serde::Deserialize;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Semaphore};
use tokio_rustls::rustls::pki_types::pem::{self, PemObject};
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{self, ServerConfig};
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

use super::config::GatewayConfigError;

/// Handshakes in progress at once; further connections wait in the kernel's backlog.
pub const MAX_HANDSHAKES: usize = 256;

/// A client must finish the TLS handshake within this long or is dropped.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the gateway's certificate chain and private key are (both PEM files).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsConfig {
    /// The certificate chain, leaf first.
    pub cert_path: PathBuf,
    /// The private key of the leaf certificate.
    pub key_path: PathBuf,
}

impl TlsConfig {
    /// TLS with the chain in `cert_path` and the key in `key_path`.
    pub fn new(cert_path: impl Into<PathBuf>, key_path: impl Into<PathBuf>) -> Self {
        TlsConfig {
            cert_path: cert_path.into(),
            key_path: key_path.into(),
        }
    }
}

/// The `gateway.tls` section as written: `enabled` (optional, as in the spec's
/// monolithic.yaml), `cert_path`, `key_path`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileTls {
    enabled: Option<bool>,
    cert_path: Option<PathBuf>,
    key_path: Option<PathBuf>,
}

impl FileTls {
    /// `None` (plain ws://) when `enabled: false` or neither path is set; an error when
    /// only one path is set or `enabled: true` lacks a path.
    pub(crate) fn resolve(self) -> Result<Option<TlsConfig>, GatewayConfigError> {
        let blank = |p: Option<PathBuf>| p.filter(|p| !p.as_os_str().is_empty());
        let (cert, key) = (blank(self.cert_path), blank(self.key_path));
        if self.enabled == Some(false)
            || (self.enabled.is_none() && cert.is_none() && key.is_none())
        {
            return Ok(None);
        }
        let missing = |field: &str| GatewayConfigError::Invalid {
            field: format!("gateway.tls.{field}"),
            reason: "required for TLS (set both cert_path and key_path, or remove `tls`)".into(),
        };
        match (cert, key) {
            (Some(cert), Some(key)) => Ok(Some(TlsConfig::new(cert, key))),
            (None, _) => Err(missing("cert_path")),
            (Some(_), None) => Err(missing("key_path")),
        }
    }
}

/// Why the TLS files cannot serve.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file is missing, unreadable, or has no usable PEM block.
    #[error("gateway.tls.{key} {}: {reason}", path.display())]
    File {
        /// `cert_path` or `key_path`.
        key: &'static str,
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// Both files read, but rustls refuses the pair (e.g. the key does not belong to
    /// the certificate, or an unsupported key type).
    #[error("gateway.tls: certificate {} with key {}: {reason}", cert.display(), key.display())]
    Pair {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
        /// Why rustls refused them.
        reason: String,
    },
}

fn file_error(key: &'static str, path: &Path, e: pem::Error) -> TlsError {
    let reason = match e {
        pem::Error::Io(io) => format!("cannot read: {io}"),
        pem::Error::NoItemsFound if key == "cert_path" => {
            "no `BEGIN CERTIFICATE` PEM block found".into()
        }
        pem::Error::NoItemsFound => {
            "no private key PEM block found (expected PKCS#8, PKCS#1 or SEC1)".into()
        }
        other => format!("not valid PEM: {other}"),
    };
    TlsError::File {
        key,
        path: path.to_owned(),
        reason,
    }
}

/// Reads the chain and key of `config` into an acceptor (TLS 1.2 and 1.3, ALPN
/// `http/1.1`, which WebSocket upgrades need).
pub fn acceptor(config: &TlsConfig) -> Result<TlsAcceptor, TlsError> {
    let cert = |e| file_error("cert_path", &config.cert_path, e);
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&config.cert_path)
        .map_err(cert)?
        .collect::<Result<_, _>>()
        .map_err(cert)?;
    if chain.is_empty() {
        return Err(cert(pem::Error::NoItemsFound));
    }
    let key = PrivateKeyDer::from_pem_file(&config.key_path)
        .map_err(|e| file_error("key_path", &config.key_path, e))?;
    let pair = |e: rustls::Error| TlsError::Pair {
        cert: config.cert_path.clone(),
        key: config.key_path.clone(),
        reason: e.to_string(),
    };
    // The provider is named rather than taken from the process default: several crates
    // here enable rustls features, and with more than one backend compiled in there is
    // no implicit default.
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut server = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(pair)?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(pair)?;
    server.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(server)))
}

/// A listener that hands axum only connections whose TLS handshake has completed.
///
/// A background task accepts TCP connections and runs each handshake in its own task;
/// finished ones queue here. Dropping the listener (axum does at shutdown) ends the
/// task and closes the socket.
pub struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
}

impl TlsListener {
    /// Serves TLS on `tcp` (bound to `local`) with `acceptor`.
    pub fn new(tcp: TcpListener, local: SocketAddr, acceptor: TlsAcceptor) -> Self {
        let (tx, ready) = mpsc::channel(64);
        tokio::spawn(accept_loop(tcp, acceptor, tx));
        TlsListener { ready, local }
    }
}

type Ready = mpsc::Sender<(TlsStream<TcpStream>, SocketAddr)>;

async fn accept_loop(tcp: TcpListener, acceptor: TlsAcceptor, tx: Ready) {
    let permits = Arc::new(Semaphore::new(MAX_HANDSHAKES));
    loop {
        let permit = tokio::select! {
            _ = tx.closed() => return,
            p = permits.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => return,
            },
        };
        let (stream, remote) = tokio::select! {
            _ = tx.closed() => return,
            accepted = tcp.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    accept_failed(e).await;
                    continue;
                }
            },
        };
        let (acceptor, tx) = (acceptor.clone(), tx.clone());
        tokio::spawn(async move {
            let _permit = permit;
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                Ok(Ok(tls)) => {
                    // Only fails when the server is shutting down.
                    let _ = tx.send((tls, remote)).await;
                }
                Ok(Err(e)) => tracing::info!(%remote, error = %e, "TLS handshake failed"),
                Err(_) => tracing::info!(%remote, "TLS handshake timed out"),
            }
        });
    }
}

/// Per-connection failures (reset before accept) are skipped; others (out of file
/// descriptors) are logged and retried after a pause, as axum's own listener does.
async fn accept_failed(e: io::Error) {
    use io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        e.kind(),
        ConnectionRefused | ConnectionAborted | ConnectionReset
    ) {
        return;
    }
    tracing::error!(error = %e, "gateway accept failed; retrying in 1 s");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

impl Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(ready) => ready,
            // The accept task only ends once this listener is gone; never reached.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        Ok(self.local)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(yaml: &str) -> FileTls {
        serde_yaml_ng::from_str(yaml).expect("yaml")
    }

    // REQ-014-169
    #[test]
    fn tls_section_needs_both_paths_unless_disabled() {
        assert_eq!(file("{}").resolve().expect("ok"), None);
        assert_eq!(
            file("{enabled: false, cert_path: a.crt}")
                .resolve()
                .expect("ok"),
            None
        );
        assert_eq!(
            file("{cert_path: a.crt, key_path: a.key}")
                .resolve()
                .expect("ok"),
            Some(TlsConfig::new("a.crt", "a.key"))
        );
        let e = file("{cert_path: a.crt}").resolve().expect_err("no key");
        assert!(e.to_string().contains("gateway.tls.key_path"), "{e}");
        let e = file("{enabled: true}").resolve().expect_err("no cert");
        assert!(e.to_string().contains("gateway.tls.cert_path"), "{e}");
    }

    // REQ-014-169
    #[test]
    fn unreadable_or_non_pem_files_name_the_key_and_file() {
        let dir = tempfile::tempdir().expect("dir");
        let garbage = dir.path().join("garbage.pem");
        std::fs::write(&garbage, "hello, not a certificate\n").expect("write");
        let missing = dir.path().join("missing.crt");
        let Err(e) = acceptor(&TlsConfig::new(&missing, &garbage)) else {
            panic!("a missing certificate file must fail");
        };
        let text = e.to_string();
        assert!(text.starts_with("gateway.tls.cert_path"), "{text}");
        assert!(
            text.contains("missing.crt") && text.contains("cannot read"),
            "{text}"
        );
        let Err(e) = acceptor(&TlsConfig::new(&garbage, &garbage)) else {
            panic!("a file without PEM must fail");
        };
        let text = e.to_string();
        assert!(
            text.contains("garbage.pem") && text.contains("BEGIN CERTIFICATE"),
            "{text}"
        );
    }
}
