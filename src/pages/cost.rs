//! The cost class of a request, decided before any git work from its page's row, its
//! parameters and what is known of the repository without reading objects.

use super::{PageRequest, Site};
use crate::git::commit_graph::BloomFilters;
use crate::request::Page;
use crate::request::page::{BaseCost, CostClass};

/// Log pages up to this offset are walked quickly even without a commit-graph.
const CHEAP_LOG_OFFSET: i64 = 500;

/// The class a request is scheduled in.
pub fn cost_class(site: &Site, req: &PageRequest) -> CostClass {
    match req.page.row().cost {
        BaseCost::Cheap => CostClass::Cheap,
        BaseCost::Expensive => CostClass::Expensive,
        BaseCost::Depends => depends(site, req),
    }
}

fn depends(site: &Site, req: &PageRequest) -> CostClass {
    let q = &req.query;
    let expensive_if = |yes: bool| {
        if yes {
            CostClass::Expensive
        } else {
            CostClass::Cheap
        }
    };
    match req.page {
        Page::Log => {
            let searched = q.q.is_some() || q.follow;
            let filtered = req.path.is_some() && !has_path_filters(site, req);
            let deep = q.ofs > CHEAP_LOG_OFFSET
                && !has_commit_graph(site, req)
                && !walks_commit_index(site, req);
            expensive_if(searched || filtered || deep)
        }
        Page::Atom => expensive_if(req.path.is_some() && !has_path_filters(site, req)),
        // A range of up to a thousand mails, each diffed.
        Page::Patch => expensive_if(q.id2.is_some()),
        _ => CostClass::Cheap,
    }
}

/// Whether the repository's commit-graph has changed-path filters: path-limited walks then
/// read no trees for commits that do not touch the path.
fn has_path_filters(site: &Site, req: &PageRequest) -> bool {
    repo_state(site, req).is_some_and(|state| state.bloom().is_some())
}

/// Whether the repository has a commit-graph: deep history walks then read no commits.
fn has_commit_graph(site: &Site, req: &PageRequest) -> bool {
    repo_state(site, req).is_some_and(|state| {
        BloomFilters::sources(state.git_dir())
            .iter()
            .any(|file| file.is_file())
    })
}

/// Whether a deep log page walks the commit index: its commits are in the index (as far as
/// known before the refs are read) and it is listed in the default order, which the index
/// walks; the graph's topological order reads the commits.
fn walks_commit_index(site: &Site, req: &PageRequest) -> bool {
    repo_state(site, req).is_some_and(|state| {
        let opts = &state.config.opts;
        let default_order = opts.commit_sort.is_none() && !opts.enable_commit_graph;
        default_order && state.commit_index_ready()
    })
}

fn repo_state<'s>(site: &'s Site, req: &PageRequest) -> Option<&'s crate::repos::RepoState> {
    site.repos.get(req.repo.as_deref()?).map(|state| &**state)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn class(url: &str, query: Option<&str>) -> CostClass {
        let config = Config::from_text("repo.url=r\nrepo.path=/nonexistent\n", "t");
        let req = crate::request::url::parse(&config, url, query).unwrap();
        cost_class(&Site::new(config), &req)
    }

    #[test]
    fn classifies_requests_before_git_work() {
        use CostClass::{Cheap, Expensive};
        let table = [
            ("/r/", None, Cheap),
            ("/", None, Cheap),
            ("/r/commit/", Some("id=abc"), Cheap),
            ("/r/tree/src", None, Cheap),
            ("/r/log/", None, Cheap),
            ("/r/log/", Some("ofs=200"), Cheap),
            ("/r/log/", Some("ofs=5000"), Expensive),
            ("/r/log/src", None, Expensive),
            ("/r/log/", Some("q=fix&qt=grep"), Expensive),
            ("/r/log/a", Some("follow=1"), Expensive),
            ("/r/blame/a", None, Expensive),
            ("/r/stats/", None, Expensive),
            ("/r/snapshot/r-1.tar.gz", None, Expensive),
            ("/r/atom/", None, Cheap),
            ("/r/atom/src", None, Expensive),
            ("/r/patch/", Some("id=a"), Cheap),
            ("/r/patch/", Some("id=a&id2=b"), Expensive),
            ("/r/objects/pack/x", None, Cheap),
        ];
        for (url, query, want) in table {
            assert_eq!(class(url, query), want, "{url} {query:?}");
        }
    }
}
