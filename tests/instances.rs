//! Several cgitd instances: on the same repositories, and on `cp -a` copies of them, they give
//! the same ETags and bytes, revalidate each other's validators, and share ESI fragments behind
//! one varnishd with contrib/varnish/cgitd-cluster.vcl.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::time::Duration;

struct Fixture {
    root: PathBuf,
    small: String,
}

/// Fork `a` and a `--shared` fork `b` of it with one commit of its own, under `repos/`.
static FIXTURE: LazyLock<Fixture> = LazyLock::new(|| build(&shared_dir("instances")));

fn build(root: &Path) -> Fixture {
    let work = root.join("work");
    init_repo(&work);
    write(&work, "src/lib.rs", "fn one() {}\n".repeat(20));
    write(&work, "README", "hello\n");
    commit_all(&work, "root commit", "2024-01-01T00:00:00+00:00");
    write(&work, "src/lib.rs", "fn one() {}\nfn two() {}\n".repeat(12));
    let small = commit_all(&work, "small change", "2024-01-02T00:00:00+00:00");
    git(&work, &["tag", "-a", "v1", "-m", "version one"]);
    let repos = root.join("repos");
    std::fs::create_dir_all(&repos).unwrap();
    git(&repos, &["clone", "-q", "--bare", "../work", "a.git"]);
    git(
        &repos,
        &["clone", "-q", "--bare", "--shared", "a.git", "b.git"],
    );
    let b_work = root.join("bwork");
    git(root, &["clone", "-q", "repos/b.git", "bwork"]);
    write(&b_work, "fork.txt", "only in b\n");
    commit_all(&b_work, "fork-only commit", "2024-01-06T00:00:00+00:00");
    git(&b_work, &["push", "-q", "origin", "main"]);
    Fixture {
        root: root.to_path_buf(),
        small,
    }
}

/// A cgitrc in `dir` scanning `dir/repos`, with `extra` options before the scan.
fn rc_in(dir: &Path, extra: &str) -> PathBuf {
    let rc = dir.join(format!("cgitrc-{}", extra.len()));
    std::fs::write(
        &rc,
        format!(
            "virtual-root=/\nclone-url=http://$HTTP_HOST/$CGIT_REPO_URL\n{extra}\nremove-suffix=1\nscan-path={}\n",
            dir.join("repos").display()
        ),
    )
    .unwrap();
    rc
}

const HOST: &str = "git.example.org";

fn get(server: &Server, target: &str, headers: &[(&str, &str)]) -> Response {
    request_as(&server.addr, HOST, "GET", target, headers)
}

