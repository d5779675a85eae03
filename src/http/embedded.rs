//! The stylesheet, logo, favicon and robots.txt shipped in the binary, and their compressed
//! forms, each made once (at the levels of kept pages) on its first request: every page a
//! browser loads asks for the stylesheet, which was compressed again for each of them.

use super::compress::{self, Coding, Effort};
use crate::pages::Site;
use axum::body::Body;
use axum::http::{HeaderValue, header};
use axum::response::Response;
use bytes::Bytes;
use std::sync::OnceLock;

struct Embedded {
    name: &'static str,
    body: &'static [u8],
    content_type: &'static str,
    /// The gzip, brotli and zstd forms, once made.
    variants: [OnceLock<Bytes>; 3],
}

impl Embedded {
    const fn new(name: &'static str, body: &'static [u8], content_type: &'static str) -> Self {
        Embedded {
            name,
            body,
            content_type,
            variants: [const { OnceLock::new() }; 3],
        }
    }

    /// The body in `coding`; `None` for identity.
    fn variant(&self, coding: Coding) -> Option<&Bytes> {
        let slot = match coding {
            Coding::Identity => return None,
            Coding::Gzip => 0,
            Coding::Brotli => 1,
            Coding::Zstd => 2,
        };
        Some(self.variants[slot].get_or_init(|| coding.compress(self.body, Effort::Stored)))
    }
}

static FILES: [Embedded; 4] = [
    Embedded::new(
        "cgit.css",
        include_bytes!("../../static/cgit.css"),
        "text/css",
    ),
    Embedded::new(
        "cgit.png",
        include_bytes!("../../static/cgit.png"),
        "image/png",
    ),
    Embedded::new(
        "favicon.ico",
        include_bytes!("../../static/favicon.ico"),
        "image/x-icon",
    ),
    Embedded::new(
        "robots.txt",
        include_bytes!("../../static/robots.txt"),
        "text/plain",
    ),
];

/// The embedded file at `path` (under the virtual root; the first three also at `/`, where
/// cgit's defaults, `css=/cgit.css` and the like, link them whatever the virtual root), in
/// `coding` when it is worth compressing.
pub fn serve(site: &Site, path: &str, coding: Coding) -> Option<Response> {
    let rel = path
        .strip_prefix(site.config.globals.virtual_root.as_str())
        .or_else(|| {
            let rel = path.strip_prefix('/')?;
            ["cgit.css", "cgit.png", "favicon.ico"]
                .contains(&rel)
                .then_some(rel)
        })?;
    let file = FILES.iter().find(|f| f.name == rel)?;
    let compressible = compress::compressible(file.content_type, file.body.len());
    let variant = compressible.then(|| file.variant(coding)).flatten();
    let body = match variant {
        Some(bytes) => Body::from(bytes.clone()),
        None => Body::from(file.body),
    };
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(file.content_type),
    );
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=86400"),
    );
    if compressible {
        headers.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    }
    if variant.is_some() {
        headers.insert(
            header::CONTENT_ENCODING,
            HeaderValue::from_static(coding.name()),
        );
    }
    Some(response)
}
