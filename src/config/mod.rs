//! cgitrc: parsing in cgit's single, order-sensitive pass into an immutable [`Config`] snapshot.

mod filter_spec;
mod options;
mod parse;
mod scan;

pub use filter_spec::FilterSpec;
pub use options::{
    CacheTtls, Globals, RepoConfig, RepoDefaults, SNAPSHOT_FORMATS, Scheduling, parse_snapshot_mask,
};

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How serious a configuration finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Warning,
    Error,
}

/// A finding about the configuration, located at `file:line` when it comes from a file.
#[derive(Clone, Debug)]
pub struct Diagnostic {
    pub severity: Severity,
    pub location: String,
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.severity {
            Severity::Warning => "warning",
            Severity::Error => "error",
        };
        write!(f, "{}: {kind}: {}", self.location, self.message)
    }
}

/// A complete, immutable configuration: globals as they stand at the end of the file and every
/// repository with the options it inherited when it was defined.
#[derive(Debug)]
pub struct Config {
    pub globals: Globals,
    pub repos: Vec<Arc<RepoConfig>>,
    pub diagnostics: Vec<Diagnostic>,
    /// Where this configuration came from (file path or "embedded default").
    pub source: String,
}

impl Config {
    /// Parses a cgitrc file. An unreadable main file is an error; everything else is a diagnostic.
    pub fn load(path: &Path) -> Result<Config, String> {
        let text = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut parser = parse::Parser::default();
        parser.parse_text(
            &String::from_utf8_lossy(&text),
            &path.display().to_string(),
            0,
        );
        Ok(parser.finish(path.display().to_string()))
    }

    /// Parses cgitrc text held in memory (tests and fuzzing); includes resolve from the filesystem.
    pub fn from_text(text: &str, name: &str) -> Config {
        let mut parser = parse::Parser::default();
        parser.parse_text(text, name, 0);
        parser.finish(name.to_string())
    }

    /// The embedded default: the repository `dir` is in (work tree or bare), plus repositories
    /// found below `dir`.
    pub fn embedded_default(dir: &Path) -> Config {
        let mut parser = parse::Parser::default();
        parser.set_global("remove-suffix", "1");
        parser.set_global("clone-url", "http://$HTTP_HOST/$CGIT_REPO_URL");
        if let Some(git_dir) = scan::own_git_dir(dir) {
            let name = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "repo".into());
            let name = name.strip_suffix(".git").unwrap_or(&name).to_string();
            parser.add_scanned_repo(&git_dir, &name);
        }
        parser.scan(dir, Some(EMBEDDED_SCAN_DEPTH), &[dir.to_path_buf()]);
        parser.finish("embedded default".into())
    }

    /// The repository with exactly this url that is reachable (not `repo.ignore`d).
    pub fn repo(&self, url: &str) -> Option<&Arc<RepoConfig>> {
        self.repos.iter().find(|r| !r.ignore && r.url == url)
    }

    /// Why this configuration must not be served, if it must not: an `auth-filter` of a kind
    /// that cannot be run (cgit refuses to start), as serving without it would expose what it
    /// protects.
    pub fn refusal(&self) -> Option<String> {
        let f = self.globals.auth_filter.as_ref()?;
        FilterSpec::parse(f)
            .err()
            .map(|why| format!("auth-filter={f}: {why}; refusing to serve without it"))
    }

    pub fn has_errors(&self) -> bool {
        self.diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error)
    }
}

/// How deep the embedded default looks for repositories below the working directory.
const EMBEDDED_SCAN_DEPTH: usize = 3;

/// Replaces `$NAME` and `${NAME}` by environment variables (unknown ones become empty), as cgit
/// does for include, scan-path, project-list, cache-root and clone URLs.
pub fn expand_macros(value: &str, lookup: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        let (name, consumed) = if let Some(braced) = after.strip_prefix('{') {
            match braced.find('}') {
                Some(end) => (&braced[..end], end + 2),
                None => ("", 0),
            }
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], end)
        };
        if consumed == 0 {
            out.push('$');
            rest = after;
            continue;
        }
        out.push_str(&lookup(name).unwrap_or_default());
        rest = &after[consumed..];
    }
    out.push_str(rest);
    out
}

fn env_lookup(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Resolves a path named in a cgitrc relative to the directory of that file.
fn resolve_relative(base: &str, value: &str) -> PathBuf {
    let p = PathBuf::from(value);
    if p.is_absolute() {
        return p;
    }
    match Path::new(base).parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.join(p),
        _ => p,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn macros_expand_plain_and_braced_names() {
        let lookup = |n: &str| (n == "HOST").then(|| "example.org".to_string());
        assert_eq!(
            expand_macros("/etc/cgitrc.d/$HOST", lookup),
            "/etc/cgitrc.d/example.org"
        );
        assert_eq!(expand_macros("${HOST}/x", lookup), "example.org/x");
        assert_eq!(expand_macros("a$MISSING/b", lookup), "a/b");
        assert_eq!(expand_macros("cost $", lookup), "cost $");
    }
}
