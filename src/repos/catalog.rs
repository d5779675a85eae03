//! The index's resident data: every listed repository's name, section, description and owner
//! (lower-cased for search), its idle time, and the index orders, computed once per
//! configuration (idle orders again when a repository's refs change), so that an index page
//! costs work for the rows it shows, not for every repository. Idle times are read again when
//! the ref watch reports a change (the agefile with them); for a repository without a watch,
//! when they are older than a quarter second.

use super::{RepoState, Watcher};
use crate::config::{Globals, RepoConfig};
use std::cmp::Ordering;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long idle times of repositories without a ref watch are trusted.
const IDLE_CHECK_INTERVAL: Duration = Duration::from_millis(250);

/// One listed repository.
struct Entry {
    config: Arc<RepoConfig>,
    state: Option<Arc<RepoState>>,
    /// url, name, description and owner, lower-cased, for `q=` search.
    lower: [String; 4],
}

/// An index order: positions into the entries.
type Order = Arc<Vec<u32>>;

/// The orders that depend on the configuration only.
struct StaticOrders {
    config: Order,
    name: Order,
    desc: Order,
    owner: Order,
    section: Order,
}

/// Idle times and the orders built from them.
struct IdleState {
    /// Each repository's idle time as last read.
    times: Vec<Option<i64>>,
    /// Whether that is current (else it is read again when it is needed).
    fresh: Vec<bool>,
    /// Each repository's count of watched ref changes when it was last marked (`None`: not
    /// watched then).
    seen: Vec<Option<u64>>,
    /// The watcher's epoch when the counts were last compared (`None`: never).
    epoch: Option<u64>,
    /// Whether some repository had no watch at the last comparison.
    unwatched: bool,
    /// When idle times of unwatched repositories were last marked stale.
    checked: Option<Instant>,
    /// The orders by idle time (all, and within sections), while no time read since differs.
    orders: Option<(Order, Order)>,
}

/// What an index request asks for: the sort, the filters and the page.
pub struct Query<'a> {
    pub sort: Option<&'a str>,
    pub prefix: Option<&'a str>,
    /// Already lower-cased.
    pub search: Option<&'a str>,
    pub offset: usize,
    /// Rows per page (`usize::MAX`: all).
    pub count: usize,
}

/// A page of the index: the rows and how many repositories matched.
pub struct Selection {
    pub total: usize,
    /// The first row's position among the matches (the offset, clamped).
    pub offset: usize,
    pub rows: Vec<(Arc<RepoConfig>, Option<i64>)>,
}

/// The index data of one configuration.
pub struct Catalog {
    entries: Vec<Entry>,
    case_sensitive: bool,
    section_sort: bool,
    sort_age: bool,
    agefile: String,
    watcher: Arc<Watcher>,
    orders: OnceLock<StaticOrders>,
    idle: Mutex<Option<IdleState>>,
}

impl Catalog {
    /// The listed (neither hidden nor ignored) repositories of `repos`, in configuration order.
    pub(super) fn new(
        repos: &[Arc<RepoConfig>],
        states: &HashMap<String, Arc<RepoState>>,
        g: &Globals,
        watcher: &Arc<Watcher>,
    ) -> Catalog {
        let entries = repos
            .iter()
            .filter(|r| !r.hide && !r.ignore)
            .map(|r| Entry {
                config: Arc::clone(r),
                state: states.get(&r.url).cloned(),
                lower: [&r.url, &r.name, &r.desc, &r.owner].map(|s| s.to_lowercase()),
            })
            .collect();
        Catalog {
            entries,
            case_sensitive: g.case_sensitive_sort,
            section_sort: g.section_sort,
            sort_age: g.repository_sort_age,
            agefile: g.agefile.clone(),
            watcher: Arc::clone(watcher),
            orders: OnceLock::new(),
            idle: Mutex::new(None),
        }
    }

