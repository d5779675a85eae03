//! git's smart HTTP on the resident repositories: its routes, the request body, the work on a
//! git worker (ref advertisement cheap, fetches expensive) and the pack, written to a
//! temporary file there and sent from it as it grows, so the client indexes it meanwhile and
//! a slow client holds no worker.

use super::growing::Growing;
use super::pack_cache::{KeptPack, PackCache};
use super::scheduler::{Done, Shed};
use super::{App, client};
use crate::git::fetch;
use crate::pages::{self, Site};
use crate::repos::RepoState;
use crate::request::page::CostClass;
use crate::smart::{self, Framing, ProtocolError, Reply, Version, WantPolicy, pktline};
use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use gix::ObjectId;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::io::{BufWriter, Read, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The largest request body taken (after decompression): enough for some 300,000 haves.
const MAX_BODY: usize = 16 << 20;
/// How long a client may take to send its request.
const BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// A smart HTTP request, by its path and query.
pub(super) enum Route {
    /// `GET /<repo>/info/refs?service=git-upload-pack`.
    Advertise(String),
    /// `POST /<repo>/git-upload-pack`.
    UploadPack(String),
    /// Either URL of `git-receive-pack`: pushes, refused.
    ReceivePack,
    /// `GET /<repo>/bundle/clone.bundle`: the bundle `bundle-uri` offers.
    Bundle(String),
}

/// The smart HTTP route of a request, if it is one. The bundle's URL is one only below a
/// repository's own URL (no cgit page is named `bundle`, so none is hidden by it).
pub(super) fn route(
    site: &Site,
    method: &Method,
    path: &str,
    query: Option<&str>,
) -> Option<Route> {
    if method == Method::GET || method == Method::HEAD {
        if let Some(repo) = path.strip_suffix(super::bundle::PATH)
            && repository(site, repo).is_some()
        {
            return Some(Route::Bundle(repo.to_string()));
        }
        let repo = path.strip_suffix("/info/refs")?;
        let service = query?.split('&').find_map(|p| p.strip_prefix("service="))?;
        return match service {
            "git-upload-pack" => Some(Route::Advertise(repo.to_string())),
            "git-receive-pack" => Some(Route::ReceivePack),
            _ => None,
        };
    }
    if method != Method::POST {
        return None;
    }
    if let Some(repo) = path.strip_suffix("/git-upload-pack") {
        return Some(Route::UploadPack(repo.to_string()));
    }
    path.ends_with("/git-receive-pack")
        .then_some(Route::ReceivePack)
}

/// Answers a smart HTTP request.
pub(super) async fn serve(
    app: &Arc<App>,
    site: Arc<Site>,
    route: Route,
    request: Request,
) -> Response {
    let repo_path = match &route {
        Route::ReceivePack => {
            return plain(StatusCode::FORBIDDEN, "Pushing is not supported here\n");
        }
        Route::Bundle(path) => {
            let path = path.clone();
            return Box::pin(super::bundle::serve(app, site, &path, request)).await;
        }
        Route::Advertise(path) | Route::UploadPack(path) => path.clone(),
    };
    if !site.config.globals.enable_http_clone {
        return error(&site, 404, "Invalid request");
    }
    let Some(state) = repository(&site, &repo_path) else {
        return error(&site, 404, "Repository not found");
    };
    let version = Version::from_header(
        request
            .headers()
            .get("git-protocol")
            .and_then(|v| v.to_str().ok()),
    );
    let Asker { auth, client_key } = asker(&site, &request, &state.config.url);
    let (class, body) = match route {
        Route::Advertise(_) => (CostClass::Cheap, None),
        _ => match read_body(request).await {
            Ok(body) => (CostClass::Expensive, Some(body)),
            Err(failure) => return failure.response(&site),
        },
    };
    let worker_site = Arc::clone(&site);
    let packs = Arc::clone(&app.packs);
    let stats = Arc::clone(&app.upload_pack);
    let ran = match body {
        None => {
            let job = move || {
                allowed(&worker_site, auth.as_ref())?;
                advertise(&state, version)
            };
            app.scheduler
                .run(class, client_key, job)
                .await
                .map(|done| done.value)
        }
        Some(body) => {
            let job = move |early: Early| {
                allowed(&worker_site, auth.as_ref())?;
                upload_pack(&state, &packs, &stats, version, &body, early)
            };
            fetch_answer(app, client_key, job).await
        }
    };
    let answer = match ran {
        Ok(answer) => answer,
        Err(shed) => return super::to_http(super::page::shed_page(&site, shed), ()),
    };
    match answer {
        Ok(Answer::Bytes(bytes)) => {
            let kind = if class == CostClass::Cheap {
                "advertisement"
            } else {
                "result"
            };
            git_response(kind, Body::from(bytes))
        }
        Ok(Answer::Pack(pack)) => match Arc::clone(&app.streams).try_acquire_owned() {
            Ok(slot) => git_response(
                "result",
                super::stream::spawn_writer(slot, {
                    let stats = Arc::clone(&app.upload_pack);
                    move |out| {
                        let sent = pack.send(out)?;
                        stats.bytes.inc_by(sent);
                        Ok(())
                    }
                }),
            ),
            Err(_) => error(&site, 503, "Too many downloads; retry shortly"),
        },
        Err(failure) => failure.response(&site),
    }
}

/// Who asks: what the auth filter is to be told (when one is set) of a request for the
/// repository `repo`, and the client's key for the scheduler's fairness.
pub(super) struct Asker {
    pub(super) auth: Option<crate::pages::auth::AuthRequest>,
    pub(super) client_key: u64,
}

pub(super) fn asker(site: &Site, request: &Request, repo: &str) -> Asker {
    // The filter decides by repository (cgit's `simple-authentication.lua` does), so it is told
    // which one, as for the repository's pages.
    let auth = site.config.globals.auth_filter.is_some().then(|| {
        let mut auth = super::auth::auth_request(site, request, None);
        auth.repo = repo.to_string();
        auth
    });
    let client_key = client::client_key(client::of_request(
        request,
        &site.config.globals.trusted_proxies,
    ));
    Asker { auth, client_key }
}

/// Runs the auth filter, on a git worker, when one is set.
pub(super) fn allowed(
    site: &Site,
    auth: Option<&crate::pages::auth::AuthRequest>,
) -> Result<(), Failure> {
    match auth {
        Some(auth) if !crate::pages::auth::authenticated(site, auth) => Err(Failure::Forbidden),
        _ => Ok(()),
    }
}

/// What upload-pack did: packs by where they came from, bytes sent, time per phase.
pub(super) struct Stats {
    packs: Family<Labels, Counter>,
    bytes: Counter,
    phases: Family<Labels, Histogram, fn() -> Histogram>,
    /// Bundles sent to `bundle-uri` clients, by where their pack came from; and their bytes.
    pub(super) bundles: Family<Labels, Counter>,
    pub(super) bundle_bytes: Counter,
}

pub(super) type Labels = Vec<(&'static str, &'static str)>;

impl Stats {
    pub(super) fn new() -> Stats {
        Stats {
            packs: Family::default(),
            bytes: Counter::default(),
            phases: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.000_5, 2.0, 18))
            }),
            bundles: Family::default(),
            bundle_bytes: Counter::default(),
        }
    }

    pub(super) fn register(&self, registry: &mut Registry) {
        registry.register(
            "upload_pack_packs",
            "Packs sent to clones and fetches, by source (written, or kept from an identical clone)",
            self.packs.clone(),
        );
        registry.register(
            "upload_pack_bytes",
            "Pack bytes sent to clones and fetches",
            self.bytes.clone(),
        );
        registry.register(
            "upload_pack_phase_seconds",
            "Time of upload-pack's phases on a git worker: negotiation, counting (choosing the objects), writing (the pack)",
            self.phases.clone(),
        );
        registry.register(
            "upload_pack_bundles",
            "Bundles sent to bundle-uri clients (GET), by the source of their pack (written, or kept)",
            self.bundles.clone(),
        );
        registry.register(
            "upload_pack_bundle_bytes",
            "Bundle bytes sent to bundle-uri clients",
            self.bundle_bytes.clone(),
        );
    }

    fn time<R>(&self, phase: &'static str, work: impl FnOnce() -> R) -> R {
        let started = Instant::now();
        let result = work();
        self.phases
            .get_or_create(&vec![("phase", phase)])
            .observe(started.elapsed().as_secs_f64());
        result
    }
}

