//! Typed cgitrc options: the global settings and the per-repository settings, with cgit's defaults.

use ipnet::IpNet;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Snapshot formats in cgit's fixed order, as (suffix, mime type).
pub const SNAPSHOT_FORMATS: &[(&str, &str)] = &[
    ("tar", "application/x-tar"),
    ("tar.gz", "application/x-gzip"),
    ("tar.bz2", "application/x-bzip2"),
    ("tar.lz", "application/x-lzip"),
    ("tar.xz", "application/x-xz"),
    ("tar.zst", "application/x-zstd"),
    ("zip", "application/x-zip"),
];

/// Parses a `snapshots=` value into a bit mask over [`SNAPSHOT_FORMATS`].
pub fn parse_snapshot_mask(value: &str) -> u32 {
    if let Ok(n) = value.trim().parse::<i64>() {
        return if n != 0 { 1 } else { 0 };
    }
    let mut mask = 0;
    for word in value.split_whitespace() {
        if word == "all" {
            return (1 << SNAPSHOT_FORMATS.len()) - 1;
        }
        let word = word.trim_start_matches('.');
        if let Some(i) = SNAPSHOT_FORMATS.iter().position(|(s, _)| *s == word) {
            mask |= 1 << i;
        }
    }
    mask
}

/// Options a repository inherits from the globals in force when its `repo.url` line is read.
#[derive(Clone, Debug, Default)]
pub struct RepoDefaults {
    pub section: String,
    pub snapshots: u32,
    pub enable_blame: bool,
    pub enable_commit_graph: bool,
    pub enable_follow_links: bool,
    pub enable_log_filecount: bool,
    pub enable_log_linecount: bool,
    pub enable_remote_branches: bool,
    pub enable_subject_links: bool,
    pub enable_html_serving: bool,
    pub enable_esi: bool,
    /// `enable-highlight=0` (cgitd): files are shown without in-process highlighting.
    pub no_highlight: bool,
    /// `clone-bundle-uri=1` (cgitd): protocol v2 clients are told of a bundle of the whole
    /// repository to fetch first (git's `bundle-uri`), served under the repository's URL.
    pub clone_bundle_uri: bool,
    pub max_stats: Option<String>,
    pub branch_sort_age: bool,
    pub commit_sort: Option<String>,
    pub module_link: Option<String>,
    pub readme: Vec<String>,
    pub clone_url: Option<String>,
    pub logo: Option<String>,
    pub logo_link: Option<String>,
    pub about_filter: Option<String>,
    pub commit_filter: Option<String>,
    pub source_filter: Option<String>,
    pub email_filter: Option<String>,
    pub owner_filter: Option<String>,
}

impl RepoDefaults {
    /// The filter specs that are set.
    pub fn filters(&self) -> impl Iterator<Item = &str> {
        [
            &self.about_filter,
            &self.commit_filter,
            &self.source_filter,
            &self.email_filter,
            &self.owner_filter,
        ]
        .into_iter()
        .filter_map(|f| f.as_deref())
    }
}

/// One repository as configured (explicitly or by scan-path).
#[derive(Clone, Debug, Default)]
pub struct RepoConfig {
    pub url: String,
    pub path: PathBuf,
    pub name: String,
    pub desc: String,
    pub owner: String,
    pub homepage: Option<String>,
    pub defbranch: Option<String>,
    pub snapshot_prefix: Option<String>,
    pub extra_head_content: Option<String>,
    pub module_links: BTreeMap<String, String>,
    pub hide: bool,
    pub ignore: bool,
    /// Set once the repository's first `repo.readme` replaced the inherited list.
    pub readme_overridden: bool,
    pub opts: RepoDefaults,
    /// Where the block started, for messages.
    pub origin: String,
}

impl RepoConfig {
    /// Snapshot formats enabled for this repository, as suffixes.
    pub fn snapshot_suffixes(&self) -> impl Iterator<Item = &'static str> + '_ {
        SNAPSHOT_FORMATS
            .iter()
            .enumerate()
            .filter(|(i, _)| self.opts.snapshots & (1 << i) != 0)
            .map(|(_, (s, _))| *s)
    }
}

/// Cache lifetimes in minutes (negative: never expires).
#[derive(Clone, Debug)]
pub struct CacheTtls {
    pub root: i64,
    pub repo: i64,
    pub dynamic: i64,
    pub r#static: i64,
    pub about: i64,
    pub snapshot: i64,
    pub scanrc: i64,
}