    /// The rows of one index page, with the number of matches. Idle times are read for the
    /// rows shown, or for all repositories when the order is by idle time, and only where
    /// they may have changed since they were read.
    pub fn select(&self, query: &Query) -> Selection {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        let state = idle.get_or_insert_with(|| self.idle_state());
        self.mark_stale(state);
        let order = self.order_for(query.sort, state);
        let matches = |&i: &u32| self.matches(&self.entries[i as usize], query);
        let filtered: Vec<u32>;
        let positions: &[u32] = if query.prefix.is_none() && query.search.is_none() {
            &order
        } else {
            filtered = order.iter().copied().filter(matches).collect();
            &filtered
        };
        let total = positions.len();
        let offset = query.offset.min(total.saturating_sub(1));
        let rows = positions
            .iter()
            .skip(offset)
            .take(query.count)
            .map(|&i| {
                let time = self.idle_of(state, i as usize);
                (Arc::clone(&self.entries[i as usize].config), time)
            })
            .collect();
        Selection {
            total,
            offset,
            rows,
        }
    }

    fn matches(&self, e: &Entry, query: &Query) -> bool {
        query.prefix.is_none_or(|p| e.config.url.starts_with(p))
            && query
                .search
                .is_none_or(|q| e.lower.iter().any(|field| field.contains(q)))
    }

    /// The order for `sort`; an order by idle time reads every stale idle time first.
    fn order_for(&self, sort: Option<&str>, state: &mut IdleState) -> Order {
        let orders = self.orders.get_or_init(|| self.static_orders());
        let order = match sort {
            Some("name") => &orders.name,
            Some("desc") => &orders.desc,
            Some("owner") => &orders.owner,
            Some("idle") => return self.idle_orders(state).0,
            Some("section") => &orders.section,
            _ if self.section_sort && self.sort_age => return self.idle_orders(state).1,
            _ if self.section_sort => &orders.section,
            _ => &orders.config,
        };
        Arc::clone(order)
    }

    fn idle_orders(&self, state: &mut IdleState) -> (Order, Order) {
        for i in 0..self.entries.len() {
            self.idle_of(state, i);
        }
        let times = &state.times;
        state
            .orders
            .get_or_insert_with(|| (self.idle_order(times), self.section_idle_order(times)))
            .clone()
    }

    /// Repository `i`'s idle time, read again when stale.
    fn idle_of(&self, state: &mut IdleState, i: usize) -> Option<i64> {
        if !state.fresh[i] {
            let e = &self.entries[i];
            let time = e
                .state
                .as_ref()
                .and_then(|repo| idle_time(&e.config, repo.git_dir(), &self.agefile));
            if time != state.times[i] {
                state.orders = None;
            }
            state.times[i] = time;
            state.fresh[i] = true;
        }
        state.times[i]
    }

    fn idle_state(&self) -> IdleState {
        let n = self.entries.len();
        IdleState {
            times: vec![None; n],
            fresh: vec![false; n],
            seen: vec![None; n],
            epoch: None,
            unwatched: true,
            checked: None,
            orders: None,
        }
    }

    /// Marks stale the idle times that may have changed: of repositories whose watch reported
    /// a change, and of unwatched ones every quarter second. No file is read here.
    fn mark_stale(&self, state: &mut IdleState) {
        let due = state
            .checked
            .is_none_or(|t| t.elapsed() >= IDLE_CHECK_INTERVAL);
        // Read before the counts: a change during the comparison shows in the next one.
        let epoch = self.watcher.epoch();
        if state.epoch == Some(epoch) && !(due && state.unwatched) {
            return;
        }
        state.epoch = Some(epoch);
        if due {
            state.checked = Some(Instant::now());
        }
        state.unwatched = false;
        for (i, e) in self.entries.iter().enumerate() {
            let Some(repo) = &e.state else {
                continue;
            };
            let changes = repo.ref_changes();
            state.unwatched |= changes.is_none();
            let stale = match changes {
                Some(_) => changes != state.seen[i],
                None => due,
            };
            if stale {
                state.fresh[i] = false;
                state.seen[i] = changes;
            }
        }
    }

