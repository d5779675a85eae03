//! The HTTP server: axum router, static files, the bounded blocking pool for git work, and
//! configuration reloads.

mod admission;
mod client;
mod metrics;
pub mod scheduler;
pub mod single_flight;
mod stream;

use crate::config::Config;
use crate::pages::{self, Site};
use crate::repos::Repos;
use crate::request::page::CostClass;
use crate::request::url;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::sync::{Arc, RwLock};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tower_http::compression::CompressionLayer;
use tower_http::compression::predicate::{DefaultPredicate, NotForContentType, Predicate};

/// Git work running at once (CPU-bound: about twice the cores); more requests wait for a permit.
const BLOCKING_PERMITS: usize = 4;
/// Streamed bodies (archives, clone files) being written at once; each holds a blocking thread.
const STREAM_PERMITS: usize = 64;

/// Shared server state: the current site (swapped on reload), the blocking-pool permits,
/// admission control and metrics.
pub struct App {
    site: RwLock<Arc<Site>>,
    permits: Semaphore,
    streams: Arc<Semaphore>,
    admission: admission::Admission,
    metrics: metrics::Metrics,
    config_path: Option<std::path::PathBuf>,
}

impl App {
    pub fn new(config: Config, config_path: Option<std::path::PathBuf>) -> Arc<App> {
        let site = Site::new(config);
        let metrics = metrics::Metrics::new(&site.fragments.stats, &site.repos.snapshot_rebuilds);
        Arc::new(App {
            site: RwLock::new(Arc::new(site)),
            permits: Semaphore::new(BLOCKING_PERMITS),
            streams: Arc::new(Semaphore::new(STREAM_PERMITS)),
            admission: admission::Admission::default(),
            metrics,
            config_path,
        })
    }

    pub fn site(&self) -> Arc<Site> {
        Arc::clone(&self.site.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// Re-reads the configuration file; on failure the old configuration stays.
    pub fn reload(&self) -> Result<(), String> {
        let Some(path) = &self.config_path else {
            return Ok(());
        };
        let config = Config::load(path)?;
        if let Some(why) = config.refusal() {
            return Err(why);
        }
        for d in &config.diagnostics {
            tracing::warn!("{d}");
        }
        let old = self.site();
        let repos = Repos::new(&config, Some(&old.repos));
        let site = Site {
            config: Arc::new(config),
            repos: Arc::new(repos),
            generation: old.generation + 1,
            fragments: Arc::clone(&old.fragments),
            walks: Arc::clone(&old.walks),
            sizes: Arc::clone(&old.sizes),
        };
        *self.site.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(site);
        Ok(())
    }
}

/// The router: every path goes through [`handle`]; responses are compressed when the client
/// accepts it, except archives and git's own files, which are compressed already.
pub fn router(app: Arc<App>) -> axum::Router {
    let compressible = DefaultPredicate::new()
        .and(NotForContentType::const_new("application/octet-stream"))
        .and(NotForContentType::const_new("application/x-"));
    axum::Router::new()
        .fallback(handle)
        .layer(CompressionLayer::new().compress_when(compressible))
        .with_state(app)
}

async fn handle(State(app): State<Arc<App>>, request: Request) -> Response {
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return (StatusCode::METHOD_NOT_ALLOWED, "Method not allowed\n").into_response();
    }
    let site = app.site();
    let uri = request.uri();
    if let Some(response) = static_file(&site, uri.path()) {
        return response;
    }
    if site.config.globals.metrics_path.as_deref() == Some(uri.path()) {
        let mut response = Response::new(Body::from(app.metrics.render()));
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4"),
        );
        return response;
    }
    let started = std::time::Instant::now();
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_string);
    let mut req = match url::parse(&site.config, uri.path(), uri.query()) {
        Ok(req) => req,
        Err(e) => return to_http(pages::render_error(&site, e.status(), e.message()), ()),
    };
    req.host = host;
    req.if_none_match = request
        .headers()
        .get(header::IF_NONE_MATCH)
        .and_then(|h| h.to_str().ok())
        .map(str::to_string);
    req.surrogate_esi = request
        .headers()
        .get("surrogate-capability")
        .and_then(|h| h.to_str().ok())
        .is_some_and(|v| v.contains("ESI/1.0"));
    let page_label = req.page.row().metric_label;
    let (page, expensive) = render_admitted(&app, &site, req).await;
    app.metrics
        .observe(page_label, page.status, started.elapsed().as_secs_f64());
    if !matches!(page.body, pages::Body::File { .. }) {
        return to_http(page, ());
    }
    match Arc::clone(&app.streams).try_acquire_owned() {
        Ok(slot) => to_http(page, (slot, expensive)),
        Err(_) => to_http(
            pages::render_error(&site, 503, "Too many downloads; retry shortly"),
            (),
        ),
    }
}

