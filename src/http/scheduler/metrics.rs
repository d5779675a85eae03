//! The scheduler's metrics: queued and running jobs, queue waits and sheds, by class.

use super::CostClass;
use super::outcome::ShedReason;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};

pub(super) type Labels = Vec<(&'static str, String)>;

pub(super) fn wait_histogram() -> Histogram {
    // 100 µs … 6.5 s
    Histogram::new(exponential_buckets(0.000_1, 2.0, 17))
}

pub(super) struct ClassMetrics {
    pub(super) queued: Gauge,
    pub(super) running: Gauge,
    pub(super) wait: Histogram,
    pub(super) shed: [Counter; 6],
}

pub(super) struct Metrics {
    pub(super) queued: Family<Labels, Gauge>,
    pub(super) running: Family<Labels, Gauge>,
    pub(super) wait: Family<Labels, Histogram, fn() -> Histogram>,
    pub(super) shed: Family<Labels, Counter>,
    pub(super) class: [ClassMetrics; 2],
}

impl Metrics {
    pub(super) fn new() -> Metrics {
        let queued = Family::<Labels, Gauge>::default();
        let running = Family::<Labels, Gauge>::default();
        let wait = Family::<Labels, Histogram, fn() -> Histogram>::new_with_constructor(
            wait_histogram as fn() -> Histogram,
        );
        let shed = Family::<Labels, Counter>::default();
        let class = CostClass::ALL.map(|class| {
            let labels = vec![("class", class.label().to_string())];
            ClassMetrics {
                queued: queued.get_or_create_owned(&labels),
                running: running.get_or_create_owned(&labels),
                wait: wait.get_or_create_owned(&labels),
                shed: ShedReason::ALL.map(|reason| {
                    shed.get_or_create_owned(&vec![
                        ("class", class.label().to_string()),
                        ("reason", reason.label().to_string()),
                    ])
                }),
            }
        });
        Metrics {
            queued,
            running,
            wait,
            shed,
            class,
        }
    }
}