    fn static_orders(&self) -> StaticOrders {
        let text = |a: &str, b: &str| self.text(a, b);
        StaticOrders {
            config: self.order(|_, _| Ordering::Equal),
            name: self.order(|a, b| text(&a.name, &b.name)),
            desc: self.order(|a, b| nulls_last(&a.desc, &b.desc, text)),
            owner: self.order(|a, b| nulls_last(&a.owner, &b.owner, text)),
            // No section is the empty section, which sorts first (as in cgit).
            section: self.order(|a, b| {
                text(&a.opts.section, &b.opts.section).then_with(|| text(&a.name, &b.name))
            }),
        }
    }

    fn idle_order(&self, times: &[Option<i64>]) -> Order {
        self.order_by(|i, j| by_idle(times[i], times[j]))
    }

    fn section_idle_order(&self, times: &[Option<i64>]) -> Order {
        self.order_by(|i, j| {
            let (a, b) = (&self.entries[i].config, &self.entries[j].config);
            self.text(&a.opts.section, &b.opts.section)
                .then_with(|| by_idle(times[i], times[j]))
        })
    }

    /// A stable sort of the entries by `cmp` on their configurations.
    fn order(&self, cmp: impl Fn(&RepoConfig, &RepoConfig) -> Ordering) -> Order {
        self.order_by(|i, j| cmp(&self.entries[i].config, &self.entries[j].config))
    }

    fn order_by(&self, cmp: impl Fn(usize, usize) -> Ordering) -> Order {
        let mut order: Vec<u32> = (0..self.entries.len() as u32).collect();
        order.sort_by(|&i, &j| cmp(i as usize, j as usize));
        Arc::new(order)
    }

    fn text(&self, a: &str, b: &str) -> Ordering {
        if self.case_sensitive {
            a.cmp(b)
        } else {
            a.to_lowercase().cmp(&b.to_lowercase())
        }
    }
}

/// Absent values sort last, as in cgit.
fn nulls_last(a: &str, b: &str, text: impl Fn(&str, &str) -> Ordering) -> Ordering {
    match (a.is_empty(), b.is_empty()) {
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => text(a, b),
    }
}

/// Most recently changed first; repositories without an idle time last.
fn by_idle(a: Option<i64>, b: Option<i64>) -> Ordering {
    match (a, b) {
        (Some(a), Some(b)) => b.cmp(&a),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}

/// When the repository last changed: the agefile's date, else the mtime of the default
/// branch's loose ref, else of packed-refs.
fn idle_time(r: &RepoConfig, dir: &Path, agefile: &str) -> Option<i64> {
    if let Some(t) = std::fs::read_to_string(dir.join(agefile))
        .ok()
        .and_then(|text| parse_agefile(text.lines().next()?))
    {
        return Some(t);
    }
    let branch = r
        .defbranch
        .clone()
        .or_else(|| head_branch(dir))
        .unwrap_or_else(|| "master".into());
    mtime(&dir.join("refs/heads").join(branch)).or_else(|| mtime(&dir.join("packed-refs")))
}

fn head_branch(git_dir: &Path) -> Option<String> {
    let head = std::fs::read_to_string(git_dir.join("HEAD")).ok()?;
    head.trim()
        .strip_prefix("ref: refs/heads/")
        .map(str::to_string)
}

fn mtime(path: &Path) -> Option<i64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| m.mtime())
}

/// Parses `YYYY-MM-DD HH:MM:SS [+ZZZZ]` or a unix timestamp.
fn parse_agefile(line: &str) -> Option<i64> {
    let line = line.trim();
    if let Ok(secs) = line.parse::<i64>() {
        return Some(secs);
    }
    gix::date::parse(line, None).ok().map(|t| t.seconds)
}