fn urls(small: &str) -> Vec<String> {
    [
        "/",
        "/a/",
        "/a/log/",
        "/a/tree/",
        "/a/tree/src/lib.rs",
        "/a/commit/",
        "/b/summary/",
        "/b/log/?h=main",
        "/b/tree/?h=v1",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([
        format!("/a/commit/?id={small}"),
        format!("/b/commit/?id={}", &small[..10]),
        format!("/b/diff/?id={small}&dt=1"),
    ])
    .collect()
}

#[test]
fn instances_give_equal_etags_and_bytes_and_revalidate_each_other() {
    let fx = &*FIXTURE;
    let copy = copy_of(&fx.root, "instances-copy");
    let one = Server::start(&rc_in(&fx.root, ""));
    let two = Server::start(&rc_in(&fx.root, ""));
    let three = Server::start(&rc_in(copy.path(), ""));
    for url in urls(&fx.small) {
        let first = get(&one, &url, &[]);
        assert_eq!(first.status, 200, "{url}: {}", first.text());
        let etag = first.header("etag").expect("an ETag").to_string();
        for (name, other) in [("same repositories", &two), ("a cp -a copy", &three)] {
            let r = get(other, &url, &[]);
            assert_eq!(r.status, 200, "{url} ({name})");
            assert_eq!(
                r.header("etag"),
                Some(etag.as_str()),
                "ETag of {url} ({name})"
            );
            if r.body != first.body {
                panic!(
                    "{url} differs between instances ({name}):\n{}",
                    line_diff(&first.text(), &r.text())
                );
            }
            let revalidated = get(other, &url, &[("If-None-Match", &etag)]);
            assert_eq!(revalidated.status, 304, "{url} revalidated ({name})");
            assert_eq!(revalidated.header("etag"), Some(etag.as_str()));
        }
    }
    // Content, not the instance, decides: another ref value is another ETag everywhere.
    let before = get(&three, "/a/log/", &[]);
    git(
        &copy.path().join("repos/a.git"),
        &["tag", "new-tag", "HEAD~1"],
    );
    let changed = (0..40).find_map(|_| {
        std::thread::sleep(Duration::from_millis(100));
        let r = get(&three, "/a/log/", &[]);
        (r.header("etag") != before.header("etag")).then_some(r)
    });
    let changed = changed.expect("a new tag changes the ETag");
    assert!(changed.text().contains("new-tag"));
    let original = get(&one, "/a/log/", &[]);
    assert_eq!(original.header("etag"), before.header("etag"));
}

#[test]
fn etags_follow_configuration_content() {
    let fx = &*FIXTURE;
    let one = Server::start(&rc_in(&fx.root, ""));
    let other = Server::start(&rc_in(&fx.root, "root-title=Another title"));
    for url in ["/", "/a/", "/a/log/"] {
        let a = get(&one, url, &[]);
        let b = get(&other, url, &[]);
        assert_eq!((a.status, b.status), (200, 200), "{url}");
        assert_ne!(a.header("etag"), b.header("etag"), "{url}");
    }
}

/// The value of the request counter for `page` and `status` in a Prometheus text `page`.
#[test]
fn a_cluster_behind_varnish_shares_fragments_and_validators() {
    let fx = &*FIXTURE;
    let rc = rc_in(&fx.root, "enable-esi=1\nmetrics-path=/metrics");
    let a = Server::start(&rc);
    let b = Server::start(&rc);
    let port = |s: &Server| s.addr.rsplit_once(':').unwrap().1.to_string();
    let cluster = Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/varnish/cgitd-cluster.vcl");
    // The shipped VCL shards requests over the instances; the test pins a request to one of
    // them with a header, after the shipped code has chosen (vcl_backend_fetch runs later).
    let vcl = format!(
        "vcl 4.1;\nimport directors;\n\
         backend one {{ .host = \"127.0.0.1\"; .port = \"{}\"; }}\n\
         backend two {{ .host = \"127.0.0.1\"; .port = \"{}\"; }}\n\
         sub vcl_init {{\n new cgitd = directors.shard();\n cgitd.add_backend(one);\n \
         cgitd.add_backend(two);\n cgitd.reconfigure();\n}}\n\
         include \"{}\";\n\
         sub vcl_backend_fetch {{\n\
           if (bereq.http.X-Test-Backend == \"a\") {{ set bereq.backend = one; }}\n\
           if (bereq.http.X-Test-Backend == \"b\") {{ set bereq.backend = two; }}\n}}\n",
        port(&a),
        port(&b),
        cluster.display()
    );
    let varnish = Varnish::start_vcl(&vcl);
    let small = &fx.small;
    // What an instance renders itself, for the Host Varnish passes on (clone URLs name it).
    let direct = |s: &Server, url: &str| {
        request_as(&s.addr, &varnish.addr, "GET", url, &[]).text_with(200, url)
    };
    let direct_a = direct(&a, &format!("/a/commit/?id={small}"));
    let via_a = varnish.request(
        &format!("/a/commit/?id={small}"),
        &[("X-Test-Backend", "a")],
    );
    assert_eq!(via_a.text_with(200, "fork a through A"), direct_a);
    let (a_frags, b_frags) = (a.answers("esi_diff", 200), b.answers("esi_diff", 200));
    assert_eq!((a_frags, b_frags), (1, 0), "the fragment is rendered by A");

    // Fork b's page for the same commit, through B: B renders the frame, the fragment A
    // rendered comes from Varnish.
    let hits_before = varnish.stat("MAIN.cache_hit");
    let via_b = varnish.request(
        &format!("/b/commit/?id={small}"),
        &[("X-Test-Backend", "b")],
    );
    let html = via_b.text_with(200, "fork b through B");
    assert!(html.contains("href='/b/log/'") && !html.contains("href='/a/"));
    assert_eq!(html, direct(&b, &format!("/b/commit/?id={small}")));
    assert_eq!(b.answers("commit", 200), 2, "B rendered the frame");
    assert_eq!(b.answers("esi_diff", 200), 0, "B rendered no fragment");
    assert_eq!(a.answers("esi_diff", 200), 1, "once for the cluster");
    let hit = (0..40).any(|_| {
        std::thread::sleep(Duration::from_millis(50));
        varnish.stat("MAIN.cache_hit") > hits_before
    });
    assert!(hit, "the fragment is a Varnish hit through B");

    // A page kept one second: fetched through A, revalidated through B (and the reverse).
    for (first, second, second_server) in [("a", "b", &b), ("b", "a", &a)] {
        let url = format!("/{first}/log/");
        let fresh = varnish.request(&url, &[("X-Test-Backend", first)]);
        let body = fresh.text_with(200, "log through the first instance");
        let not_modified_before = second_server.answers("log", 304);
        let fetch_304_before = varnish.stat("MAIN.fetch_304");
        std::thread::sleep(Duration::from_millis(1500));
        let again = varnish.request(&url, &[("X-Test-Backend", second)]);
        assert_eq!(again.text_with(200, "log again"), body);
        assert_eq!(
            second_server.answers("log", 304),
            not_modified_before + 1,
            "{url}: the other instance answered the revalidation with 304"
        );
        let counted = (0..40).any(|_| {
            std::thread::sleep(Duration::from_millis(50));
            varnish.stat("MAIN.fetch_304") > fetch_304_before
        });
        assert!(counted, "{url}: Varnish counted a 304 fetch");
    }
}
