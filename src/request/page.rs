//! The page table: every page cgitd serves, one row each. Dispatch, scheduling, cache headers
//! and metric labels all read the same row, so this is the one place that says what a page is.

/// A page cgitd serves. Site pages need no repository; every other page does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Page {
    Index,
    SiteAbout,
    Summary,
    Refs,
    Log,
    Tree,
    Blob,
    Plain,
    Commit,
    Diff,
    RawDiff,
    Patch,
    Tag,
    Atom,
    About,
    Snapshot,
    Blame,
    Stats,
    EsiDiff,
    CloneInfo,
    CloneHead,
    CloneObjects,
}

/// How a request's git work is scheduled: cheap work always goes first, expensive work may
/// occupy only part of the workers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CostClass {
    /// Bounded by object size and addressed by ids or refs (summary, commit, tree, …).
    Cheap,
    /// Grows with history or repository size (blame, path-limited logs, searches, stats, …).
    Expensive,
}

impl CostClass {
    pub const ALL: [CostClass; 2] = [CostClass::Cheap, CostClass::Expensive];

    /// The metric and log label: `cheap` or `expensive`.
    pub fn label(self) -> &'static str {
        match self {
            CostClass::Cheap => "cheap",
            CostClass::Expensive => "expensive",
        }
    }

    /// The position in [`CostClass::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

impl std::fmt::Display for CostClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// What a page's git work costs before its parameters are looked at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BaseCost {
    /// Bounded by the size of the objects the URL names.
    Cheap,
    /// Grows with history or repository size.
    Expensive,
    /// Depends on the parameters and the repository (see `pages::cost_class`).
    Depends,
}

/// Which of cgit's `cache-*-ttl` options governs a page (cgitrc(5), "cache-*-ttl").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TtlClass {
    /// `cache-root-ttl`: pages outside any repository.
    Root,
    /// `cache-about-ttl`.
    About,
    /// `cache-snapshot-ttl`.
    Snapshot,
    /// `cache-dynamic-ttl` with a revision in the URL, else `cache-repo-ttl` (`immutable`
    /// when every revision is a full id; pages may set their own `Cache-Control`).
    ByRevision,
}

/// One row of the page table.
pub struct PageRow {
    pub page: Page,
    /// The name in URLs (`/<repo>/<name>/…`, `?p=<name>`).
    pub name: &'static str,
    pub needs_repo: bool,
    pub cost: BaseCost,
    pub ttl: TtlClass,
    /// The `page` label of request metrics.
    pub metric_label: &'static str,
}

const fn row(
    page: Page,
    name: &'static str,
    needs_repo: bool,
    cost: BaseCost,
    ttl: TtlClass,
    metric_label: &'static str,
) -> PageRow {
    PageRow {
        page,
        name,
        needs_repo,
        cost,
        ttl,
        metric_label,
    }
}

use BaseCost::{Cheap, Depends, Expensive};
use TtlClass::ByRevision;

/// The page table, in the order of the [`Page`] variants.
pub const PAGES: &[PageRow] = &[
    row(
        Page::Index,
        "repolist",
        false,
        Cheap,
        TtlClass::Root,
        "repolist",
    ),
    row(
        Page::SiteAbout,
        "about",
        false,
        Cheap,
        TtlClass::Root,
        "site_about",
    ),
    row(Page::Summary, "summary", true, Cheap, ByRevision, "summary"),
    row(Page::Refs, "refs", true, Cheap, ByRevision, "refs"),
    row(Page::Log, "log", true, Depends, ByRevision, "log"),
    row(Page::Tree, "tree", true, Cheap, ByRevision, "tree"),
    row(Page::Blob, "blob", true, Cheap, ByRevision, "blob"),
    row(Page::Plain, "plain", true, Cheap, ByRevision, "plain"),
    row(Page::Commit, "commit", true, Cheap, ByRevision, "commit"),
    row(Page::Diff, "diff", true, Cheap, ByRevision, "diff"),
    row(Page::RawDiff, "rawdiff", true, Cheap, ByRevision, "rawdiff"),
    row(Page::Patch, "patch", true, Depends, ByRevision, "patch"),
    row(Page::Tag, "tag", true, Cheap, ByRevision, "tag"),
    row(Page::Atom, "atom", true, Depends, ByRevision, "atom"),
    row(Page::About, "about", true, Cheap, TtlClass::About, "about"),
    row(
        Page::Snapshot,
        "snapshot",
        true,
        Expensive,
        TtlClass::Snapshot,
        "snapshot",
    ),
    row(Page::Blame, "blame", true, Expensive, ByRevision, "blame"),
    row(Page::Stats, "stats", true, Expensive, ByRevision, "stats"),
    row(
        Page::EsiDiff,
        "esi-diff",
        true,
        Cheap,
        ByRevision,
        "esi_diff",
    ),
    row(Page::CloneInfo, "info", true, Cheap, ByRevision, "info"),
    row(Page::CloneHead, "HEAD", true, Cheap, ByRevision, "HEAD"),
    row(
        Page::CloneObjects,
        "objects",
        true,
        Cheap,
        ByRevision,
        "objects",
    ),
];

impl Page {
    /// The page named `name` in a URL, inside a repository or not.
    pub fn from_name(name: &str, in_repo: bool) -> Option<Page> {
        PAGES
            .iter()
            .find(|r| r.name == name && r.needs_repo == in_repo)
            .map(|r| r.page)
    }

    /// The page a URL without a page name shows.
    pub fn default_for(in_repo: bool) -> Page {
        if in_repo { Page::Summary } else { Page::Index }
    }

    pub fn row(self) -> &'static PageRow {
        &PAGES[self as usize]
    }

    pub fn name(self) -> &'static str {
        self.row().name
    }

    /// Whether the URL's path limits what the page shows (cgit's `want_vpath`): its path is
    /// then kept in the tabs, the feed link and the search form. Other pages' paths name
    /// something else (`refs/tags`, a snapshot file, a blob) and are not carried over.
    pub fn limits_by_path(self) -> bool {
        matches!(
            self,
            Page::Blame
                | Page::Commit
                | Page::Diff
                | Page::Log
                | Page::Patch
                | Page::RawDiff
                | Page::Stats
                | Page::Tree
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_in_variant_order() {
        for (i, row) in PAGES.iter().enumerate() {
            assert_eq!(row.page as usize, i, "{}", row.name);
            assert_eq!(row.page.row().name, row.name);
        }
    }

    #[test]
    fn names_resolve_by_scope() {
        assert_eq!(Page::from_name("about", false), Some(Page::SiteAbout));
        assert_eq!(Page::from_name("about", true), Some(Page::About));
        assert_eq!(Page::from_name("repolist", false), Some(Page::Index));
        assert_eq!(Page::from_name("repolist", true), None);
        assert_eq!(Page::from_name("log", true), Some(Page::Log));
        assert_eq!(Page::from_name("log", false), None);
        assert_eq!(Page::from_name("ls_cache", true), None);
        assert_eq!(Page::from_name("HEAD", true), Some(Page::CloneHead));
        assert_eq!(Page::from_name("head", true), None);
    }
}
