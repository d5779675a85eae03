//! The HTTP server: axum router, static files, scheduling each request's git work by cost,
//! sharing identical renders, access log, and configuration reloads.

mod auth;
mod client;
pub mod compress;
mod embedded;
mod fetch_gate;
mod metrics;
mod pack_cache;
mod range;
pub mod response_cache;
pub mod scheduler;
pub mod single_flight;
mod smart;
mod static_dir;
mod stream;

use crate::config::{Config, Scheduling};
use crate::pages::{self, Site};
use crate::request::page::CostClass;
use crate::request::{PageRequest, url};
use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::serve::ListenerExt;
use bytes::Bytes;
use compress::{Coding, Effort};
use response_cache::{Entry, Key, ResponseCache};
use scheduler::{Done, Limits, Scheduler, Shed, ShedReason};
use single_flight::SingleFlight;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;
use tower_http::compression::predicate::{DefaultPredicate, NotForContentType, Predicate};
use tower_http::compression::{CompressionLayer, CompressionLevel};

/// Bodies up to this size are compressed on the async thread at cheap levels (tens of µs, less
/// than handing them to a blocking thread); larger ones on a blocking thread.
const INLINE_COMPRESSION: usize = 16 << 10;

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
        let metrics = metrics::Metrics::new(&site, &scheduler, &responses.stats, &upload_pack);
        Arc::new(App {
            site: RwLock::new(Arc::new(site)),
            scheduler,
            flights: SingleFlight::new(),
            streams: Arc::new(Semaphore::new(STREAM_PERMITS)),
            responses,
            packs,
            fetches,
            upload_pack,
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
    if let Some(route) = smart::route(request.method(), uri.path(), uri.query()) {
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
        let mut response = Response::new(Body::from(app.metrics.render()));
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4"),
        );
        return response;
    }
    let started = Instant::now();
    let mut req = match url::parse(&site.config, uri.path(), uri.query()) {
        Ok(req) => req,
        Err(e) => return to_http(pages::render_error(&site, e.status(), e.message()), ()),
    };
    let headers = request.headers();
    let header_text = |name| {
        headers
            .get(name)
            .and_then(|h: &HeaderValue| h.to_str().ok())
    };
    req.host = header_text(header::HOST).map(str::to_string);
    req.if_none_match = header_text(header::IF_NONE_MATCH).map(str::to_string);
    req.surrogate_esi = header_text(header::HeaderName::from_static("surrogate-capability"))
        .is_some_and(|v| v.contains("ESI/1.0"));
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(std::net::Ipv4Addr::LOCALHOST.into(), |c| c.0.ip());
    let forwarded = header_text(header::HeaderName::from_static("x-forwarded-for"));
    let client = client::client_addr(peer, forwarded, &site.config.globals.trusted_proxies);
    // With an auth-filter every page depends on the cookie: no ESI fragments for a surrogate.
    let auth = site
        .config
        .globals
        .auth_filter
        .is_some()
        .then(|| auth::auth_request(&site, &request, Some(&req)));
    if auth.is_some() {
        req.surrogate_esi = false;
    }
    let page_kind = req.page;
    let answer = Answer {
        page_label: page_kind.row().metric_label,
        class: pages::cost_class(&site, &req),
        target: req.target.clone(),
        client,
        if_none_match: req.if_none_match.clone(),
        started,
    };
    // A byte range is cut from the whole response, which the response cache does not hold.
    let range = header_text(header::RANGE);
    let ranged = range::accepts_ranges(page_kind);
    // Pages that depend on the cookie are never kept (nor shared by single flight).
    let caching = app.responses.enabled() && auth.is_none();
    let cache_key = if caching && !(ranged && range.is_some()) {
        Key::for_request(&site, &req, coding)
    } else {
        None
    };
    if let Some(key) = &cache_key {
        if let Some(entry) = app.cached(key).await {
            app.responses.stats.hits.inc();
            return answer.respond_with(&app, &site, &entry, None);
        }
        app.responses.stats.misses.inc();
        // Rendered whole, so that the cache gets the page; the validator is compared here.
        req.if_none_match = None;
    }
    let is_index = req.page == pages::Page::Index;
    // Not looked up because the ref version was unknown: perhaps kept after the render.
    let keep_later = (cache_key.is_none()
        && caching
        && !(ranged && range.is_some())
        && response_cache::cacheable_page(req.page))
    .then(|| {
        req.if_none_match = None;
        req.clone()
    });
    let validator_stripped =
        (cache_key.is_some() || keep_later.is_some()) && answer.if_none_match.is_some();
    let client_key = client::client_key(client);
    // The render, the keeping and the compression are boxed: held inline, their states made
    // this function's future about 7 KB, copied on every request, repeats included.
    let rendered = Box::pin(render_scheduled(
        &app,
        &site,
        req,
        answer.class,
        client_key,
        auth,
    ))
    .await;
    // A shed job never ran: it took no time and cost nothing.
    let (mut page, waited, ran, cpu) = match rendered {
        Ok(Done {
            value,
            waited,
            ran,
            cpu,
        }) => (Arc::unwrap_or_clone(value), waited, ran, cpu),
        Err(shed) => (
            shed_page(&site, shed),
            Duration::ZERO,
            Duration::ZERO,
            Duration::ZERO,
        ),
    };
    if ranged {
        range::advertise(&mut page);
    }
    let cache_key = cache_key.or_else(|| {
        let req = keep_later.as_ref()?;
        let key = Key::for_request(&site, req, coding)?;
        app.responses.stats.misses.inc();
        key.rendered_from(&site, req, &page).then_some(key)
    });
    if let Some(key) = cache_key
        && app.responses.admits(&key, cpu)
        && let Some(entry) = Entry::from_page(&page, is_index)
    {
        let entry = Box::pin(app.keep(key, entry)).await;
        return answer.respond_with(&app, &site, &entry, Some((waited, ran)));
    }
    let mut page = if validator_stripped {
        not_modified_if(page, answer.if_none_match.as_deref().unwrap_or_default())
    } else {
        page
    };
    if ranged {
        page = range::apply(page, range, header_text(header::IF_RANGE));
    }
    let bytes = match &page.body {
        pages::Body::Full(bytes) => bytes.len() as u64,
        pages::Body::File { len, .. } => *len,
    };
    answer.record(&app, &site, page.status, bytes, Some((waited, ran)));
    if !matches!(page.body, pages::Body::File { .. }) {
        return to_http(Box::pin(compress_once(page, coding)).await, ());
    }
    match Arc::clone(&app.streams).try_acquire_owned() {
        Ok(slot) => to_http(page, slot),
        Err(_) => to_http(
            pages::render_error(&site, 503, "Too many downloads; retry shortly"),
            (),
        ),
    }
}

