//! A page request's way through the server, in steps: parsed, classed by cost, looked up in
//! the response cache, rendered on a git worker (shared by identical requests), kept,
//! compressed, counted and logged.

use super::compress::{self, Coding, Effort};
use super::response_cache::{self, Entry, Key};
use super::scheduler::{Done, Shed, ShedReason};
use super::{App, Rendered, client, range, to_http};
use crate::pages::auth::AuthRequest;
use crate::pages::{self, Site};
use crate::request::page::CostClass;
use crate::request::{PageRequest, url};
use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, header};
use axum::response::Response;
use bytes::Bytes;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Bodies up to this size are compressed on the async thread at cheap levels (tens of µs, less
/// than handing them to a blocking thread); larger ones on a blocking thread.
const INLINE_COMPRESSION: usize = 16 << 10;

/// Serves a GET or HEAD of a page.
pub(super) async fn serve(
    app: &Arc<App>,
    site: Arc<Site>,
    request: Request,
    coding: Coding,
) -> Response {
    let started = Instant::now();
    let (mut req, client) = match page_request(&site, &request) {
        Ok(parsed) => parsed,
        Err(e) => return to_http(pages::render_error(&site, e.status(), e.message()), ()),
    };
    // With an auth-filter every page depends on the cookie: no ESI fragments for a surrogate.
    let auth = site
        .config
        .globals
        .auth_filter
        .is_some()
        .then(|| super::auth::auth_request(&site, &request, Some(&req)));
    if auth.is_some() {
        req.surrogate_esi = false;
    }
    let answer = Answer {
        page_label: req.page.row().metric_label,
        class: pages::cost_class(&site, &req),
        target: req.target.clone(),
        client,
        if_none_match: req.if_none_match.clone(),
        started,
    };
    let headers = request.headers();
    let range = header_text(headers, header::RANGE);
    let ranged = range::accepts_ranges(req.page);
    let plan = CachePlan::new(
        app,
        &site,
        &mut req,
        coding,
        auth.is_none(),
        ranged && range.is_some(),
    );
    if let Some(key) = &plan.key {
        if let Some(entry) = app.cached(key).await {
            app.responses.stats.hits.inc();
            return answer.respond_with(app, &site, &entry, None);
        }
        app.responses.stats.misses.inc();
    }
    let page_kind = req.page;
    let client_key = client::client_key(client);
    // The render, the keeping and the compression are boxed: held inline, their states made
    // this function's future about 7 KB, copied on every request, repeats included.
    let rendered = Box::pin(render_scheduled(
        app,
        &site,
        req,
        answer.class,
        client_key,
        auth,
    ))
    .await;
    let (mut page, timing, cpu) = outcome(&site, rendered);
    let validator_stripped = plan.validator_stripped;
    if ranged {
        range::advertise(&mut page);
    }
    if let Some(key) = plan.key_after(app, &site, coding, &page)
        && app.responses.admits(&key, cpu)
        && let Some(entry) = Entry::from_page(&page, page_kind == pages::Page::Index)
    {
        let entry = Box::pin(app.keep(key, entry)).await;
        return answer.respond_with(app, &site, &entry, Some(timing));
    }
    if validator_stripped {
        page = not_modified_if(page, answer.if_none_match.as_deref().unwrap_or_default());
    }
    if ranged {
        page = range::apply(page, range, header_text(headers, header::IF_RANGE));
    }
    send(app, &site, &answer, page, coding, timing).await
}

/// The request's page, with what its headers say, and the client it is for; or why the URL
/// names no page.
fn page_request(
    site: &Site,
    request: &Request,
) -> Result<(PageRequest, std::net::IpAddr), url::UrlError> {
    let uri = request.uri();
    let mut req = url::parse(&site.config, uri.path(), uri.query())?;
    let headers = request.headers();
    req.host = header_text(headers, header::HOST).map(str::to_string);
    req.if_none_match = header_text(headers, header::IF_NONE_MATCH).map(str::to_string);
    req.surrogate_esi = header_text(
        headers,
        header::HeaderName::from_static("surrogate-capability"),
    )
    .is_some_and(|v| v.contains("ESI/1.0"));
    let client = client::of_request(request, &site.config.globals.trusted_proxies);
    Ok((req, client))
}

fn header_text(headers: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    headers.get(name).and_then(|h| h.to_str().ok())
}

/// How a request uses the response cache: the key it is looked up under, or, when the ref
/// version was unknown before the render, the request to key it by after; and whether the
/// client's validator was taken off the render (to be compared here).
struct CachePlan {
    key: Option<Key>,
    keep_later: Option<PageRequest>,
    validator_stripped: bool,
}

impl CachePlan {
    /// The plan for `req` (whose validator it strips when the render must be whole). Pages
    /// that depend on the cookie (not `shareable`) are never kept, and a byte range (`ranged`) is cut
    /// from the whole response, which the cache does not hold.
    fn new(
        app: &App,
        site: &Site,
        req: &mut PageRequest,
        coding: Coding,
        shareable: bool,
        ranged: bool,
    ) -> CachePlan {
        let caching = app.responses.enabled() && shareable;
        let key = (caching && !ranged)
            .then(|| Key::for_request(site, req, coding))
            .flatten();
        let keep_later =
            key.is_none() && caching && !ranged && response_cache::cacheable_page(req.page);
        // Rendered whole, so that the cache gets the page; the validator is compared here.
        let validator_stripped =
            (key.is_some() || keep_later) && req.if_none_match.take().is_some();
        CachePlan {
            key,
            keep_later: keep_later.then(|| req.clone()),
            validator_stripped,
        }
    }

    /// The key a rendered `page` is kept under, if any.
    fn key_after(
        self,
        app: &App,
        site: &Site,
        coding: Coding,
        page: &pages::Response,
    ) -> Option<Key> {
        if let Some(key) = self.key {
            return Some(key);
        }
        let req = self.keep_later?;
        let key = Key::for_request(site, &req, coding)?;
        app.responses.stats.misses.inc();
        key.rendered_from(site, &req, page).then_some(key)
    }
}

/// A render's page, its queue wait and run time, and its CPU time; a shed job never ran: it
/// took no time and cost nothing.
fn outcome(site: &Site, rendered: Rendered) -> (pages::Response, (Duration, Duration), Duration) {
    match rendered {
        Ok(Done {
            value,
            waited,
            ran,
            cpu,
        }) => (Arc::unwrap_or_clone(value), (waited, ran), cpu),
        Err(shed) => (shed_page(site, shed), Default::default(), Duration::ZERO),
    }
}

/// Counts and sends a page that is not kept: a buffered body compressed once, a file body
/// streamed while a sending permit is free.
async fn send(
    app: &App,
    site: &Site,
    answer: &Answer,
    page: pages::Response,
    coding: Coding,
    timing: (Duration, Duration),
) -> Response {
    let bytes = match &page.body {
        pages::Body::Full(bytes) => bytes.len() as u64,
        pages::Body::File { len, .. } => *len,
    };
    answer.record(app, site, page.status, bytes, Some(timing));
    if !matches!(page.body, pages::Body::File { .. }) {
        return to_http(Box::pin(compress_once(page, coding)).await, ());
    }
    match Arc::clone(&app.streams).try_acquire_owned() {
        Ok(slot) => to_http(page, slot),
        Err(_) => to_http(
            pages::render_error(site, 503, "Too many downloads; retry shortly"),
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
    auth: Option<AuthRequest>,
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
pub(super) fn shed_page(site: &Site, shed: Shed) -> pages::Response {
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
