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
    name: Order,
    desc: Order,
    owner: Order,
    section: Order,
}

/// Idle times and the orders built from them.
struct IdleState {
    times: Arc<Vec<Option<i64>>>,
    /// Each repository's count of watched ref changes when its idle time was read (`None`:
    /// not watched then).
    seen: Vec<Option<u64>>,
    /// The watcher's epoch when the counts were last compared.
    epoch: u64,
    /// Whether some repository had no watch at the last refresh.
    unwatched: bool,
    /// When idle times of unwatched repositories were last read (`None`: never read).
    checked: Option<Instant>,
    idle: Order,
    section_idle: Order,
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

    /// The rows of one index page, with the number of matches.
    pub fn select(&self, query: &Query) -> Selection {
        let (times, order) = self.current(query.sort);
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
                let e = &self.entries[i as usize];
                (Arc::clone(&e.config), times[i as usize])
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

    /// The idle times and the order for `sort`, after refreshing what changed.
    fn current(&self, sort: Option<&str>) -> (Arc<Vec<Option<i64>>>, Order) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        let state = idle.get_or_insert_with(|| self.idle_state());
        if self.refresh_idle(state) {
            state.idle = self.idle_order(&state.times);
            state.section_idle = self.section_idle_order(&state.times);
        }
        let times = Arc::clone(&state.times);
        let orders = self.orders.get_or_init(|| self.static_orders());
        let order = match sort {
            Some("name") => &orders.name,
            Some("desc") => &orders.desc,
            Some("owner") => &orders.owner,
            Some("idle") => &state.idle,
            Some("section") => &orders.section,
            _ if self.section_sort && self.sort_age => &state.section_idle,
            _ if self.section_sort => &orders.section,
            _ => return (times, Arc::new((0..self.entries.len() as u32).collect())),
        };
        (times, Arc::clone(order))
    }

    fn idle_state(&self) -> IdleState {
        let n = self.entries.len();
        IdleState {
            times: Arc::new(vec![None; n]),
            seen: vec![None; n],
            epoch: 0,
            unwatched: true,
            checked: None,
            idle: Arc::default(),
            section_idle: Arc::default(),
        }
    }

    /// Reads the idle times that may have changed — of repositories whose watch reported a
    /// change, and of unwatched ones every quarter second; whether any changed.
    fn refresh_idle(&self, state: &mut IdleState) -> bool {
        let first = state.checked.is_none();
        let due = state
            .checked
            .is_none_or(|t| t.elapsed() >= IDLE_CHECK_INTERVAL);
        // Read before the counts: a change during the refresh shows in the next one.
        let epoch = self.watcher.epoch();
        if !first && epoch == state.epoch && !(due && state.unwatched) {
            return false;
        }
        state.epoch = epoch;
        if due {
            state.checked = Some(Instant::now());
        }
        state.unwatched = false;
        let times = Arc::make_mut(&mut state.times);
        let mut changed = first;
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
            if !first && !stale {
                continue;
            }
            let time = idle_time(&e.config, repo.git_dir(), &self.agefile);
            changed |= time != times[i];
            times[i] = time;
            state.seen[i] = changes;
        }
        changed
    }

    fn static_orders(&self) -> StaticOrders {
        let text = |a: &str, b: &str| self.text(a, b);
        StaticOrders {
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
