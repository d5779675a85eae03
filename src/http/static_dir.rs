//! An operator's directory of static files (cgitd-only `static-dir=`, served under
//! `static-url=`): themes, logos and favicons without another web server. No listings, nothing
//! outside the directory (no `..`, no symbolic link followed), types from the file name, long
//! cache headers.

use crate::confined_files::{self as files, FileError};
use crate::pages::{self, Site};
use std::sync::Arc;

/// How long browsers and proxies may keep an operator's file: a day.
const CACHE_CONTROL: &str = "public, max-age=86400";

/// The response for `path` when it lies under the configured URL prefix; `None` otherwise.
pub fn serve(site: &Site, path: &str) -> Option<pages::Response> {
    let g = &site.config.globals;
    let dir = g.static_dir.as_ref()?;
    let rel = path.strip_prefix(g.static_url.as_str())?;
    let refused = |status: u16| Some(pages::render_error(site, status, "Not found"));
    let parts = match files::checked_components(rel.as_bytes()) {
        Ok(parts) => parts,
        Err(_) => return refused(404),
    };
    let file = match files::open_file(dir, &parts) {
        Ok(file) => file,
        Err(FileError::Forbidden) => return refused(403),
        Err(FileError::Internal(e)) => {
            tracing::warn!("static file {path}: {e}");
            return refused(404);
        }
        Err(_) => return refused(404),
    };
    let len = file.metadata().ok()?.len();
    let name = parts.last().copied().unwrap_or_default();
    let content_type = pages::parts::mime::for_filename(g, name.as_bytes())
        .unwrap_or_else(|| "application/octet-stream".into());
    Some(pages::Response {
        status: 200,
        content_type,
        headers: vec![("Cache-Control", CACHE_CONTROL.into())],
        body: pages::Body::File {
            file: Arc::new(file),
            offset: 0,
            len,
        },
    })
}