/// What a request's answer is measured and logged with.
struct Answer {
    page_label: &'static str,
    class: CostClass,
    target: String,
    client: std::net::IpAddr,
    /// The client's validator (the render itself may be asked without it).
    if_none_match: Option<String>,
    started: Instant,
}

impl Answer {
    /// Counts the answer in the metrics and the access log; `rendered` is the queue wait and
    /// render time, `None` for an answer from the cache.
    fn record(
        &self,
        app: &App,
        site: &Site,
        status: u16,
        bytes: u64,
        rendered: Option<(Duration, Duration)>,
    ) {
        let elapsed = self.started.elapsed().as_secs_f64();
        app.metrics.observe(self.page_label, status, elapsed);
        app.access_log(site, self, status, bytes, rendered);
    }

    /// The answer from a cached response (or a 304 for it), recorded.
    fn respond_with(
        &self,
        app: &App,
        site: &Site,
        entry: &Entry,
        rendered: Option<(Duration, Duration)>,
    ) -> Response {
        let response = entry_response(entry, self.if_none_match.as_deref());
        let bytes = entry.body.len() as u64;
        self.record(app, site, response.status().as_u16(), bytes, rendered);
        response
    }
}

impl App {
    /// The cached response for `key`; a compressed variant not kept yet is made from the
    /// cached uncompressed response (off the async threads) and kept. A repeat that finds the
    /// cheap variant made with the page's first answer has it remade at the stored level, in
    /// the background.
    async fn cached(self: &Arc<Self>, key: &Key) -> Option<Arc<Entry>> {
        if let Some(entry) = self.responses.get(key) {
            if entry.claim_recompression() {
                self.recompress_later(key.clone());
            }
            return Some(entry);
        }
        if key.coding() == Coding::Identity {
            return None;
        }
        let plain = self.responses.get(&key.with_coding(Coding::Identity))?;
        Some(self.keep_variant(key.clone(), plain, Effort::Stored).await)
    }

