//! scan-path: finding git directories below a folder, and what cgit reads from each of them.

use super::Globals;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// A repository found by a scan.
pub(super) struct Found {
    /// The git directory.
    pub git_dir: PathBuf,
    /// The directory that was found (the work tree for `X/.git`).
    pub dir: PathBuf,
    /// Path of `dir` relative to the scan root, with `/` separators.
    pub rel: String,
}

/// A directory is a git directory when it has an `objects/` directory and a `HEAD` file.
pub(super) fn is_git_dir(dir: &Path) -> bool {
    dir.join("objects").is_dir() && dir.join("HEAD").is_file()
}

/// The git directory of `dir` itself: `dir` when bare, `dir/.git` for a work tree.
pub(super) fn own_git_dir(dir: &Path) -> Option<PathBuf> {
    if is_git_dir(dir) {
        Some(dir.to_path_buf())
    } else if is_git_dir(&dir.join(".git")) {
        Some(dir.join(".git"))
    } else {
        None
    }
}

/// Finds repositories below `root` (from `project-list` when set), honouring
/// scan-hidden-path, strict-export and `noweb`. Does not descend into repositories found.
pub(super) fn find_repositories(
    root: &Path,
    globals: &Globals,
    max_depth: Option<usize>,
    skip: &[PathBuf],
) -> Vec<Found> {
    let mut found = Vec::new();
    match &globals.project_list {
        Some(list) => {
            let text = fs::read_to_string(list).unwrap_or_default();
            for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
                let dir = root.join(line);
                if let Some(git_dir) = own_git_dir(&dir) {
                    consider(root, &dir, git_dir, globals, &mut found);
                }
            }
        }
        None => walk(root, root, globals, max_depth, skip, 0, &mut found),
    }
    found
}

fn walk(
    root: &Path,
    dir: &Path,
    globals: &Globals,
    max_depth: Option<usize>,
    skip: &[PathBuf],
    depth: usize,
    found: &mut Vec<Found>,
) {
    if max_depth.is_some_and(|max| depth > max) {
        return;
    }
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut children: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|e| globals.scan_hidden_path || !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .collect();
    children.sort();
    for child in children {
        if skip.contains(&child) {
            continue;
        }
        match own_git_dir(&child) {
            Some(git_dir) => consider(root, &child, git_dir, globals, found),
            None => walk(root, &child, globals, max_depth, skip, depth + 1, found),
        }
    }
}

fn consider(root: &Path, dir: &Path, git_dir: PathBuf, globals: &Globals, found: &mut Vec<Found>) {
    if git_dir.join("noweb").exists() {
        return;
    }
    if let Some(marker) = &globals.strict_export
        && !git_dir.join(marker).exists()
    {
        return;
    }
    let rel = dir
        .strip_prefix(root)
        .unwrap_or(dir)
        .to_string_lossy()
        .trim_matches('/')
        .to_string();
    found.push(Found {
        git_dir,
        dir: dir.to_path_buf(),
        rel,
    });
}

/// What cgit names a found repository (its url and name before `remove-suffix`, and what
/// `section-from-path` cuts): the path below the scan root, with `/.git` for a work tree's
/// git directory (`work/site/.git`).
pub(super) fn repo_rel(found: &Found) -> String {
    if found.git_dir != found.dir && !found.rel.is_empty() {
        format!("{}/.git", found.rel)
    } else if found.git_dir != found.dir {
        ".git".to_string()
    } else {
        found.rel.clone()
    }
}

/// cgit's section-from-path: N > 0 takes the first N components as the section, N < 0 all but
/// the last -N; the section is removed from the front of the name. `None` when not applicable.
pub(super) fn section_from_path(url: &str, n: i64) -> (Option<String>, String) {
    let slashes: Vec<usize> = url.match_indices('/').map(|(i, _)| i).collect();
    let cut = match n {
        0 => None,
        n if n > 0 => slashes.get(n as usize - 1).copied(),
        n => slashes
            .len()
            .checked_sub(n.unsigned_abs() as usize)
            .map(|i| slashes[i]),
    };
    match cut {
        Some(at) => (Some(url[..at].to_string()), url[at + 1..].to_string()),
        None => (None, url.to_string()),
    }
}

/// The repository's `description` file, first line.
pub(super) fn description(git_dir: &Path) -> Option<String> {
    let text = fs::read_to_string(git_dir.join("description")).ok()?;
    let line = text.lines().next()?.trim_end();
    (!line.is_empty()).then(|| line.to_string())
}

/// The owner of a directory: the account's full name (GECOS up to the first comma), else its
/// login name, from /etc/passwd.
pub(super) fn directory_owner(dir: &Path) -> Option<String> {
    let uid = fs::metadata(dir).ok()?.uid();
    let passwd = fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        if fields.len() < 5 || fields[2].parse::<u32>().ok()? != uid {
            return None;
        }
        let gecos = fields[4].split(',').next().unwrap_or("");
        Some(if gecos.is_empty() { fields[0] } else { gecos }.to_string())
    })
}

/// With enable-git-config: repository options from the repository's own git config, as
/// in-repo cgitrc keys (`gitweb.owner` → owner, … , `cgit.<key>` → key).
pub(super) fn git_config_options(git_dir: &Path) -> Vec<(String, String)> {
    let Ok(file) = gix::config::File::from_path_no_includes(
        git_dir.join("config"),
        gix::config::Source::Local,
    ) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for section in file.sections() {
        let header = section.header();
        let name = header.name().to_string().to_ascii_lowercase();
        if header.subsection_name().is_some() {
            continue;
        }
        for key in section.body().value_names() {
            let key = key.to_ascii_lowercase();
            let Some(value) = section.body().value(&key) else {
                continue;
            };
            let value = value.to_string();
            let mapped = match (name.as_str(), key.as_str()) {
                ("gitweb", "owner") => Some("owner".to_string()),
                ("gitweb", "description") => Some("desc".to_string()),
                ("gitweb", "category") => Some("section".to_string()),
                ("gitweb", "homepage") => Some("homepage".to_string()),
                ("cgit", k) => Some(k.to_string()),
                _ => None,
            };
            if let Some(k) = mapped {
                out.push((k, value));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::section_from_path;

    #[test]
    fn section_from_path_front_and_back() {
        assert_eq!(
            section_from_path("team/sub/repo", 1),
            (Some("team".into()), "sub/repo".into())
        );
        assert_eq!(
            section_from_path("team/sub/repo", -1),
            (Some("team/sub".into()), "repo".into())
        );
        assert_eq!(section_from_path("repo", 1), (None, "repo".into()));
        assert_eq!(section_from_path("a/b", 0), (None, "a/b".into()));
    }
}
