//! cgit's `auth-filter` protocol. Every request first runs the filter's `authenticate-cookie`
//! phase (exit status 1 or `filter_close` returning 1: authenticated); an unauthenticated
//! request gets the "Authentication Required" page whose content the `body` phase writes; a
//! POST to `/?p=login` runs `authenticate-post` with the form on stdin (4096 bytes at most),
//! and the filter writes a whole CGI response (`Status:`, `Set-Cookie:`, `Location:` …).
//! The filter gets cgit's 12 arguments: action, cookie, method, query string, referer,
//! path info, host, https, repo, page, current full URL and login URL.
//!
//! Pages served with an auth-filter depend on the cookie, so they are `Cache-Control:
//! private`; the HTTP layer neither shares them between requests nor gives them to a surrogate.

use crate::filter;
use crate::pages::{self, PageRequest, Site};
use askama::Template;

/// The most of a login POST's body the filter gets, as in cgit.
pub const MAX_POST: usize = 4096;

/// What the filter is told about a request.
#[derive(Clone, Debug, Default)]
pub struct AuthRequest {
    pub cookie: String,
    pub method: String,
    pub query: String,
    pub referer: String,
    pub path_info: String,
    pub host: String,
    pub https: String,
    pub repo: String,
    pub page: String,
    pub current_url: String,
    pub login_url: String,
}

impl AuthRequest {
    /// The request for `path` and `query` (as received) with `method`, parsed as `req` when it
    /// could be; headers are filled in by the caller.
    pub fn new(
        site: &Site,
        method: &str,
        path: &str,
        query: Option<&str>,
        req: Option<&PageRequest>,
    ) -> AuthRequest {
        let vroot = site.config.globals.virtual_root.as_str();
        let rel = path
            .strip_prefix(vroot)
            .or_else(|| path.strip_prefix(vroot.trim_end_matches('/')))
            .unwrap_or(path)
            .trim_start_matches('/');
        let query = query.unwrap_or_default();
        let url_param = query.split('&').find_map(|p| p.strip_prefix("url="));
        let url = match url_param {
            Some(u) => {
                String::from_utf8_lossy(&crate::request::url::percent_decode(u.as_bytes(), true))
                    .into_owned()
            }
            None => rel.to_string(),
        };
        let rest: Vec<&str> = query
            .split('&')
            .filter(|p| !p.is_empty() && !p.starts_with("url="))
            .collect();
        let rest = if rest.is_empty() {
            String::new()
        } else {
            format!("?{}", rest.join("&"))
        };
        let root = if vroot.ends_with('/') {
            vroot.to_string()
        } else {
            format!("{vroot}/")
        };
        let page = match req {
            Some(r) if r.page_named => r.page.row().name.to_string(),
            Some(_) => String::new(),
            None => query
                .split('&')
                .find_map(|p| p.strip_prefix("p="))
                .unwrap_or_default()
                .to_string(),
        };
        AuthRequest {
            method: method.to_string(),
            query: query.to_string(),
            path_info: format!("/{rel}"),
            repo: req.and_then(|r| r.repo.clone()).unwrap_or_default(),
            page,
            current_url: format!("{root}{url}{rest}"),
            login_url: format!("{root}?p=login"),
            ..AuthRequest::default()
        }
    }

    fn args<'a>(&'a self, action: &'a str) -> [&'a str; 12] {
        [
            action,
            &self.cookie,
            &self.method,
            &self.query,
            &self.referer,
            &self.path_info,
            &self.host,
            &self.https,
            &self.repo,
            &self.page,
            &self.current_url,
            &self.login_url,
        ]
    }

    /// The CGI variables cgit's filter would inherit, and the repository's `CGIT_REPO_*`.
    fn env(&self, site: &Site, body_len: usize) -> Vec<(&'static str, String)> {
        let mut env = vec![
            ("GATEWAY_INTERFACE", "CGI/1.1".to_string()),
            ("HTTP_COOKIE", self.cookie.clone()),
            ("REQUEST_METHOD", self.method.clone()),
            ("QUERY_STRING", self.query.clone()),
            ("HTTP_REFERER", self.referer.clone()),
            ("PATH_INFO", self.path_info.clone()),
            ("HTTP_HOST", self.host.clone()),
            ("HTTPS", self.https.clone()),
            ("SCRIPT_NAME", String::new()),
            ("CONTENT_LENGTH", body_len.to_string()),
        ];
        if let Some(cfg) = site.config.repo(&self.repo) {
            let defbranch = cfg.defbranch.clone().unwrap_or_default();
            env.extend(filter::config_env(cfg, &defbranch));
        }
        env
    }
}