    /// Replaces the cheap variant under `key` with one at the stored level, without holding up
    /// the answer that found it (unless the uncompressed page has left the cache since).
    fn recompress_later(self: &Arc<Self>, key: Key) {
        let app = Arc::clone(self);
        tokio::spawn(async move {
            if let Some(plain) = app.responses.get(&key.with_coding(Coding::Identity)) {
                app.keep_variant(key, plain, Effort::Stored).await;
            }
        });
    }

    /// Keeps a rendered page's entry under the uncompressed key and, when `key` asks for a
    /// coding, its compressed variant too (cheaply: a crawler's page is not asked for again);
    /// returns what answers this request.
    async fn keep(&self, key: Key, entry: Entry) -> Arc<Entry> {
        let plain = Arc::new(entry);
        let coding = key.coding();
        self.responses
            .put(key.with_coding(Coding::Identity), Arc::clone(&plain));
        if coding == Coding::Identity {
            return plain;
        }
        self.keep_variant(key, plain, Effort::Cheap).await
    }

    /// Compresses `plain` for `key`'s coding at `effort` (when its type is worth it) and keeps
    /// it.
    async fn keep_variant(&self, key: Key, plain: Arc<Entry>, effort: Effort) -> Arc<Entry> {
        if !compress::compressible(&plain.content_type, plain.body.len()) {
            return plain;
        }
        let coding = key.coding();
        let Some(body) = compress_body(plain.body.clone(), coding, effort).await else {
            return plain;
        };
        let variant = Arc::new(plain.variant(coding, body, effort));
        self.responses.put(key, Arc::clone(&variant));
        variant
    }
}

