//! Property tests: the URL parser and the cgitrc parser never panic, whatever they are given.

use cgitd::config::Config;
use cgitd::request::url;
use proptest::prelude::*;

fn config() -> Config {
    Config::from_text(
        "repo.url=a\nrepo.path=/x\nrepo.url=a/b c\nrepo.path=/y\nrepo.url=p+q\nrepo.path=/z\n",
        "props",
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn url_parser_never_panics(path in "/[a-zA-Z0-9/%+ ._~?=&-]{0,60}", query in proptest::option::of(".{0,80}")) {
        let cfg = config();
        if let Ok(req) = url::parse(&cfg, &path, query.as_deref()) {
            // A matched repository is always a configured one.
            if let Some(repo) = &req.repo {
                prop_assert!(cfg.repo(repo).is_some());
            }
            if let Some(p) = &req.path {
                prop_assert!(!p.ends_with(b"/"));
            }
        }
    }

    #[test]
    fn url_parser_takes_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..120)) {
        let text = String::from_utf8_lossy(&bytes);
        let _ = url::parse(&config(), &format!("/{text}"), Some(&text));
    }

    #[test]
    fn cgitrc_parser_never_panics(lines in proptest::collection::vec(
        prop_oneof![
            "[a-z.-]{1,20}=[ -~]{0,30}",
            "repo\\.(url|path|name|desc|readme|snapshots|hide|ignore|section|module-link\\.x)=[ -~]{0,20}",
            "(section-from-path|max-repo-count|snapshots|css|virtual-root|max-blob-size)=[ -~]{0,20}",
            "include=[a-z]{0,8}",
            ".{0,40}",
        ], 0..40)) {
        let text = lines.join("\n");
        let cfg = Config::from_text(&text, "props");
        for repo in &cfg.repos {
            prop_assert!(!repo.url.ends_with('/') || repo.url.is_empty());
        }
    }
}
