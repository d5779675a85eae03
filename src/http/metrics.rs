//! Prometheus metrics: requests and latency per page, fragment cache counters, ref snapshot
//! rebuilds and how many requests wait for the blocking pool.

use crate::cache::CacheStats;
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
    registry: Registry,
    requests: Family<Labels, Counter>,
    latency: Family<Labels, Histogram, fn() -> Histogram>,
    /// Requests waiting for a blocking-pool permit.
    pub queue_depth: Gauge,
}

impl Metrics {
    pub fn new(cache: &CacheStats, snapshot_rebuilds: &Counter) -> Metrics {
        let mut registry = Registry::with_prefix("cgitd");
        let requests = Family::<Labels, Counter>::default();
        let latency =
            Family::<Labels, Histogram, fn() -> Histogram>::new_with_constructor(latency_histogram);
        let queue_depth = Gauge::default();
        registry.register("requests", "Requests by page and status", requests.clone());
        registry.register(
            "request_duration_seconds",
            "Time to render a response, by page",
            latency.clone(),
        );
        registry.register(
            "blocking_queue_depth",
            "Requests waiting for a git worker",
            queue_depth.clone(),
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
            "ref_snapshot_rebuilds",
            "Ref snapshots rebuilt after ref changes",
            snapshot_rebuilds.clone(),
        );
        Metrics {
            registry,
            requests,
            latency,
            queue_depth,
        }
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

    /// The text exposition format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = encode(&mut out, &self.registry);
        out
    }
}
