//! Mime types for raw files: `mimetype.<ext>`, then the `mimetype-file` (mime.types format),
//! then a small built-in table; and cgit's rule for serving them safely.

use crate::config::Globals;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// Types known without configuration.
const BUILTIN: &[(&str, &str)] = &[
    ("css", "text/css"),
    ("gif", "image/gif"),
    ("htm", "text/html"),
    ("html", "text/html"),
    ("ico", "image/x-icon"),
    ("jpeg", "image/jpeg"),
    ("jpg", "image/jpeg"),
    ("js", "application/javascript"),
    ("json", "application/json"),
    ("mp3", "audio/mpeg"),
    ("mp4", "video/mp4"),
    ("ogg", "audio/ogg"),
    ("pdf", "application/pdf"),
    ("png", "image/png"),
    ("svg", "image/svg+xml"),
    ("txt", "text/plain"),
    ("wav", "audio/wav"),
    ("webm", "video/webm"),
    ("webp", "image/webp"),
    ("woff", "font/woff"),
    ("woff2", "font/woff2"),
    ("xml", "text/xml"),
];

/// The configured or known type of a file name, if any.
pub fn for_filename(g: &Globals, name: &[u8]) -> Option<String> {
    let name = String::from_utf8_lossy(name);
    let (_, ext) = name.rsplit_once('.')?;
    let ext = ext.to_ascii_lowercase();
    if let Some((_, t)) = g
        .mimetypes
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(&ext))
    {
        return Some(t.clone());
    }
    if let Some(file) = &g.mimetype_file
        && let Some(t) = mime_file(file).get(&ext)
    {
        return Some(t.clone());
    }
    BUILTIN
        .iter()
        .find(|(e, _)| *e == ext)
        .map(|(_, t)| t.to_string())
}

/// The Content-Type to serve `data` as. Without `enable-html-serving`, anything a browser could
/// run (`text/*`, `application/*` but pdf) is served as plain text or octet-stream instead.
pub fn serve_as(declared: Option<String>, binary: bool, html_serving: bool) -> String {
    let sniffed = if binary {
        "application/octet-stream"
    } else {
        "text/plain"
    };
    let mime = declared.unwrap_or_else(|| sniffed.to_string());
    let risky = mime.starts_with("text/")
        || (mime.starts_with("application/") && mime != "application/pdf");
    let mime = if risky && !html_serving {
        sniffed.to_string()
    } else {
        mime
    };
    if mime.starts_with("text/") {
        format!("{mime}; charset=UTF-8")
    } else {
        mime
    }
}

/// Extension (lower case) to mime type.
type ExtensionMap = HashMap<String, String>;

/// A parsed mime.types file, read once per path.
fn mime_file(path: &Path) -> Arc<ExtensionMap> {
    static FILES: OnceLock<Mutex<HashMap<PathBuf, Arc<ExtensionMap>>>> = OnceLock::new();
    let mut files = FILES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    Arc::clone(files.entry(path.to_path_buf()).or_insert_with(|| {
        Arc::new(parse_mime_types(
            &std::fs::read_to_string(path).unwrap_or_default(),
        ))
    }))
}

/// `type ext ext...` lines; `#` starts a comment.
fn parse_mime_types(text: &str) -> HashMap<String, String> {
    let mut map = HashMap::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or_default();
        let mut words = line.split_whitespace();
        let Some(mime) = words.next() else { continue };
        for ext in words {
            map.entry(ext.to_ascii_lowercase())
                .or_insert_with(|| mime.to_string());
        }
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn risky_types_are_neutered() {
        assert_eq!(
            serve_as(Some("text/html".into()), false, false),
            "text/plain; charset=UTF-8"
        );
        assert_eq!(
            serve_as(Some("text/html".into()), false, true),
            "text/html; charset=UTF-8"
        );
        assert_eq!(
            serve_as(Some("application/javascript".into()), true, false),
            "application/octet-stream"
        );
        assert_eq!(
            serve_as(Some("application/pdf".into()), true, false),
            "application/pdf"
        );
        assert_eq!(serve_as(Some("image/png".into()), true, false), "image/png");
        assert_eq!(serve_as(None, false, true), "text/plain; charset=UTF-8");
    }

    #[test]
    fn mime_types_files_parse() {
        let map = parse_mime_types("# c\ntext/x-rust rs\nimage/png png PNG\n\n");
        assert_eq!(map["rs"], "text/x-rust");
        assert_eq!(map["png"], "image/png");
    }
}
