//! The HTTP server: axum router, static files, scheduling each request's git work by cost,
//! sharing identical renders, access log, and configuration reloads.

mod auth;
mod bundle;
mod client;
pub mod compress;
mod embedded;
mod fetch_gate;
mod growing;
pub mod listener;
mod memory;
mod metrics;
mod pack_cache;
mod page;
mod range;
pub mod response_cache;
pub mod scheduler;
pub mod single_flight;
mod smart;
mod static_dir;
mod stream;

use crate::config::{Config, Scheduling};
use crate::pages::{self, Site};
use crate::request::PageRequest;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::serve::ListenerExt;
use compress::Coding;
use response_cache::ResponseCache;
use scheduler::{Done, Limits, Scheduler, Shed};
use single_flight::SingleFlight;
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::Semaphore;
use tower_http::compression::predicate::{DefaultPredicate, NotForContentType, Predicate};
use tower_http::compression::{CompressionLayer, CompressionLevel};

/// File bodies (archives, clone files) being sent at once; each holds a blocking thread.
const STREAM_PERMITS: usize = 64;
/// How long a clone or fetch waits for its turn on the git workers before a 503: long, since
/// git does not retry, and a turn comes within a few clones' time.
const FETCH_PATIENCE: Duration = Duration::from_secs(120);

/// A render as every identical concurrent request receives it: the page, with the time it
/// waited for a worker and the time it took; or why it was not rendered.
type Rendered = Result<Done<Arc<pages::Response>>, Shed>;

/// Shared server state: the current site (swapped on reload), the scheduler for git work,
/// renders in flight, the file-sending permits, metrics and the access-log sampler.
pub struct App {
    site: RwLock<Arc<Site>>,
    scheduler: Arc<Scheduler>,
    flights: SingleFlight<(u64, PageRequest), Rendered>,
    streams: Arc<Semaphore>,
    /// Whole responses of repeated pages (cleared on reload).
    responses: ResponseCache,
    /// Packs of repeated clones.
    packs: Arc<pack_cache::PackCache>,
    /// Clones and fetches admitted to the git workers.
    fetches: fetch_gate::FetchGate,
    upload_pack: Arc<smart::Stats>,
    /// The connections open, bounded by the file descriptors.
    connections: Arc<listener::Connections>,
    /// Memory pressure, as the watch sees it.
    memory: memory::Stats,
    metrics: metrics::Metrics,
    requests: AtomicU64,
    config_path: Option<std::path::PathBuf>,
}

/// The scheduler's limits: the machine's defaults, with what the configuration sets.
pub fn scheduler_limits(options: &Scheduling) -> Limits {
    let mut limits = Limits::default_for_cores();
    if options.workers > 0 {
        limits.workers = options.workers;
        limits.expensive_workers = (options.workers / 2).max(1);
    }
    if options.expensive_workers > 0 {
        limits.expensive_workers = options.expensive_workers;
    }
    // A standing queue sheds waiters past a tenth (cheap) or a quarter (expensive) of the
    // deadline, as the defaults do (5 s / 500 ms, 2 s / 500 ms).
    if options.cheap_deadline_ms > 0 {
        limits.cheap_deadline = Duration::from_millis(options.cheap_deadline_ms);
        limits.cheap_overload_wait = limits.cheap_deadline / 10;
    }
    if options.expensive_deadline_ms > 0 {
        limits.expensive_deadline = Duration::from_millis(options.expensive_deadline_ms);
        limits.expensive_overload_wait = limits.expensive_deadline / 4;
    }
    limits
}