/// All global options, with cgit's defaults.
#[derive(Clone, Debug)]
pub struct Globals {
    pub root_title: String,
    pub root_desc: String,
    pub root_readme: Option<String>,
    pub max_repo_count: usize,
    pub max_repodesc_length: usize,
    pub enable_index_links: bool,
    pub enable_index_owner: bool,
    pub repository_sort_age: bool,
    pub section_sort: bool,
    pub case_sensitive_sort: bool,
    pub agefile: String,
    pub css: Vec<String>,
    pub js: Vec<String>,
    pub favicon: String,
    /// Contents of the `header=`, `footer=` and `head-include=` files, read when the
    /// configuration is loaded (a reload picks up edits).
    pub header: Option<String>,
    pub footer: Option<String>,
    pub head_include: Option<String>,
    pub robots: String,
    pub noheader: bool,
    pub embedded: bool,
    pub virtual_root: String,
    pub local_time: bool,
    pub noplainemail: bool,
    pub enable_http_clone: bool,
    pub enable_tree_linenumbers: bool,
    pub enable_filter_overrides: bool,
    pub clone_prefix: Option<String>,
    pub summary_branches: usize,
    pub summary_tags: usize,
    pub summary_log: usize,
    pub max_commit_count: usize,
    pub max_message_length: usize,
    pub max_blob_size: u64,
    pub max_atom_items: usize,
    pub side_by_side_diffs: bool,
    pub renamelimit: i64,
    pub mimetypes: BTreeMap<String, String>,
    pub mimetype_file: Option<PathBuf>,
    pub auth_filter: Option<String>,
    pub cache_size: i64,
    pub cache_root: String,
    pub ttl: CacheTtls,
    pub project_list: Option<PathBuf>,
    pub scan_hidden_path: bool,
    pub remove_suffix: bool,
    pub section_from_path: i64,
    pub enable_git_config: bool,
    pub strict_export: Option<String>,
    /// cgitd: byte budget of the rendered-fragment cache.
    pub fragment_cache_size: usize,
    /// cgitd: byte budget of the whole-response cache (0 turns it off).
    pub response_cache_size: usize,
    /// cgitd: byte budget of the clone packs kept in temporary files (0 turns it off).
    pub clone_cache_size: usize,
    /// cgitd: bytes of memory the process should stay under (0: only its cgroup's limit).
    pub memory_limit: u64,
    /// cgitd: path of the Prometheus metrics endpoint, if enabled.
    pub metrics_path: Option<String>,
    /// cgitd: signature line at the end of each patch.
    pub patch_signature: String,
    /// cgitd: how git work is scheduled (read at start; a reload does not change it).
    pub scheduling: Scheduling,
    /// cgitd: proxies whose `X-Forwarded-For` names the client (addresses or CIDR blocks).
    pub trusted_proxies: Vec<IpNet>,
    /// cgitd: one access-log line for every this-many requests (0: none).
    pub access_log_sample: u64,
    /// cgitd: a directory of the operator's static files, served under `static_url`.
    pub static_dir: Option<PathBuf>,
    pub static_url: String,
    /// cgitd: commits a search, path-limited log or stats page may look at (0: 200,000).
    pub walk_budget: usize,
    /// cgitd: watch refs with inotify (else stat them every 250 ms); read at start.
    pub watch_refs: bool,
    /// cgitd: warm handles kept over all repositories, and warm object handles (with their
    /// caches) over all object stores; read at start.
    pub max_warm_handles: usize,
    pub defaults: RepoDefaults,
}

/// cgitd's scheduling options; 0 means "derive from the machine" for the counts and "the
/// built-in default" for the deadlines.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scheduling {
    /// `git-workers`: threads doing git work.
    pub workers: usize,
    /// `git-expensive-workers`: how many of them may run expensive work at once.
    pub expensive_workers: usize,
    /// `queue-deadline-cheap` (milliseconds): a cheap request waiting longer is answered 503.
    pub cheap_deadline_ms: u64,
    /// `queue-deadline-expensive` (milliseconds).
    pub expensive_deadline_ms: u64,
}

impl Default for Globals {
    fn default() -> Self {
        Globals {
            root_title: "Git repository browser".into(),
            root_desc: "a fast webinterface for the git dscm".into(),
            root_readme: None,
            max_repo_count: 50,
            max_repodesc_length: 80,
            enable_index_links: false,
            enable_index_owner: true,
            repository_sort_age: false,
            section_sort: true,
            case_sensitive_sort: true,
            agefile: "info/web/last-modified".into(),
            css: vec!["/cgit.css".into()],
            js: Vec::new(),
            favicon: "/favicon.ico".into(),
            header: None,
            footer: None,
            head_include: None,
            robots: "index, nofollow".into(),
            noheader: false,
            embedded: false,
            virtual_root: "/".into(),
            local_time: false,
            noplainemail: false,
            enable_http_clone: true,
            enable_tree_linenumbers: true,
            enable_filter_overrides: false,
            clone_prefix: None,
            summary_branches: 10,
            summary_tags: 10,
            summary_log: 10,
            max_commit_count: 50,
            max_message_length: 80,
            max_blob_size: 0,
            max_atom_items: 10,
            side_by_side_diffs: false,
            renamelimit: -1,
            mimetypes: BTreeMap::new(),
            mimetype_file: None,
            auth_filter: None,
            cache_size: 0,
            cache_root: "/var/cache/cgit".into(),
            ttl: CacheTtls {
                root: 5,
                repo: 5,
                dynamic: 5,
                r#static: -1,
                about: 15,
                snapshot: 5,
                scanrc: 15,
            },
            project_list: None,
            scan_hidden_path: false,
            remove_suffix: false,
            section_from_path: 0,
            enable_git_config: false,
            strict_export: None,
            fragment_cache_size: 64 << 20,
            response_cache_size: 64 << 20,
            clone_cache_size: 1 << 30,
            memory_limit: 0,
            metrics_path: None,
            scheduling: Scheduling::default(),
            trusted_proxies: Vec::new(),
            access_log_sample: 0,
            walk_budget: 0,
            watch_refs: true,
            max_warm_handles: 64,
            static_dir: None,
            static_url: "/static/".into(),
            patch_signature: concat!("cgitd ", env!("CARGO_PKG_VERSION")).into(),
            defaults: RepoDefaults {
                logo: Some("/cgit.png".into()),
                ..RepoDefaults::default()
            },
        }
    }
}
