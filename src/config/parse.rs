//! The single-pass cgitrc reader: applies each `key=value` line as it is read, like cgit.

use super::options::{Globals, RepoConfig, RepoDefaults, parse_snapshot_mask};
use super::{Config, Diagnostic, Severity, env_lookup, expand_macros, resolve_relative};
use ipnet::IpNet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Nesting limit for `include=`.
const MAX_INCLUDE_DEPTH: usize = 8;

/// Parser state: the globals in force now, the repositories defined so far, and which one
/// `repo.*` keys apply to.
#[derive(Default)]
pub(super) struct Parser {
    globals: Globals,
    repos: Vec<RepoConfig>,
    current: Option<usize>,
    diagnostics: Vec<Diagnostic>,
    css_set: bool,
    js_set: bool,
}

/// Where a key comes from: the main cgitrc (globals and `repo.*`) or an in-repo `cgitrc`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    Main,
    InRepo,
}

impl Parser {
    pub(super) fn parse_text(&mut self, text: &str, file: &str, depth: usize) {
        for (n, line) in text.lines().enumerate() {
            let location = format!("{file}:{}", n + 1);
            let line = line.trim_start();
            if line.starts_with('#') || line.starts_with(';') {
                continue;
            }
            let Some((key, value)) = line.split_once('=') else {
                continue;
            };
            let value = value.strip_suffix('\r').unwrap_or(value);
            self.apply(key, value, &location, file, depth);
        }
    }

    pub(super) fn finish(mut self, source: String) -> Config {
        for repo in &self.repos {
            if repo.path.as_os_str().is_empty() {
                self.diagnostics.push(Diagnostic {
                    severity: Severity::Error,
                    location: repo.origin.clone(),
                    message: format!("repository '{}' has no repo.path", repo.url),
                });
            }
        }
        Config {
            globals: self.globals,
            repos: self.repos.into_iter().map(Arc::new).collect(),
            diagnostics: self.diagnostics,
            source,
        }
    }

    /// Sets a global option as a cgitrc line would (for the embedded default).
    pub(super) fn set_global(&mut self, key: &str, value: &str) {
        self.apply_global(key, value, "");
    }

    fn warn(&mut self, location: &str, message: String) {
        self.diagnostics.push(Diagnostic {
            severity: Severity::Warning,
            location: location.to_string(),
            message,
        });
    }

    fn error(&mut self, location: &str, message: String) {
        self.diagnostics.push(Diagnostic {
            severity: Severity::Error,
            location: location.to_string(),
            message,
        });
    }

    fn apply(&mut self, key: &str, value: &str, location: &str, file: &str, depth: usize) {
        if key == "repo.url" {
            self.start_repo(value, location);
        } else if let Some(repo_key) = key.strip_prefix("repo.") {
            match self.current {
                Some(i) => self.apply_repo_key(i, repo_key, value, location, Scope::Main),
                None => self.warn(location, format!("'{key}' before any repo.url is ignored")),
            }
        } else if matches!(key, "header" | "footer" | "head-include") {
            self.page_file(key, value, location, file);
        } else if key == "include" {
            self.include(value, location, file, depth);
        } else if key == "trusted-proxies" {
            match parse_networks(value) {
                Ok(nets) => self.globals.trusted_proxies = nets,
                Err(bad) => self.warn(
                    location,
                    format!("trusted-proxies: '{bad}' is not an address or CIDR block"),
                ),
            }
        } else if key == "scan-path" {
            let root = resolve_relative(file, &expand_macros(value, env_lookup));
            if root.is_dir() {
                self.scan(&root, None, &[]);
            } else {
                self.error(
                    location,
                    format!("scan-path {} is not a directory", root.display()),
                );
            }
        } else if !self.apply_global(key, value, file) {
            self.warn(location, format!("unknown option '{key}'"));
        }
    }

