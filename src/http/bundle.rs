//! The bundle `bundle-uri` offers, at `/<repo>/bundle/clone.bundle`: a git bundle of every ref
//! of the resident snapshot, its pack a full clone's from the kept-pack cache (written on a git
//! worker, admitted like a clone), streamed from its temporary file.

use super::App;
use super::smart::{self, Failure};
use crate::git::fetch::Wanted;
use crate::pages::{self, Site};
use crate::repos::RepoState;
use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, Method, header};
use axum::response::Response;
use std::io::Write;
use std::sync::Arc;

/// Where the bundle is, below a repository's URL.
pub(super) const PATH: &str = "/bundle/clone.bundle";

/// The URI told to `command=bundle-uri`: relative, so git resolves it against the URL it
/// cloned from (whatever host, scheme and prefix that was).
const URI: &str = "bundle/clone.bundle";

/// The URI of the bundle offered for `state`, when its configuration offers one.
pub(super) fn offered(state: &RepoState) -> Option<&'static str> {
    state.config.opts.clone_bundle_uri.then_some(URI)
}

/// A bundle ready to send: its header and its kept pack.
struct Bundle {
    header: Vec<u8>,
    pack: Arc<super::pack_cache::KeptPack>,
    source: &'static str,
}

impl Bundle {
    fn len(&self) -> u64 {
        self.header.len() as u64 + self.pack.len
    }

    fn send(&self, out: &mut dyn Write) -> std::io::Result<()> {
        out.write_all(&self.header)?;
        pages::copy_file(&self.pack.file, 0, self.pack.len, out)
    }
}

/// Answers a GET or HEAD of the bundle of the repository at `repo_path`.
pub(super) async fn serve(
    app: &App,
    site: Arc<Site>,
    repo_path: &str,
    request: Request,
) -> Response {
    if !site.config.globals.enable_http_clone {
        return smart::error(&site, 404, "Invalid request");
    }
    let Some(state) = smart::repository(&site, repo_path) else {
        return smart::error(&site, 404, "Repository not found");
    };
    if offered(&state).is_none() {
        return smart::error(&site, 404, "Invalid request");
    }
    let head = request.method() == Method::HEAD;
    let smart::Asker { auth, client_key } = smart::asker(&site, &request, &state.config.url);
    let worker_site = Arc::clone(&site);
    let packs = Arc::clone(&app.packs);
    let stats = Arc::clone(&app.upload_pack);
    let job = move || {
        smart::allowed(&worker_site, auth.as_ref())?;
        bundle(&state, &packs, &stats)
    };
    let ran = smart::run_fetch(app, client_key, job).await;
    let bundle = match ran {
        Ok(done) => match done.value {
            Ok(bundle) => bundle,
            Err(failure) => return failure.response(&site),
        },
        Err(shed) => return super::to_http(super::page::shed_page(&site, shed), ()),
    };
    let len = bundle.len();
    if head {
        return response(Body::empty(), len);
    }
    let Ok(slot) = Arc::clone(&app.streams).try_acquire_owned() else {
        return smart::error(&site, 503, "Too many downloads; retry shortly");
    };
    let stats = Arc::clone(&app.upload_pack);
    stats
        .bundles
        .get_or_create(&vec![("source", bundle.source)])
        .inc();
    let body = super::stream::spawn_writer(slot, move |out| {
        bundle.send(out)?;
        stats.bundle_bytes.inc_by(len);
        Ok(())
    });
    response(body, len)
}

/// The bundle of the refs as they are now: the pack of a clone of all of them, kept or made.
fn bundle(
    state: &RepoState,
    packs: &super::pack_cache::PackCache,
    stats: &smart::Stats,
) -> Result<Bundle, Failure> {
    let made = state.with_repo(|repo| {
        let refs = state
            .refs(repo)
            .map_err(|e| Failure::Internal(pages::chain(&e)))?;
        let contents =
            crate::smart::bundle::contents(&refs).ok_or(Failure::Missing("Repository is empty"))?;
        let wanted = Wanted::clone_of(contents.wants);
        let index = state.commit_index(&refs);
        // Every want is an advertised ref, so a failure is the repository's, not the client's.
        let (pack, source) = match smart::kept_or_written(
            state,
            repo,
            index.as_deref(),
            &wanted,
            packs,
            stats,
            |_, _| {},
        ) {
            Err(Failure::Protocol(e)) => {
                return Err(Failure::Internal(format!("bundle pack: {e}")));
            }
            made => made?,
        };
        Ok(Bundle {
            header: contents.header,
            pack,
            source,
        })
    });
    made.map_err(|e| Failure::Internal(pages::chain(&e)))?
}

/// The bundle's response: its length known, never cached by the way (the refs move).
fn response(body: Body, len: u64) -> Response {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    headers.insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_static("attachment; filename=\"clone.bundle\""),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}
