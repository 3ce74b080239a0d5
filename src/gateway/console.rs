//! The operator console: a static web app served at `/console` (issue 10).
//!
//! The page is plain ES modules from `console/` at the repository root, compiled into
//! the binary with `include_str!` so `orchestrata up` needs no separate web server and
//! no internet access. It speaks only the public WebSocket JSON-RPC API of this same
//! gateway (it is the API's reference client); there is no console-specific endpoint.
//!
//! Routes: `GET /console` and `GET /console/` answer `index.html`; `GET /console/<file>`
//! answers that asset with its content type; anything else under `/console/` is 404.
//! Every answer carries `Cache-Control: no-cache`, so an upgraded binary's assets are
//! picked up on the next load (the browser revalidates instead of trusting a stale copy).

use axum::extract::Path;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

/// One compiled-in asset: its file name under `console/`, content type and text.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static str,
}

macro_rules! asset {
    ($name:literal, $ctype:expr) => {
        Asset {
            name: $name,
            content_type: $ctype,
            body: include_str!(concat!("../../console/", $name)),
        }
    };
}

const JS: &str = "text/javascript; charset=utf-8";

/// Every file of the console. Adding a module to the page is adding a row here.
static ASSETS: &[Asset] = &[
    asset!("index.html", "text/html; charset=utf-8"),
    asset!("style.css", "text/css; charset=utf-8"),
    asset!("app.js", JS),
    asset!("rpc.js", JS),
    asset!("dom.js", JS),
    asset!("traffic.js", JS),
    asset!("volks.js", JS),
    asset!("governance.js", JS),
    asset!("sessions.js", JS),
    asset!("history.js", JS),
    asset!("gateway.js", JS),
];

/// The asset named `name` (a bare file name: no directories), if the console has one.
pub fn asset(name: &str) -> Option<(&'static str, &'static str)> {
    ASSETS
        .iter()
        .find(|a| a.name == name)
        .map(|a| (a.content_type, a.body))
}

/// The names of every compiled-in asset, `index.html` first.
pub fn asset_names() -> impl Iterator<Item = &'static str> {
    ASSETS.iter().map(|a| a.name)
}

fn respond(name: &str) -> Response {
    match asset(name) {
        Some((content_type, body)) => (
            StatusCode::OK,
            [
                (header::CONTENT_TYPE, content_type),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            body,
        )
            .into_response(),
        None => (
            StatusCode::NOT_FOUND,
            [
                (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            format!("no console asset `{name}`\n"),
        )
            .into_response(),
    }
}

async fn index() -> Response {
    respond("index.html")
}

/// Any path below `/console/`; only bare asset names exist, so nested paths are 404.
async fn file(Path(path): Path<String>) -> Response {
    respond(&path)
}

/// The console's routes, to merge into the gateway's router (state-free: the page
/// talks to the gateway over the WebSocket like any other client).
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/console", get(index))
        .route("/console/", get(index))
        .route("/console/{*path}", get(file))
}
