//! The URL parser: any path and query (split at the first `?`) gives a request or an error.
#![no_main]

use cgitd::config::Config;
use cgitd::request::url;
use libfuzzer_sys::fuzz_target;
use std::sync::LazyLock;

static CONFIG: LazyLock<Config> = LazyLock::new(|| {
    Config::from_text(
        "virtual-root=/git/\nrepo.url=a\nrepo.path=/nonexistent/a.git\n\
         repo.url=a/b\nrepo.path=/nonexistent/b.git\nrepo.url=c.git\nrepo.path=/nonexistent/c\n",
        "fuzz",
    )
});

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (path, query) = match text.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (text, None),
    };
    if let Err(e) = url::parse(&CONFIG, path, query) {
        assert!((400..500).contains(&e.status()), "{}", e.status());
    }
    url::percent_decode(data, true);
});