/// The repository whose URL is `path`.
pub(super) fn repository(site: &Site, path: &str) -> Option<Arc<RepoState>> {
    let req = crate::request::url::parse(&site.config, path, None).ok()?;
    if req.page_named || req.path.is_some() {
        return None;
    }
    site.repos.get(req.repo.as_deref()?).cloned()
}

/// What a fetch answers: bytes, or the bytes around a pack.
enum Answer {
    Bytes(Vec<u8>),
    Pack(Box<PackFile>),
}

/// A pack in a temporary file, with what goes before and after it.
struct PackFile {
    preamble: Vec<u8>,
    progress: Option<String>,
    pack: PackSource,
    framing: Framing,
    flush_after: bool,
}

/// Where a pack is read from: a complete file, or one still being written.
enum PackSource {
    Kept(Arc<KeptPack>),
    Growing(Arc<Growing>),
}

impl PackSource {
    /// Copies the pack to `out`; returns its length.
    fn copy_to(&self, out: &mut dyn Write) -> std::io::Result<u64> {
        match self {
            PackSource::Kept(kept) => {
                pages::copy_file(&kept.file, 0, kept.len, out)?;
                Ok(kept.len)
            }
            PackSource::Growing(growing) => growing.copy_to(out),
        }
    }
}

impl PackFile {
    /// Sends the answer to `out`; returns the pack's length.
    fn send(self, out: &mut dyn Write) -> std::io::Result<u64> {
        out.write_all(&self.preamble)?;
        if let Some(message) = &self.progress {
            let mut packet = Vec::new();
            pktline::band(&mut packet, 2, message.as_bytes(), pktline::MAX_PACKET);
            out.write_all(&packet)?;
        }
        let sent = match self.framing {
            Framing::Raw => self.pack.copy_to(out)?,
            Framing::SideBand(max) => {
                match self.pack.copy_to(&mut pktline::BandWriter { out, max }) {
                    Ok(sent) => sent,
                    Err(e) => {
                        // Ended as git's upload-pack ends on a fatal error: git prints this
                        // message (`remote: …`) and stops.
                        let said = pages::Exhaustion::in_text(&e.to_string()).map_or(
                            "The pack could not be made; the failure has been logged.",
                            |short| short.message(),
                        );
                        let mut packet = Vec::new();
                        pktline::band(&mut packet, 3, said.as_bytes(), max);
                        out.write_all(&packet)?;
                        return Ok(0);
                    }
                }
            }
        };
        if self.flush_after {
            out.write_all(b"0000")?;
        }
        Ok(sent)
    }
}