/// The 304 a page rendered without its request's `If-None-Match` would have been, when the
/// validator matches (a cacheable page that turned out not to be kept: partial, private).
fn not_modified_if(page: pages::Response, if_none_match: &str) -> pages::Response {
    if page.status != 200 {
        return page;
    }
    let header = |name: &str| {
        page.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    let Some(etag) = header("ETag") else {
        return page;
    };
    if !response_cache::etag_matches(if_none_match, &etag) {
        return page;
    }
    let mut not_modified = pages::Response::not_modified(etag);
    if let Some(cc) = header("Cache-Control") {
        not_modified.headers.push(("Cache-Control", cc));
    }
    not_modified
}

/// A buffered page in `coding` at a cheap level (it is sent once); file bodies are left to
/// tower-http.
async fn compress_once(mut page: pages::Response, coding: Coding) -> pages::Response {
    let pages::Body::Full(body) = &page.body else {
        return page;
    };
    // A byte range counts bytes of the uncompressed body: it is sent as it is.
    if page.status == 206 {
        return page;
    }
    if coding == Coding::Identity || !compress::compressible(&page.content_type, body.len()) {
        return page;
    }
    let Some(compressed) = compress_body(body.clone(), coding, Effort::Cheap).await else {
        return page;
    };
    page.body = pages::Body::Full(compressed);
    page.headers
        .push(("Content-Encoding", coding.name().to_string()));
    page.headers.push(("Vary", "accept-encoding".to_string()));
    page
}

/// `body` in `coding` at `effort`: on this thread when cheap and small, else on a blocking
/// thread; `None` when that thread failed.
async fn compress_body(body: Bytes, coding: Coding, effort: Effort) -> Option<Bytes> {
    if effort == Effort::Cheap && body.len() <= INLINE_COMPRESSION {
        return Some(coding.compress(&body, effort));
    }
    tokio::task::spawn_blocking(move || coding.compress(&body, effort))
        .await
        .ok()
}

/// The response for a cached entry: 304 when `If-None-Match` matches its validator (with the
/// headers a rendered 304 has), else the entry's headers and body.
fn entry_response(entry: &Entry, if_none_match: Option<&str>) -> Response {
    if let (Some(inm), Some(etag)) = (if_none_match, &entry.etag)
        && response_cache::etag_matches(inm, etag)
    {
        let mut page = pages::Response::not_modified(etag.clone());
        if let Some(cc) = &entry.cache_control {
            page.headers.push(("Cache-Control", cc.clone()));
        }
        return to_http(page, ());
    }
    let mut response = Response::new(Body::from(entry.body.clone()));
    *response.headers_mut() = entry.headers.clone();
    response
}

/// Renders on a git worker in the request's cost class; a request identical to one already
/// rendering waits for that render instead — unless an auth-filter decides about each request
/// (`auth`), whose pages are never shared.
async fn render_scheduled(
    app: &App,
    site: &Arc<Site>,
    req: PageRequest,
    class: CostClass,
    client: u64,
    auth: Option<crate::pages::auth::AuthRequest>,
) -> Rendered {
    if let Some(auth) = auth {
        let worker_site = Arc::clone(site);
        let done = app
            .scheduler
            .run(class, client, move || {
                crate::pages::auth::render(&worker_site, &req, &auth)
            })
            .await?;
        return Ok(done.shared());
    }
    let key = (site.generation, req.clone());
    let worker_site = Arc::clone(site);
    let render = async move {
        let done = app
            .scheduler
            .run(class, client, move || pages::render(&worker_site, &req))
            .await?;
        Ok(done.shared())
    };
    app.flights.run(key, render).await
}

/// The answer to a request that was not rendered: 503 with `Retry-After` under load.
fn shed_page(site: &Site, shed: Shed) -> pages::Response {
    if shed.reason == ShedReason::Panicked {
        return pages::render_error(site, 500, "Internal error");
    }
    let message = format!("The server is busy: {}. Please retry shortly.", shed.reason);
    let mut page = pages::render_error(site, 503, &message);
    page.headers.retain(|(name, _)| *name != "Retry-After");
    page.headers
        .push(("Retry-After", shed.retry_after_secs().max(1).to_string()));
    page
}

impl App {
    /// One line per sampled request (`access-log=N`: every Nth), on the `cgitd::access` target.
    fn access_log(
        &self,
        site: &Site,
        answer: &Answer,
        status: u16,
        bytes: u64,
        rendered: Option<(Duration, Duration)>,
    ) {
        let sample = site.config.globals.access_log_sample;
        if sample == 0
            || !self
                .requests
                .fetch_add(1, Ordering::Relaxed)
                .is_multiple_of(sample)
        {
            return;
        }
        let (waited, ran) = rendered.unwrap_or_default();
        tracing::info!(
            target: "cgitd::access",
            client = %answer.client,
            class = answer.class.label(),
            cached = rendered.is_none(),
            wait_ms = waited.as_secs_f64() * 1e3,
            render_ms = ran.as_secs_f64() * 1e3,
            status,
            bytes,
            "{}",
            answer.target
        );
    }
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
    let service = router(app).into_make_service_with_connect_info::<SocketAddr>();
    // A response is written whole, at once: nothing is gained by holding back its last
    // segment until the previous ones are acknowledged (Nagle's algorithm).
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stripped_validator_still_gets_its_304() {
        let mut page = pages::Response::html("partial".into());
        page.headers.push(("ETag", "W/\"v\"".into()));
        page.headers.push(("Cache-Control", "no-cache".into()));
        let answer = not_modified_if(page.clone(), "W/\"v\"");
        assert_eq!(answer.status, 304);
        assert!(
            answer
                .headers
                .contains(&("Cache-Control", "no-cache".into()))
        );
        assert_eq!(not_modified_if(page, "W/\"other\"").status, 200);
    }
}
