//! Prometheus metrics: requests and latency per page, the scheduler's queues per cost class,
//! fragment cache counters, upload-pack's packs, bytes and phases, in-process highlighting,
//! ref snapshot rebuilds, pages cut short by their work budget, the allocator's memory and the
//! bytes each bounded in-heap cache holds.

use super::response_cache::Stats as ResponseStats;
use super::scheduler::Scheduler;
use crate::pages::Site;
use prometheus_client::encoding::prometheus_text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

type Labels = Vec<(&'static str, String)>;

fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.000_05, 2.0, 18))
}

/// The server's metrics and their registry.
pub struct Metrics {
    /// Configuration reloads that took effect.
    pub reloads: Counter,
    registry: Registry,
    requests: Family<Labels, Counter>,
    latency: Family<Labels, Histogram, fn() -> Histogram>,
    memory: Family<Labels, Gauge>,
    /// Bytes held by each bounded in-heap cache, read when the metrics are rendered.
    caches: Family<Labels, Gauge>,
    /// The response cache's bytes, kept up to date by the cache itself.
    response_bytes: Gauge,
}

impl Metrics {
    pub fn new(
        site: &Site,
        scheduler: &Scheduler,
        responses: &ResponseStats,
        upload_pack: &super::smart::Stats,
    ) -> Metrics {
        let cache = &site.fragments.stats;
        let mut registry = Registry::with_prefix("cgitd");
        let requests = Family::<Labels, Counter>::default();
        let latency =
            Family::<Labels, Histogram, fn() -> Histogram>::new_with_constructor(latency_histogram);
        registry.register("requests", "Requests by page and status", requests.clone());
        registry.register(
            "request_duration_seconds",
            "Time to render a response, by page",
            latency.clone(),
        );
        scheduler.register(&mut registry);
        upload_pack.register(&mut registry);
        registry.register(
            "budget_cutoffs",
            "Pages whose work stopped at its budget and that say so (partial pages)",
            site.cutoffs.clone(),
        );
        registry.register(
            "fragment_cache_hits",
            "Fragment cache hits",
            cache.hits.clone(),
        );
        registry.register(
            "fragment_cache_misses",
            "Fragment cache misses",
            cache.misses.clone(),
        );
        registry.register(
            "fragment_cache_evictions",
            "Fragments evicted to stay within the byte budget",
            cache.evictions.clone(),
        );
        registry.register(
            "highlights",
            "Files highlighted in-process (a fragment cache hit does not count)",
            site.highlights.runs.clone(),
        );
        registry.register(
            "highlights_over_budget",
            "Files over the highlighting budget: shown plain (too large) or from where the time ran out",
            site.highlights.over_budget.clone(),
        );
        registry.register(
            "response_cache_hits",
            "Requests answered from the response cache (no rendering)",
            responses.hits.clone(),
        );
        registry.register(
            "response_cache_misses",
            "Requests for a cacheable page that were rendered",
            responses.misses.clone(),
        );
        registry.register(
            "response_cache_evictions",
            "Responses evicted to stay within the byte budget",
            responses.evictions.clone(),
        );
        registry.register(
            "response_cache_bytes",
            "Bytes held by the response cache",
            responses.bytes.clone(),
        );
        registry.register(
            "ref_snapshot_rebuilds",
            "Ref snapshots rebuilt after ref changes",
            site.repos.snapshot_rebuilds.clone(),
        );
        registry.register(
            "object_stores_opened",
            "Object stores opened, one per distinct objects directory (forks share their alternate's)",
            site.repos.object_stores.opened.clone(),
        );
        let indexes = &site.repos.object_stores.commit_indexes;
        registry.register(
            "commit_index_bytes",
            "Bytes held by the commit indexes of the object stores",
            indexes.bytes.clone(),
        );
        registry.register(
            "commit_index_builds",
            "Commit indexes loaded, built or extended (in the background)",
            indexes.builds.clone(),
        );
        registry.register(
            "ref_snapshots_shared",
            "Ref snapshots taken over from another repository with the same refs (forks)",
            site.repos.snapshots.reused.clone(),
        );
        registry.register(
            "ref_watches",
            "Repositories whose refs are watched with inotify (the others are checked by stat)",
            site.repos.watcher.watched.clone(),
        );
        registry.register(
            "ref_stamp_checks",
            "Stat checks of a repository's refs (unwatched repositories, or after a reported change)",
            site.repos.watcher.stamp_checks.clone(),
        );
        registry.register(
            "repositories_opened",
            "Repositories opened with gix (on first use; a reload keeps unchanged ones open)",
            site.repos.opened.clone(),
        );
        let kinds = [
            ("repository", &site.repos.handle_budget),
            ("object", &site.repos.object_stores.budget),
        ];
        for (kind, budget) in kinds {
            registry.register(
                format!("warm_{kind}_handles"),
                format!("Warm {kind} handles pooled over all repositories (max-warm-handles)"),
                budget.held.clone(),
            );
            registry.register(
                format!("warm_{kind}_handles_released"),
                format!("Warm {kind} handles released, least recently used or idle first"),
                budget.released.clone(),
            );
        }
        let reloads = Counter::default();
        registry.register(
            "config_reloads",
            "Configuration reloads that took effect",
            reloads.clone(),
        );
        let memory = Family::<Labels, Gauge>::default();
        registry.register(
            "allocator_bytes",
            "jemalloc's bytes: allocated (live), active (in used pages), resident, retained (unmapped but kept)",
            memory.clone(),
        );
        let caches = Family::<Labels, Gauge>::default();
        registry.register(
            "cache_bytes",
            "Bytes each bounded in-heap cache holds: responses, fragments, walks, object_sizes, \
             single_child_trees, chain_bases, chain_results (over all threads), commits",
            caches.clone(),
        );
        Metrics {
            reloads,
            registry,
            requests,
            latency,
            memory,
            caches,
            response_bytes: responses.bytes.clone(),
        }
    }