/// Why a request got no git answer.
pub(super) enum Failure {
    Forbidden,
    /// Nothing to send at this URL (a 404 with this message).
    Missing(&'static str),
    TooLarge,
    /// The body could not be read (or decompressed).
    BadBody(&'static str),
    Protocol(ProtocolError),
    Internal(String),
}

impl Failure {
    pub(super) fn response(self, site: &Site) -> Response {
        match self {
            Failure::Forbidden => error(site, 403, "Authentication required"),
            Failure::Missing(why) => error(site, 404, why),
            Failure::TooLarge => error(site, 413, "Request too large"),
            Failure::BadBody(why) => error(site, 400, why),
            Failure::Protocol(ProtocolError::Framing(e)) => error(site, 400, &e.to_string()),
            // git shows the message of an error packet as `remote error: …`.
            Failure::Protocol(e) => {
                tracing::info!(target: "cgitd::request", "upload-pack refused: {e}");
                git_response("result", Body::from(smart::error_packet(&e.to_string())))
            }
            Failure::Internal(cause) => {
                tracing::error!(target: "cgitd::request", "upload-pack: {cause}");
                match pages::Exhaustion::in_text(&cause) {
                    Some(short) => exhausted(site, short),
                    None => error(site, 500, "Internal error"),
                }
            }
        }
    }
}

impl From<ProtocolError> for Failure {
    fn from(e: ProtocolError) -> Failure {
        Failure::Protocol(e)
    }
}

/// The request body, gunzipped when it came compressed, at most [`MAX_BODY`] bytes.
async fn read_body(request: Request) -> Result<Vec<u8>, Failure> {
    let gzipped = request
        .headers()
        .get(header::CONTENT_ENCODING)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"gzip"));
    let read = super::auth::read_at_most(request.into_body(), MAX_BODY + 1);
    let body = tokio::time::timeout(BODY_TIMEOUT, read)
        .await
        .map_err(|_| Failure::BadBody("Request timed out"))?;
    if body.len() > MAX_BODY {
        return Err(Failure::TooLarge);
    }
    if !gzipped {
        return Ok(body);
    }
    let mut plain = Vec::new();
    flate2::read::GzDecoder::new(&body[..])
        .take(MAX_BODY as u64 + 1)
        .read_to_end(&mut plain)
        .map_err(|_| Failure::BadBody("Bad gzip request body"))?;
    if plain.len() > MAX_BODY {
        return Err(Failure::TooLarge);
    }
    Ok(plain)
}

/// The ref advertisement, from the resident ref snapshot.
fn advertise(state: &RepoState, version: Version) -> Result<Answer, Failure> {
    let refs = state
        .with_repo(|repo| state.refs(repo))
        .and_then(|refs| refs)
        .map_err(|e| Failure::Internal(pages::chain(&e)))?;
    let offer = super::bundle::offered(state);
    Ok(Answer::Bytes(smart::advertise(&refs, version, offer)))
}