fn run(
    site: &Site,
    auth: &AuthRequest,
    action: &str,
    input: &[u8],
) -> Option<Result<filter::Output, String>> {
    let spec = site.config.globals.auth_filter.as_deref()?;
    Some(filter::apply(
        spec,
        &auth.args(action),
        &auth.env(site, input.len()),
        input,
    ))
}

/// Whether the request is authenticated: always without an auth-filter; with one, when its
/// `authenticate-cookie` phase says 1. A filter that fails authenticates nobody.
pub fn authenticated(site: &Site, auth: &AuthRequest) -> bool {
    match run(site, auth, "authenticate-cookie", b"") {
        None => true,
        Some(Ok(out)) => out.status == 1,
        Some(Err(e)) => {
            tracing::warn!("auth-filter: {e}");
            false
        }
    }
}

/// A page for a request with an auth-filter: the page when the cookie authenticates it (then
/// `private`), else the login page.
pub fn render(site: &Site, req: &PageRequest, auth: &AuthRequest) -> pages::Response {
    if !authenticated(site, auth) {
        return login_page(site, req, auth);
    }
    let mut response = pages::render(site, req);
    make_private(&mut response);
    response
}

#[derive(Template)]
#[template(source = "{{ html|safe }}", ext = "html")]
struct LoginBody<'a> {
    html: &'a str,
}

/// cgit's "Authentication Required" page, its content written by the filter's `body` phase.
pub fn login_page(site: &Site, req: &PageRequest, auth: &AuthRequest) -> pages::Response {
    let html = match run(site, auth, "body", b"") {
        Some(Ok(out)) => String::from_utf8_lossy(&out.out).into_owned(),
        Some(Err(e)) => {
            tracing::warn!("auth-filter: {e}");
            "<h2>Authentication Required</h2>".to_string()
        }
        None => String::new(),
    };
    let mut frame = pages::parts::frame::Frame::site(site, req, None);
    frame.title = "Authentication Required".to_string();
    let mut response = match pages::parts::frame::wrap(site, &frame, &LoginBody { html: &html }) {
        Ok(page) => pages::Response::html(page),
        Err(e) => pages::Response::text(format!("Authentication Required\n{e}\n")),
    };
    response
        .headers
        .push(("Cache-Control", "private, no-cache, no-store".to_string()));
    response
}

/// Marks a response as for this client only: `public` and `s-maxage` go, `private` comes in.
pub fn make_private(response: &mut pages::Response) {
    let mut found = false;
    for (name, value) in response.headers.iter_mut() {
        if !name.eq_ignore_ascii_case("Cache-Control") {
            continue;
        }
        found = true;
        *value = private_cache_control(value);
    }
    if !found {
        response
            .headers
            .push(("Cache-Control", "private".to_string()));
    }
}

/// `value` with `private` (unless it says `private` or `no-store`), without `public` and
/// `s-maxage`.
pub fn private_cache_control(value: &str) -> String {
    let mut parts: Vec<&str> = value
        .split(',')
        .map(str::trim)
        .filter(|d| {
            !d.is_empty()
                && !d.eq_ignore_ascii_case("public")
                && !d.to_ascii_lowercase().starts_with("s-maxage")
        })
        .collect();
    if !parts
        .iter()
        .any(|d| d.eq_ignore_ascii_case("private") || d.eq_ignore_ascii_case("no-store"))
    {
        parts.insert(0, "private");
    }
    parts.join(", ")
}