/// Renders on the blocking pool, after admission control for expensive pages. The admission
/// permit is returned with the page: a streamed body keeps it until it is written.
async fn render_admitted(
    app: &App,
    site: &Arc<Site>,
    req: pages::PageRequest,
) -> (pages::Response, Option<OwnedSemaphorePermit>) {
    let expensive = if pages::cost_class(site, &req) == CostClass::Expensive {
        match app.admission.admit_expensive().await {
            Some(permit) => Some(permit),
            None => {
                let busy = "Too many expensive requests; retry shortly";
                return (pages::render_error(site, 503, busy), None);
            }
        }
    } else {
        None
    };
    app.metrics.queue_depth.inc();
    let permit = app.permits.acquire().await;
    app.metrics.queue_depth.dec();
    let Ok(_permit) = permit else {
        return (pages::render_error(site, 503, "Shutting down"), None);
    };
    let worker_site = Arc::clone(site);
    match tokio::task::spawn_blocking(move || pages::render(&worker_site, &req)).await {
        Ok(page) => (page, expensive),
        Err(e) => {
            tracing::error!("page task failed: {e}");
            (pages::render_error(site, 500, "Internal error"), None)
        }
    }
}

/// Turns a rendered page into an HTTP response; a streamed body starts writing here and keeps
/// `hold` (its permits) until it is done.
pub fn to_http(page: pages::Response, hold: impl Send + 'static) -> Response {
    let body = match page.body {
        pages::Body::Full(bytes) => Body::from(bytes),
        pages::Body::File { file, len } => stream::spawn(file, len, hold),
    };
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::from_u16(page.status).unwrap_or(StatusCode::OK);
    let headers = response.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&page.content_type) {
        headers.insert(header::CONTENT_TYPE, v);
    }
    for (name, value) in page.headers {
        if let Ok(v) = HeaderValue::from_str(&value) {
            headers.append(name, v);
        }
    }
    response
}

/// The stylesheet, logo, favicon and robots.txt shipped in the binary, under the virtual root.
fn static_file(site: &Site, path: &str) -> Option<Response> {
    let rel = path.strip_prefix(site.config.globals.virtual_root.as_str())?;
    let (body, content_type): (&'static [u8], &str) = match rel {
        "cgit.css" => (include_bytes!("../../static/cgit.css"), "text/css"),
        "cgit.png" => (include_bytes!("../../static/cgit.png"), "image/png"),
        "favicon.ico" => (include_bytes!("../../static/favicon.ico"), "image/x-icon"),
        "robots.txt" => (include_bytes!("../../static/robots.txt"), "text/plain"),
        _ => return None,
    };
    let mut response = Response::new(Body::from(body));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=86400"),
    );
    Some(response)
}

/// Serves until ctrl-c; SIGHUP reloads the configuration.
pub async fn serve(app: Arc<App>, listener: tokio::net::TcpListener) -> std::io::Result<()> {
    let reloader = Arc::clone(&app);
    tokio::spawn(async move {
        let Ok(mut hup) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
        else {
            return;
        };
        while hup.recv().await.is_some() {
            match reloader.reload() {
                Ok(()) => tracing::info!("configuration reloaded"),
                Err(e) => tracing::error!("reload failed, keeping the old configuration: {e}"),
            }
        }
    });
    axum::serve(listener, router(app))
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
}