/// One upload-pack request: negotiation, and the pack when the client is done.
/// A clone's pack comes from `packs` when an identical clone left it there.
fn upload_pack(
    state: &RepoState,
    packs: &PackCache,
    stats: &Stats,
    version: Version,
    body: &[u8],
    early: Early,
) -> Result<Answer, Failure> {
    // (taken once: a repeated attempt, on a reopened repository, sends nothing early)
    let early = std::cell::Cell::new(Some(early));
    let answer = state.with_repo(|repo| {
        let refs = state
            .refs(repo)
            .map_err(|e| Failure::Internal(pages::chain(&e)))?;
        let index = state.commit_index(&refs);
        let policy = WantPolicy::Reachable;
        let reply = stats.time("negotiation", || {
            let offer = super::bundle::offered(state);
            smart::answer(repo, index.as_deref(), &refs, version, policy, offer, body)
        })?;
        let reply = match reply {
            Reply::Done(bytes) => return Ok(Answer::Bytes(bytes)),
            Reply::Pack(reply) => reply,
        };
        let answer = |started: &Started, pack: PackSource| {
            let progress = reply.progress.then(|| {
                format!(
                    "Sending {} objects ({} commits)\n",
                    started.objects, started.commits
                )
            });
            Answer::Pack(Box::new(PackFile {
                preamble: reply.preamble(&started.shallow, &started.unshallow),
                progress,
                pack,
                framing: reply.framing,
                flush_after: reply.flush_after,
            }))
        };
        let send_early = |started: &Started, growing: &Arc<Growing>| {
            if let Some(early) = early.take() {
                // (a client gone meanwhile no longer listens; the pack is made for the cache)
                let _ = early.send(answer(started, PackSource::Growing(Arc::clone(growing))));
            }
        };
        let (kept, source) = kept_or_written(
            state,
            repo,
            index.as_deref(),
            &reply.wanted,
            packs,
            stats,
            send_early,
        )?;
        stats.packs.get_or_create(&vec![("source", source)]).inc();
        Ok(answer(&Started::of(&kept), PackSource::Kept(kept)))
    });
    answer.map_err(|e| Failure::Internal(pages::chain(&e)))?
}

/// Runs a clone's or fetch's job: admitted by the fetch gate, then ahead of queued expensive
/// pages on a git worker.
pub(super) async fn run_fetch<R, F>(app: &App, client_key: u64, job: F) -> Result<Done<R>, Shed>
where
    R: Send + 'static,
    F: FnOnce() -> R + Send + 'static,
{
    let _slot = app.fetches.enter(client_key).await?;
    app.scheduler
        .run_first(CostClass::Expensive, client_key, job)
        .await
}

/// Runs a fetch's job like [`run_fetch`], answering as soon as the job sends its answer early
/// (its pack is being written, to be sent as it grows) or else when it ends. After an early
/// answer the job runs on to its end; before one, the caller going away withdraws it.
async fn fetch_answer<F>(
    app: &Arc<App>,
    client_key: u64,
    job: F,
) -> Result<Result<Answer, Failure>, Shed>
where
    F: FnOnce(Early) -> Result<Answer, Failure> + Send + 'static,
{
    let (early, answer) = tokio::sync::oneshot::channel();
    let app = Arc::clone(app);
    let run = tokio::spawn(async move { run_fetch(&app, client_key, move || job(early)).await });
    let mut waiting = WithdrawnOnDrop(Some(run));
    if let Ok(answer) = answer.await {
        waiting.0 = None;
        return Ok(Ok(answer));
    }
    let run = waiting.0.take().expect("taken only here");
    match run.await {
        Ok(ran) => ran.map(|done| done.value),
        Err(e) => Ok(Err(Failure::Internal(format!("fetch task: {e}")))),
    }
}

/// Where a fetch's job sends its answer before it ends.
type Early = tokio::sync::oneshot::Sender<Answer>;

/// A fetch's task, aborted (its job withdrawn if still queued) unless taken out first.
struct WithdrawnOnDrop<T>(Option<tokio::task::JoinHandle<T>>);

impl<T> Drop for WithdrawnOnDrop<T> {
    fn drop(&mut self) {
        if let Some(task) = self.0.take() {
            task.abort();
        }
    }
}

/// What is known of a pack once its objects are chosen.
pub(super) struct Started {
    objects: usize,
    commits: usize,
    shallow: Vec<ObjectId>,
    unshallow: Vec<ObjectId>,
}

