//! The HTTP server: axum router, static files, scheduling each request's git work by cost,
//! sharing identical renders, access log, and configuration reloads.

mod auth;
mod client;
mod metrics;
mod range;
pub mod scheduler;
pub mod single_flight;
mod static_dir;
mod stream;

use crate::config::{Config, Scheduling};
use crate::pages::{self, Site};
use crate::repos::Repos;
use crate::request::page::CostClass;
use crate::request::{PageRequest, url};
use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use scheduler::{Limits, Scheduler, Shed, ShedReason};
use single_flight::SingleFlight;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;
use tower_http::compression::CompressionLayer;
use tower_http::compression::predicate::{DefaultPredicate, NotForContentType, Predicate};

/// File bodies (archives, clone files) being sent at once; each holds a blocking thread.
const STREAM_PERMITS: usize = 64;

/// A render as every identical concurrent request receives it: the page, or why it was not
/// rendered; with the time it waited for a worker and the time it took.
type Rendered = Result<(Arc<pages::Response>, Duration, Duration), Shed>;

/// Shared server state: the current site (swapped on reload), the scheduler for git work,
/// renders in flight, the file-sending permits, metrics and the access-log sampler.
pub struct App {
    site: RwLock<Arc<Site>>,
    scheduler: Arc<Scheduler>,
    flights: SingleFlight<(u64, PageRequest), Rendered>,
    streams: Arc<Semaphore>,
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
        let site = Site::new(config);
        let metrics = metrics::Metrics::new(&site, &scheduler);
        Arc::new(App {
            site: RwLock::new(Arc::new(site)),
            scheduler,
            flights: SingleFlight::new(),
            streams: Arc::new(Semaphore::new(STREAM_PERMITS)),
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
        let old = self.site();
        let repos = Repos::new(&config, Some(&old.repos));
        let site = Site {
            config: Arc::new(config),
            repos: Arc::new(repos),
            generation: old.generation + 1,
            fragments: Arc::clone(&old.fragments),
            walks: Arc::clone(&old.walks),
            sizes: Arc::clone(&old.sizes),
            cutoffs: old.cutoffs.clone(),
        };
        *self.site.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(site);
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
        .layer(CompressionLayer::new().compress_when(compressible))
        .with_state(app)
}

async fn handle(State(app): State<Arc<App>>, request: Request) -> Response {
    let site = app.site();
    if request.method() == Method::POST {
        return auth::post(&app, site, request).await;
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return (StatusCode::METHOD_NOT_ALLOWED, "Method not allowed\n").into_response();
    }
    let uri = request.uri();
    if let Some(response) = static_file(&site, uri.path()) {
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
    let page_label = page_kind.row().metric_label;
    let class = pages::cost_class(&site, &req);
    let target = req.target.clone();
    let client_key = client::client_key(client);
    let rendered = render_scheduled(&app, &site, req, class, client_key, auth).await;
    let (mut page, waited, ran) = match rendered {
        Ok((page, waited, ran)) => (Arc::unwrap_or_clone(page), waited, ran),
        Err(shed) => (shed_page(&site, shed), Duration::ZERO, Duration::ZERO),
    };
    if range::accepts_ranges(page_kind) {
        page = range::apply(
            page,
            header_text(header::RANGE),
            header_text(header::IF_RANGE),
        );
    }
    app.metrics
        .observe(page_label, page.status, started.elapsed().as_secs_f64());
    app.access_log(&site, client, class, &target, &page, waited, ran);
    if !matches!(page.body, pages::Body::File { .. }) {
        return to_http(page, ());
    }
    match Arc::clone(&app.streams).try_acquire_owned() {
        Ok(slot) => to_http(page, slot),
        Err(_) => to_http(
            pages::render_error(&site, 503, "Too many downloads; retry shortly"),
            (),
        ),
    }
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
    auth: Option<crate::auth::AuthRequest>,
) -> Rendered {
    if let Some(auth) = auth {
        let worker_site = Arc::clone(site);
        let done = app
            .scheduler
            .run(class, client, move || {
                crate::auth::render(&worker_site, &req, &auth)
            })
            .await?;
        return Ok((Arc::new(done.value), done.waited, done.ran));
    }
    let key = (site.generation, req.clone());
    let worker_site = Arc::clone(site);
    let render = async move {
        let done = app
            .scheduler
            .run(class, client, move || pages::render(&worker_site, &req))
            .await?;
        Ok((Arc::new(done.value), done.waited, done.ran))
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
    #[allow(clippy::too_many_arguments)]
    fn access_log(
        &self,
        site: &Site,
        client: std::net::IpAddr,
        class: CostClass,
        target: &str,
        page: &pages::Response,
        waited: Duration,
        ran: Duration,
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
        let bytes = match &page.body {
            pages::Body::Full(bytes) => bytes.len() as u64,
            pages::Body::File { len, .. } => *len,
        };
        tracing::info!(
            target: "cgitd::access",
            %client,
            class = class.label(),
            wait_ms = waited.as_secs_f64() * 1e3,
            render_ms = ran.as_secs_f64() * 1e3,
            status = page.status,
            bytes,
            "{target}"
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
    let service = router(app).into_make_service_with_connect_info::<SocketAddr>();
    axum::serve(listener, service)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
}