/// Whether a request is cgit's login endpoint: page `login` (`?p=login`) outside any
/// repository.
pub fn is_login(site: &Site, path: &str, query: Option<&str>) -> bool {
    let vroot = site.config.globals.virtual_root.trim_end_matches('/');
    let rel = path.strip_prefix(vroot).unwrap_or(path).trim_matches('/');
    let mut page = None;
    let mut repo = !rel.is_empty();
    for pair in query.unwrap_or_default().split('&') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "p" => page = Some(value),
            "r" | "url" if !value.is_empty() => repo = true,
            _ => {}
        }
    }
    page == Some("login") && !repo
}

/// A CGI response as a filter writes it.
#[derive(Debug, PartialEq, Eq)]
pub struct CgiResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// The filter's `authenticate-post` phase for a login form `body` (cut to [`MAX_POST`]).
pub fn post(site: &Site, auth: &AuthRequest, body: &[u8]) -> Result<CgiResponse, String> {
    let body = &body[..body.len().min(MAX_POST)];
    match run(site, auth, "authenticate-post", body) {
        None => Err("no auth-filter".into()),
        Some(result) => result.map(|out| parse_cgi(&out.out)),
    }
}

/// Headers up to the first empty line (`Status:` sets the status; `Location:` without it
/// means 302, as in CGI), then the body.
pub fn parse_cgi(out: &[u8]) -> CgiResponse {
    let mut status = None;
    let mut headers = Vec::new();
    let mut rest = out;
    while !rest.is_empty() {
        let (line, after) = match rest.iter().position(|&b| b == b'\n') {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, &rest[rest.len()..]),
        };
        rest = after;
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            break;
        }
        let line = String::from_utf8_lossy(line);
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let (name, value) = (name.trim(), value.trim());
        if name.eq_ignore_ascii_case("status") {
            status = value.split(' ').next().and_then(|s| s.parse().ok());
        } else {
            headers.push((name.to_string(), value.to_string()));
        }
    }
    let redirect = headers
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case("location"));
    CgiResponse {
        status: status.unwrap_or(if redirect { 302 } else { 200 }),
        headers,
        body: rest.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cgi_output_becomes_status_headers_and_body() {
        let r = parse_cgi(
            b"Status: 302 Redirect\nCache-Control: no-cache, no-store\nLocation: /r/\n\
              Set-Cookie: a=b; HttpOnly\n\n",
        );
        assert_eq!(r.status, 302);
        assert_eq!(r.headers.len(), 3);
        assert_eq!(r.headers[2], ("Set-Cookie".into(), "a=b; HttpOnly".into()));
        assert!(r.body.is_empty());
        let r = parse_cgi(b"Content-Type: text/plain\r\n\r\nhello\n");
        assert_eq!((r.status, r.body.as_slice()), (200, &b"hello\n"[..]));
        assert_eq!(parse_cgi(b"Location: /x\n").status, 302);
    }

    #[test]
    fn cache_control_becomes_private() {
        assert_eq!(
            private_cache_control("public, max-age=300"),
            "private, max-age=300"
        );
        assert_eq!(
            private_cache_control("no-cache, no-store"),
            "no-cache, no-store"
        );
        assert_eq!(
            private_cache_control("public, max-age=60, s-maxage=600"),
            "private, max-age=60"
        );
    }

    #[test]
    fn the_filter_gets_cgits_urls() {
        let site = Site::new(crate::config::Config::from_text(
            "virtual-root=/\nrepo.url=r\nrepo.path=/r\n",
            "rc",
        ));
        let req =
            crate::request::url::parse(&site.config, "/r/log/", Some("h=x&url=r/log/")).unwrap();
        let auth = AuthRequest::new(&site, "GET", "/r/log/", Some("h=x&url=r/log/"), Some(&req));
        assert_eq!(auth.current_url, "/r/log/?h=x");
        assert_eq!(auth.login_url, "/?p=login");
        assert_eq!((auth.repo.as_str(), auth.page.as_str()), ("r", "log"));
        assert!(is_login(&site, "/", Some("p=login")));
        assert!(!is_login(&site, "/r/", Some("p=login")));
        assert!(!is_login(&site, "/", Some("p=log")));
    }
}