impl Started {
    fn of(kept: &KeptPack) -> Started {
        Started {
            objects: kept.objects,
            commits: kept.commits,
            shallow: kept.shallow.clone(),
            unshallow: kept.unshallow.clone(),
        }
    }
}

/// The pack of `wanted`: the kept one of an identical clone, or one written now (and kept
/// when it may be); with which it was ("kept" or "written"). A pack written now is shown to
/// `started` once its objects are chosen, growing in its file.
pub(super) fn kept_or_written(
    state: &RepoState,
    repo: &crate::git::Repo,
    index: Option<&crate::git::commit_index::CommitIndex>,
    wanted: &fetch::Wanted,
    packs: &PackCache,
    stats: &Stats,
    started: impl FnOnce(&Started, &Arc<Growing>),
) -> Result<(Arc<KeptPack>, &'static str), Failure> {
    let key = packs
        .keeps(wanted)
        .then(|| (state.git_dir().to_path_buf(), wanted.clone()));
    if let Some(kept) = key.as_ref().and_then(|k| packs.get(k)) {
        return Ok((kept, "kept"));
    }
    let written = Arc::new(write_pack(repo, index, wanted, stats, started)?);
    if let Some(key) = key {
        packs.put(key, Arc::clone(&written));
    }
    Ok((written, "written"))
}

/// Selects what `wanted` needs and writes its pack to a temporary file, shown to `started`
/// before it is written.
fn write_pack(
    repo: &crate::git::Repo,
    index: Option<&crate::git::commit_index::CommitIndex>,
    wanted: &fetch::Wanted,
    stats: &Stats,
    started: impl FnOnce(&Started, &Arc<Growing>),
) -> Result<KeptPack, Failure> {
    let selection = stats
        .time("counting", || fetch::select(repo, index, wanted))
        .map_err(git_failure)?;
    let about = Started {
        objects: selection.objects.len(),
        commits: selection.commits,
        shallow: selection.shallow,
        unshallow: selection.unshallow,
    };
    let file =
        tempfile::tempfile().map_err(|e| Failure::Internal(format!("temporary file: {e}")))?;
    let growing = Arc::new(Growing::new(file));
    started(&about, &growing);
    // A partial clone may lack the trees and blobs of its own commits.
    let client = match wanted.thin && wanted.filter == fetch::Filter::None {
        true => selection.client,
        false => Default::default(),
    };
    let written = stats.time("writing", || {
        let mut out = BufWriter::with_capacity(256 << 10, growing.writer());
        let len = fetch::write_pack(repo, selection.objects, &client, &mut out)
            .map_err(|e| pages::chain(&e))?;
        out.flush().map_err(|e| format!("writing the pack: {e}"))?;
        Ok::<_, String>(len)
    });
    growing.end(written.as_ref().map(|_| ()).map_err(Clone::clone));
    let len = written.map_err(|why| {
        tracing::error!(
            "upload-pack: a pack of {} objects not written: {why}",
            about.objects
        );
        Failure::Internal(why)
    })?;
    let file = growing
        .file()
        .map_err(|e| Failure::Internal(format!("keeping the pack: {e}")))?;
    Ok(KeptPack {
        file,
        len,
        objects: about.objects,
        commits: about.commits,
        shallow: about.shallow,
        unshallow: about.unshallow,
    })
}

fn git_failure(e: crate::git::GitError) -> Failure {
    match e {
        crate::git::GitError::NotFound(m) | crate::git::GitError::BadRequest(m) => {
            Failure::Protocol(ProtocolError::Bad(m))
        }
        other => Failure::Internal(pages::chain(&other)),
    }
}

/// A response of git's content type `application/x-git-upload-pack-<kind>`, never cached.
fn git_response(kind: &str, body: Body) -> Response {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&format!("application/x-git-upload-pack-{kind}")) {
        headers.insert(header::CONTENT_TYPE, value);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

pub(super) fn error(site: &Site, status: u16, message: &str) -> Response {
    super::to_http(pages::render_error(site, status, message), ())
}

/// A 503 for a fetch the server lacked the resources for (git prints the status).
fn exhausted(site: &Site, short: pages::Exhaustion) -> Response {
    let mut page = pages::render_error(site, 503, short.message());
    page.headers.retain(|(name, _)| *name != "Retry-After");
    let wait = pages::Exhaustion::RETRY_AFTER.to_string();
    page.headers.push(("Retry-After", wait));
    super::to_http(page, ())
}

fn plain(status: StatusCode, text: &'static str) -> Response {
    let mut response = Response::new(Body::from(text));
    *response.status_mut() = status;
    response
}