impl App {
    pub fn new(config: Config, config_path: Option<std::path::PathBuf>) -> Arc<App> {
        let connections = Arc::new(listener::Connections::for_this_process());
        let scheduler = Scheduler::new(scheduler_limits(&config.globals.scheduling));
        let responses = ResponseCache::new(config.globals.response_cache_size);
        let packs = Arc::new(pack_cache::PackCache::new(config.globals.clone_cache_size));
        let site = Site::new(config);
        let upload_pack = Arc::new(smart::Stats::new());
        let limits = scheduler.limits();
        let fetches = fetch_gate::FetchGate::new(
            limits.expensive_workers,
            limits.expensive_queue,
            FETCH_PATIENCE,
        );
        let mut metrics = metrics::Metrics::new(&site, &scheduler, &responses.stats, &upload_pack);
        metrics.register(|registry| connections.register(registry));
        let memory = memory::Stats::default();
        metrics.register(|registry| memory.register(registry));
        Arc::new(App {
            site: RwLock::new(Arc::new(site)),
            scheduler,
            flights: SingleFlight::new(),
            streams: Arc::new(Semaphore::new(STREAM_PERMITS)),
            responses,
            packs,
            fetches,
            upload_pack,
            connections,
            memory,
            metrics,
            requests: AtomicU64::new(0),
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
        let site = self.site().reloaded(config);
        *self.site.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(site);
        self.responses.clear();
        self.metrics.reloads.inc();
        Ok(())
    }
}

/// The router: every path goes through [`handle`]; responses are compressed when the client
/// accepts it, except archives and git's own files, which are compressed already.
pub fn router(app: Arc<App>) -> axum::Router {
    // A byte range counts bytes of the uncompressed body: it is sent as it is.
    let whole = |status: StatusCode, _, _: &axum::http::HeaderMap, _: &axum::http::Extensions| {
        status != StatusCode::PARTIAL_CONTENT
    };
    let compressible = DefaultPredicate::new()
        .and(NotForContentType::const_new("application/octet-stream"))
        .and(NotForContentType::const_new("application/x-"))
        .and(whole);
    axum::Router::new()
        .fallback(handle)
        .layer(
            CompressionLayer::new()
                .quality(CompressionLevel::Precise(compress::STREAM_LEVEL))
                .compress_when(compressible),
        )
        .with_state(app)
}

async fn handle(State(app): State<Arc<App>>, request: Request) -> Response {
    let site = app.site();
    let uri = request.uri();
    if let Some(route) = smart::route(&site, request.method(), uri.path(), uri.query()) {
        return Box::pin(smart::serve(&app, site, route, request)).await;
    }
    if request.method() == Method::POST {
        return Box::pin(auth::post(&app, site, request)).await;
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return (StatusCode::METHOD_NOT_ALLOWED, "Method not allowed\n").into_response();
    }
    let uri = request.uri();
    let accept_encoding = request.headers().get(header::ACCEPT_ENCODING);
    let coding = Coding::negotiate(accept_encoding.and_then(|h| h.to_str().ok()));
    if let Some(response) = embedded::serve(&site, uri.path(), coding) {
        return response;
    }
    if let Some(page) = static_dir::serve(&site, uri.path()) {
        return to_http(page, ());
    }
    if site.config.globals.metrics_path.as_deref() == Some(uri.path()) {
        let mut response = Response::new(Body::from(app.metrics.render(&site)));
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4"),
        );
        return response;
    }
    Box::pin(page::serve(&app, site, request, coding)).await
}

/// Turns a rendered page into an HTTP response; a streamed body starts writing here and keeps
/// `hold` (its permits) until it is done.
pub fn to_http(page: pages::Response, hold: impl Send + 'static) -> Response {
    let body = match page.body {
        pages::Body::Full(bytes) => Body::from(bytes),
        pages::Body::File { file, offset, len } => stream::spawn(file, offset, len, hold),
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

/// The async runtime: half the cores for HTTP (at least one), as git work runs on the
/// scheduler's own workers and HTTP is about a tenth of a crawl's CPU; more async threads
/// only wake each other to steal tasks (six alternated 12 s crawls of git.git on 2 cores made
/// 2,718-2,895 pages/s with one, 2,627-2,762 with two). `TOKIO_WORKER_THREADS` sets the number
/// instead.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.enable_all();
    if std::env::var_os("TOKIO_WORKER_THREADS").is_none() {
        builder.worker_threads((scheduler::available_cores() / 2).max(1));
    }
    builder.build()
}

/// Serves until ctrl-c or SIGTERM, each a graceful stop (the requests under way are
/// answered); SIGHUP reloads the configuration.
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
    memory::watch(Arc::clone(&app));
    let connections = Arc::clone(&app.connections);
    tracing::debug!("serving at most {} connections at once", connections.cap());
    let service = router(app).into_make_service_with_connect_info::<SocketAddr>();
    // A response is written whole, at once: nothing is gained by holding back its last
    // segment until the previous ones are acknowledged (Nagle's algorithm).
    let listener = listener::Bounded::new(listener, connections).tap_io(|connection| {
        if let Err(e) = connection.stream.set_nodelay(true) {
            tracing::debug!("TCP_NODELAY not set: {e}");
        }
    });
    axum::serve(listener, service)
        .with_graceful_shutdown(stop_signal())
        .await
}

/// Completes on ctrl-c (SIGINT) or SIGTERM, what a service manager sends to stop a server.
async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        Err(e) => {
            tracing::warn!("SIGTERM not handled: {e}");
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