    fn include(&mut self, value: &str, location: &str, file: &str, depth: usize) {
        let path = resolve_relative(file, &expand_macros(value, env_lookup));
        if depth + 1 > MAX_INCLUDE_DEPTH {
            self.error(
                location,
                format!("include of {} nested too deeply", path.display()),
            );
            return;
        }
        match std::fs::read(&path) {
            Ok(text) => {
                let name = path.display().to_string();
                self.parse_text(&String::from_utf8_lossy(&text), &name, depth + 1);
            }
            Err(e) => self.warn(location, format!("include {}: {e}", path.display())),
        }
    }

    /// `header=`, `footer=`, `head-include=`: files whose contents go into every page, read now.
    fn page_file(&mut self, key: &str, value: &str, location: &str, file: &str) {
        let contents = if value.is_empty() {
            None
        } else {
            let path = resolve_relative(file, value);
            match std::fs::read(&path) {
                Ok(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
                Err(e) => {
                    self.warn(location, format!("{key} {}: {e}", path.display()));
                    None
                }
            }
        };
        let g = &mut self.globals;
        match key {
            "header" => g.header = contents,
            "footer" => g.footer = contents,
            _ => g.head_include = contents,
        }
    }

    fn start_repo(&mut self, url: &str, location: &str) {
        let url = url.trim_end_matches('/').to_string();
        if self.repos.iter().any(|r| r.url == url) {
            self.warn(location, format!("repository '{url}' defined again"));
        }
        self.repos
            .push(new_repo(url, &self.globals.defaults, location));
        self.current = Some(self.repos.len() - 1);
    }

    /// Adds a repository found by scan-path (or the embedded default) and makes it current.
    pub(super) fn add_scanned_repo(&mut self, git_dir: &Path, url: &str) -> usize {
        let mut repo = new_repo(
            url.to_string(),
            &self.globals.defaults,
            &git_dir.display().to_string(),
        );
        repo.path = git_dir.to_path_buf();
        self.repos.push(repo);
        self.current = Some(self.repos.len() - 1);
        self.repos.len() - 1
    }

    pub(super) fn scan(&mut self, root: &Path, max_depth: Option<usize>, skip: &[PathBuf]) {
        for found in super::scan::find_repositories(root, &self.globals, max_depth, skip) {
            self.add_found_repo(found);
        }
    }

    fn add_found_repo(&mut self, found: super::scan::Found) {
        let rel = super::scan::repo_rel(&found);
        let mut url = rel.clone();
        if self.globals.remove_suffix
            && let Some(stripped) = url.strip_suffix(".git")
        {
            url = stripped.trim_end_matches('/').to_string();
        }
        if url.is_empty() {
            return;
        }
        let i = self.add_scanned_repo(&found.git_dir, &url);
        if self.globals.enable_git_config {
            for (key, value) in super::scan::git_config_options(&found.git_dir) {
                let location = found.git_dir.join("config").display().to_string();
                self.apply_repo_key(i, &key, &value, &location, Scope::InRepo);
            }
        }
        // After the git config, as in cgit: where the path gives a section, it wins over
        // `gitweb.category`; the repository's own cgitrc (below) still overrides both.
        let (section, _) = super::scan::section_from_path(&rel, self.globals.section_from_path);
        if let Some(section) = section {
            let repo = &mut self.repos[i];
            if let Some(rest) = repo.name.strip_prefix(section.as_str()) {
                let rest = rest.strip_prefix('/').unwrap_or(rest);
                // cgit leaves an empty name here (`work/site/.git` in section `work/site`
                // with remove-suffix): keep the whole name instead.
                if !rest.is_empty() {
                    repo.name = rest.to_string();
                }
            }
            repo.opts.section = section;
        }
        if self.repos[i].owner.is_empty() {
            self.repos[i].owner = super::scan::directory_owner(&found.dir).unwrap_or_default();
        }
        if self.repos[i].desc == NO_DESCRIPTION
            && let Some(desc) = super::scan::description(&found.git_dir)
        {
            self.repos[i].desc = desc;
        }
        let rc = found.git_dir.join("cgitrc");
        if let Ok(text) = std::fs::read(&rc) {
            let name = rc.display().to_string();
            for (n, line) in String::from_utf8_lossy(&text).lines().enumerate() {
                let line = line.trim_start();
                if line.starts_with('#') || line.starts_with(';') {
                    continue;
                }
                if let Some((key, value)) = line.split_once('=') {
                    let loc = format!("{name}:{}", n + 1);
                    self.apply_repo_key(i, key, value.trim_end_matches('\r'), &loc, Scope::InRepo);
                }
            }
        }
    }

    fn apply_repo_key(&mut self, i: usize, key: &str, value: &str, location: &str, scope: Scope) {
        let overrides = self.globals.enable_filter_overrides;
        let global_snapshots = self.globals.defaults.snapshots;
        let repo = &mut self.repos[i];
        let flag = value.trim().parse::<i64>().map(|n| n != 0).unwrap_or(false);
        match key {
            "url" | "path" if scope == Scope::InRepo => {
                self.warn(
                    location,
                    format!("'{key}' is not allowed in a repository's cgitrc"),
                );
            }
            "path" => repo.path = PathBuf::from(value.trim_end_matches('/')),
            "name" => repo.name = value.to_string(),
            "desc" => repo.desc = value.to_string(),
            "owner" => repo.owner = value.to_string(),
            "homepage" => repo.homepage = Some(value.to_string()),
            "defbranch" => repo.defbranch = Some(value.to_string()),
            "section" => repo.opts.section = value.to_string(),
            "readme" => {
                if !repo.readme_overridden {
                    repo.opts.readme.clear();
                    repo.readme_overridden = true;
                }
                if !value.is_empty() {
                    repo.opts.readme.push(value.to_string());
                }
            }
            "snapshots" => repo.opts.snapshots = parse_snapshot_mask(value) & global_snapshots,
            "snapshot-prefix" => repo.snapshot_prefix = Some(value.to_string()),
            "clone-url" => repo.opts.clone_url = Some(value.to_string()),
            "logo" => repo.opts.logo = Some(value.to_string()),
            "logo-link" => repo.opts.logo_link = Some(value.to_string()),
            "extra-head-content" => repo.extra_head_content = Some(value.to_string()),
            "module-link" => repo.opts.module_link = Some(value.to_string()),
            "enable-blame" => repo.opts.enable_blame = flag,
            "enable-commit-graph" => repo.opts.enable_commit_graph = flag,
            "enable-follow-links" => repo.opts.enable_follow_links = flag,
            "enable-log-filecount" => repo.opts.enable_log_filecount = flag,
            "enable-log-linecount" => repo.opts.enable_log_linecount = flag,
            "enable-remote-branches" => repo.opts.enable_remote_branches = flag,
            "enable-subject-links" => repo.opts.enable_subject_links = flag,
            "enable-html-serving" => repo.opts.enable_html_serving = flag,
            "enable-esi" => repo.opts.enable_esi = flag,
            "enable-highlight" => repo.opts.no_highlight = !flag,
            "clone-bundle-uri" => repo.opts.clone_bundle_uri = flag,
            "branch-sort" => repo.opts.branch_sort_age = value == "age",
            "commit-sort" => repo.opts.commit_sort = sort_value(value),
            "max-stats" => repo.opts.max_stats = stats_value(value),
            "hide" => repo.hide = flag,
            "ignore" => repo.ignore = flag,
            "about-filter" | "commit-filter" | "source-filter" | "email-filter"
            | "owner-filter" => {
                if overrides {
                    let slot = match key {
                        "about-filter" => &mut repo.opts.about_filter,
                        "commit-filter" => &mut repo.opts.commit_filter,
                        "source-filter" => &mut repo.opts.source_filter,
                        "email-filter" => &mut repo.opts.email_filter,
                        _ => &mut repo.opts.owner_filter,
                    };
                    *slot = non_empty(value);
                } else {
                    self.warn(
                        location,
                        format!("repo.{key} ignored: enable-filter-overrides is not set"),
                    );
                }
            }
            _ => {
                if let Some(path) = key.strip_prefix("module-link.") {
                    repo.module_links
                        .insert(path.to_string(), value.to_string());
                } else {
                    self.warn(location, format!("unknown repository option '{key}'"));
                }
            }
        }
    }

    /// Applies a global option; false when the key is unknown.
    fn apply_global(&mut self, key: &str, value: &str, file: &str) -> bool {
        let g = &mut self.globals;
        let d = &mut g.defaults;
        let flag = atoi(value) != 0;
        let count = atoi(value).max(0) as usize;
        match key {
            "root-title" => g.root_title = value.into(),
            "root-desc" => g.root_desc = value.into(),
            // Set, even empty, it gives the index an about tab, as in cgit.
            "root-readme" => g.root_readme = Some(value.into()),
            "max-repo-count" => g.max_repo_count = count,
            "max-repodesc-length" => g.max_repodesc_length = count,
            "enable-index-links" => g.enable_index_links = flag,
            "enable-index-owner" => g.enable_index_owner = flag,
            "repository-sort" => g.repository_sort_age = value == "age",
            "section-sort" => g.section_sort = flag,
            "case-sensitive-sort" => g.case_sensitive_sort = flag,
            "agefile" => g.agefile = value.into(),
            "css" => push_list(&mut g.css, &mut self.css_set, value),
            "js" => push_list(&mut g.js, &mut self.js_set, value),
            "favicon" => g.favicon = value.into(),
            "logo" => d.logo = non_empty(value),
            "logo-link" => d.logo_link = non_empty(value),
            "robots" => g.robots = value.into(),
            "noheader" => g.noheader = flag,
            "embedded" => g.embedded = flag,
            "virtual-root" => {
                g.virtual_root = format!("{}/", value.trim_end_matches('/'));
            }
            "local-time" => g.local_time = flag,
            "noplainemail" => g.noplainemail = flag,
            "enable-http-clone" => g.enable_http_clone = flag,
            "enable-tree-linenumbers" => g.enable_tree_linenumbers = flag,
            "enable-filter-overrides" => g.enable_filter_overrides = flag,
            "clone-prefix" => g.clone_prefix = non_empty(value),
            "summary-branches" => g.summary_branches = count,
            "summary-tags" => g.summary_tags = count,
            "summary-log" => g.summary_log = count,
            "max-commit-count" => g.max_commit_count = count.max(1),
            "max-message-length" => g.max_message_length = count,
            "max-blob-size" => g.max_blob_size = count as u64,
            "max-atom-items" => g.max_atom_items = count,
            "side-by-side-diffs" => g.side_by_side_diffs = flag,
            "renamelimit" => g.renamelimit = atoi(value),
            "mimetype-file" => {
                g.mimetype_file = non_empty(value).map(|v| resolve_relative(file, &v))
            }
            "auth-filter" => g.auth_filter = non_empty(value),
            "cache-size" => g.cache_size = atoi(value),
            "cache-root" => g.cache_root = expand_macros(value, env_lookup),
            "cache-root-ttl" => g.ttl.root = atoi(value),
            "cache-repo-ttl" => g.ttl.repo = atoi(value),
            "cache-dynamic-ttl" => g.ttl.dynamic = atoi(value),
            "cache-static-ttl" => g.ttl.r#static = atoi(value),
            "cache-about-ttl" => g.ttl.about = atoi(value),
            "cache-snapshot-ttl" => g.ttl.snapshot = atoi(value),
            "cache-scanrc-ttl" => g.ttl.scanrc = atoi(value),
            "project-list" => {
                g.project_list =
                    non_empty(value).map(|v| resolve_relative(file, &expand_macros(&v, env_lookup)))
            }
            "scan-hidden-path" => g.scan_hidden_path = flag,
            "remove-suffix" => g.remove_suffix = flag,
            "section-from-path" => g.section_from_path = atoi(value),
            "enable-git-config" => g.enable_git_config = flag,
            "strict-export" => g.strict_export = non_empty(value),
            "fragment-cache-size" => g.fragment_cache_size = count,
            "response-cache-size" => g.response_cache_size = count,
            "clone-cache-size" => g.clone_cache_size = count,
            "memory-limit" => g.memory_limit = count as u64,
            "metrics-path" => g.metrics_path = non_empty(value),
            "patch-signature" => g.patch_signature = value.into(),
            "git-workers" => g.scheduling.workers = count,
            "git-expensive-workers" => g.scheduling.expensive_workers = count,
            "queue-deadline-cheap" => g.scheduling.cheap_deadline_ms = count as u64,
            "queue-deadline-expensive" => g.scheduling.expensive_deadline_ms = count as u64,
            "access-log" => g.access_log_sample = count as u64,
            "walk-budget" => g.walk_budget = count,
            "watch-refs" => g.watch_refs = flag,
            "max-warm-handles" => g.max_warm_handles = count,
            "static-dir" => g.static_dir = non_empty(value).map(|v| resolve_relative(file, &v)),
            "static-url" => g.static_url = format!("/{}/", value.trim_matches('/')),
            "section" => d.section = value.into(),
            "snapshots" => d.snapshots = parse_snapshot_mask(value),
            "enable-blame" => d.enable_blame = flag,
            "enable-commit-graph" => d.enable_commit_graph = flag,
            "enable-follow-links" => d.enable_follow_links = flag,
            "enable-log-filecount" => d.enable_log_filecount = flag,
            "enable-log-linecount" => d.enable_log_linecount = flag,
            "enable-remote-branches" => d.enable_remote_branches = flag,
            "enable-subject-links" => d.enable_subject_links = flag,
            "enable-html-serving" => d.enable_html_serving = flag,
            "enable-esi" => d.enable_esi = flag,
            "enable-highlight" => d.no_highlight = !flag,
            "clone-bundle-uri" => d.clone_bundle_uri = flag,
            "max-stats" => d.max_stats = stats_value(value),
            "branch-sort" => d.branch_sort_age = value == "age",
            "commit-sort" => d.commit_sort = sort_value(value),
            "module-link" => d.module_link = non_empty(value),
            "readme" => {
                if !value.is_empty() {
                    d.readme.push(value.into())
                }
            }
            "clone-url" => d.clone_url = non_empty(value),
            "about-filter" => d.about_filter = non_empty(value),
            "commit-filter" => d.commit_filter = non_empty(value),
            "source-filter" => d.source_filter = non_empty(value),
            "email-filter" => d.email_filter = non_empty(value),
            "owner-filter" => d.owner_filter = non_empty(value),
            _ => match key.strip_prefix("mimetype.") {
                Some(ext) if !ext.is_empty() => {
                    g.mimetypes
                        .insert(ext.to_ascii_lowercase(), value.to_string());
                }
                _ => return false,
            },
        }
        true
    }
}

/// The description cgit shows for a repository without one.
pub(super) const NO_DESCRIPTION: &str = "[no description]";

fn new_repo(url: String, defaults: &RepoDefaults, origin: &str) -> RepoConfig {
    let mut opts = defaults.clone();
    // cgit shows the global logo as it stands at the end of the file (a `logo=` after
    // `scan-path` counts too); only `repo.logo`/`repo.logo-link` override it.
    opts.logo = None;
    opts.logo_link = None;
    RepoConfig {
        name: url.clone(),
        url,
        desc: NO_DESCRIPTION.into(),
        opts,
        origin: origin.to_string(),
        ..RepoConfig::default()
    }
}

/// C's `atoi`: optional sign and leading digits, anything else ends the number; no digits is 0.
pub(super) fn atoi(value: &str) -> i64 {
    let s = value.trim_start();
    let (neg, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    let n = digits[..end]
        .parse::<i64>()
        .unwrap_or(if end > 0 { i64::MAX } else { 0 });
    if neg { -n } else { n }
}

fn non_empty(value: &str) -> Option<String> {
    (!value.is_empty()).then(|| value.to_string())
}

/// Repeatable list options: the first occurrence replaces the default; an empty value clears.
fn push_list(list: &mut Vec<String>, set: &mut bool, value: &str) {
    if !*set {
        list.clear();
        *set = true;
    }
    if value.is_empty() {
        list.clear();
    } else {
        list.push(value.to_string());
    }
}

fn sort_value(value: &str) -> Option<String> {
    matches!(value, "date" | "topo").then(|| value.to_string())
}

fn stats_value(value: &str) -> Option<String> {
    matches!(value, "week" | "month" | "quarter" | "year").then(|| value.to_string())
}

/// Addresses and CIDR blocks separated by spaces or commas; the first bad one on failure.
fn parse_networks(value: &str) -> Result<Vec<IpNet>, String> {
    value
        .split([' ', ',', '\t'])
        .filter(|w| !w.is_empty())
        .map(|w| {
            w.parse::<IpNet>()
                .or_else(|_| w.parse::<std::net::IpAddr>().map(IpNet::from))
                .map_err(|_| w.to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::Config;
    use super::atoi;

    #[test]
    fn atoi_matches_c() {
        assert_eq!(atoi("42"), 42);
        assert_eq!(atoi("  -7x"), -7);
        assert_eq!(atoi("abc"), 0);
        assert_eq!(atoi(""), 0);
    }

    #[test]
    fn repos_inherit_globals_in_force_when_defined() {
        let cfg = Config::from_text(
            "snapshots=tar.gz zip\nenable-blame=1\nsection=First\nrepo.url=a/\nrepo.path=/x\n\
             enable-blame=0\nsection=Second\nrepo.url=b\nrepo.path=/y\nrepo.snapshots=zip tar\n",
            "t",
        );
        assert_eq!(cfg.repos.len(), 2);
        let (a, b) = (&cfg.repos[0], &cfg.repos[1]);
        assert_eq!(a.url, "a");
        assert!(a.opts.enable_blame);
        assert_eq!(a.opts.section, "First");
        assert!(!b.opts.enable_blame);
        assert_eq!(b.opts.section, "Second");
        assert_eq!(b.snapshot_suffixes().collect::<Vec<_>>(), vec!["zip"]);
        assert_eq!(
            a.snapshot_suffixes().collect::<Vec<_>>(),
            vec!["tar.gz", "zip"]
        );
    }

    #[test]
    fn unknown_keys_warn_with_location() {
        let cfg = Config::from_text("# comment\nfrobnicate=1\nrepo.bogus=2\n", "rc");
        let msgs: Vec<String> = cfg.diagnostics.iter().map(|d| d.to_string()).collect();
        assert!(msgs[0].starts_with("rc:2: warning: unknown option 'frobnicate'"));
        assert!(msgs[1].starts_with("rc:3: warning:"));
    }

    #[test]
    fn filter_overrides_need_the_switch_first() {
        let cfg = Config::from_text(
            "repo.url=a\nrepo.path=/a\nrepo.commit-filter=/bin/x\nenable-filter-overrides=1\n\
             repo.url=b\nrepo.path=/b\nrepo.commit-filter=/bin/y\n",
            "rc",
        );
        assert_eq!(cfg.repos[0].opts.commit_filter, None);
        assert_eq!(cfg.repos[1].opts.commit_filter.as_deref(), Some("/bin/y"));
    }

    #[test]
    fn css_list_replaces_default_and_empty_clears() {
        let cfg = Config::from_text("css=/a.css\ncss=/b.css\n", "rc");
        assert_eq!(cfg.globals.css, vec!["/a.css", "/b.css"]);
        let cfg = Config::from_text("css=\n", "rc");
        assert!(cfg.globals.css.is_empty());
    }
}