    /// Registers more metrics (before any is served).
    pub fn register(&mut self, add: impl FnOnce(&mut Registry)) {
        add(&mut self.registry);
    }

    pub fn observe(&self, page: &str, status: u16, seconds: f64) {
        self.requests
            .get_or_create(&vec![
                ("page", page.to_string()),
                ("status", status.to_string()),
            ])
            .inc();
        self.latency
            .get_or_create(&vec![("page", page.to_string())])
            .observe(seconds);
    }

    /// The text exposition format, with the caches of `site` (the one being served).
    pub fn render(&self, site: &Site) -> String {
        self.read_allocator();
        self.read_caches(site);
        let mut out = String::new();
        let _ = encode(&mut out, &self.registry);
        out
    }

    /// Refreshes the cache gauges from the bytes each cache holds now. Per-handle caches inside
    /// gix (objects, delta bases) are not counted, nor the commit indexes (their own metric) and
    /// the clone cache's kept packs (temporary files).
    fn read_caches(&self, site: &Site) {
        let stores = &site.repos.object_stores;
        let caches = [
            ("responses", self.response_bytes.get()),
            ("fragments", site.fragments.bytes() as i64),
            ("walks", site.walks.bytes() as i64),
            ("object_sizes", site.sizes.bytes() as i64),
            ("single_child_trees", site.single_child_trees.bytes() as i64),
            ("chain_bases", stores.packs.bytes() as i64),
            ("chain_results", crate::git::packs::recent_bytes() as i64),
            ("commits", stores.commits.bytes() as i64),
        ];
        for (cache, bytes) in caches {
            self.caches
                .get_or_create(&vec![("cache", cache.to_string())])
                .set(bytes);
        }
    }

    /// Refreshes the allocator gauges from jemalloc's statistics.
    fn read_allocator(&self) {
        use tikv_jemalloc_ctl::{epoch, stats};
        if epoch::advance().is_err() {
            return;
        }
        let kinds = [
            ("allocated", stats::allocated::read()),
            ("active", stats::active::read()),
            ("resident", stats::resident::read()),
            ("retained", stats::retained::read()),
        ];
        for (kind, bytes) in kinds {
            if let Ok(bytes) = bytes {
                self.memory
                    .get_or_create(&vec![("kind", kind.to_string())])
                    .set(bytes as i64);
            }
        }
    }
}
