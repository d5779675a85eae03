//! The HTTP side of the auth-filter ([`crate::pages::auth`]): what a request tells the filter, the
//! login POST (the only POST cgitd accepts) and the filter's CGI response as HTTP.

use super::App;
use crate::pages::auth::{self, AuthRequest, CgiResponse};
use crate::pages::{self, PageRequest, Site};
use crate::request::page::CostClass;
use axum::body::Body;
use axum::extract::{ConnectInfo, Request};
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// How long a client may take to send its login form.
const POST_TIMEOUT: Duration = Duration::from_secs(10);

/// What the filter is told about `request` (parsed as `req` when it could be).
pub(super) fn auth_request(
    site: &Site,
    request: &Request,
    req: Option<&PageRequest>,
) -> AuthRequest {
    let uri = request.uri();
    let mut auth = AuthRequest::new(
        site,
        request.method().as_str(),
        uri.path(),
        uri.query(),
        req,
    );
    let headers = request.headers();
    let text = |name: HeaderName| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    auth.cookie = text(header::COOKIE);
    auth.referer = text(header::REFERER);
    auth.host = text(header::HOST);
    // Behind a trusted proxy that terminated TLS, the request came in over https.
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip());
    let trusted = peer.is_some_and(|ip| {
        site.config
            .globals
            .trusted_proxies
            .iter()
            .any(|n| n.contains(&ip))
    });
    if trusted && text(HeaderName::from_static("x-forwarded-proto")) == "https" {
        auth.https = "on".into();
    }
    auth
}

/// A POST: the login form when an auth-filter is configured and this is `/?p=login`, else 405.
pub(super) async fn post(app: &App, site: Arc<Site>, request: Request) -> Response {
    let uri = request.uri().clone();
    if site.config.globals.auth_filter.is_none() || !auth::is_login(&site, uri.path(), uri.query())
    {
        return (StatusCode::METHOD_NOT_ALLOWED, "Method not allowed\n").into_response();
    }
    let auth = auth_request(&site, &request, None);
    let client = super::client::of_request(&request, &site.config.globals.trusted_proxies);
    let body = match tokio::time::timeout(
        POST_TIMEOUT,
        read_at_most(request.into_body(), auth::MAX_POST),
    )
    .await
    {
        Ok(body) => body,
        Err(_) => {
            return super::to_http(pages::render_error(&site, 400, "Request timed out"), ());
        }
    };
    let worker_site = Arc::clone(&site);
    let job = move || auth::post(&worker_site, &auth, &body);
    match app
        .scheduler
        .run(CostClass::Cheap, super::client::client_key(client), job)
        .await
    {
        Ok(done) => match done.value {
            Ok(cgi) => cgi_response(cgi),
            Err(e) => {
                tracing::warn!("auth-filter: {e}");
                super::to_http(pages::render_error(&site, 500, "Login failed"), ())
            }
        },
        Err(shed) => super::to_http(super::page::shed_page(&site, shed), ()),
    }
}

/// The first `limit` bytes of a body (the rest is not read).
pub(super) async fn read_at_most(mut body: Body, limit: usize) -> Vec<u8> {
    use http_body::Body as _;
    let mut out = Vec::new();
    while out.len() < limit {
        let frame = std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)).await;
        match frame {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    out.extend_from_slice(&data);
                }
            }
            _ => break,
        }
    }
    out.truncate(limit);
    out
}

/// The filter's CGI response as HTTP, never stored by a shared cache.
fn cgi_response(cgi: CgiResponse) -> Response {
    let mut response = Response::new(Body::from(cgi.body));
    *response.status_mut() = StatusCode::from_u16(cgi.status).unwrap_or(StatusCode::OK);
    let headers = response.headers_mut();
    for (name, value) in &cgi.headers {
        let value = if name.eq_ignore_ascii_case("cache-control") {
            auth::private_cache_control(value)
        } else {
            value.clone()
        };
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            headers.append(n, v);
        }
    }
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("private"));
    }
    response
}
