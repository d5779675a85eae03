//! Memory pressure: the process's anonymous memory against its limit (its cgroup's, or
//! `memory-limit`). Near the limit, new expensive work is refused with a 503 and the caches
//! give their memory back, so the process stays under its limit instead of meeting the OOM
//! killer; below a lower mark it serves everything again.

use super::App;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// How often the memory is looked at.
const INTERVAL: Duration = Duration::from_millis(250);
/// Pressure starts at this share of the limit (per mille)…
const HIGH: u64 = 900;
/// …and ends below this one.
const LOW: u64 = 800;

/// What the watch reports in the metrics.
#[derive(Default)]
pub(super) struct Stats {
    limit: Gauge,
    pressed: Gauge,
    episodes: Counter,
}

impl Stats {
    pub(super) fn register(&self, registry: &mut Registry) {
        registry.register(
            "memory_limit_bytes",
            "The memory limit in force (memory-limit or the cgroup's; 0: none)",
            self.limit.clone(),
        );
        registry.register(
            "memory_pressure",
            "1 while the process is near its memory limit and refuses expensive work",
            self.pressed.clone(),
        );
        registry.register(
            "memory_pressure_episodes",
            "Times the process came near its memory limit",
            self.episodes.clone(),
        );
    }
}

/// Watches the memory for as long as the runtime runs.
pub(super) fn watch(app: Arc<App>) {
    tokio::spawn(async move {
        let mut pressed = false;
        let mut ticks = tokio::time::interval(INTERVAL);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            let limit = limit(app.site().config.globals.memory_limit);
            app.memory.limit.set(limit.unwrap_or(0) as i64);
            let Some(limit) = limit else {
                if pressed {
                    pressed = set_pressure(&app, false);
                }
                continue;
            };
            let used = anonymous_bytes().unwrap_or(0);
            if !pressed && used >= limit / 1000 * HIGH {
                tracing::warn!(
                    "memory pressure: {} MiB of {} MiB; refusing expensive work and emptying caches",
                    used >> 20,
                    limit >> 20
                );
                app.memory.episodes.inc();
                pressed = set_pressure(&app, true);
            }
            if pressed {
                give_back(&app);
                if anonymous_bytes().unwrap_or(0) < limit / 1000 * LOW {
                    pressed = set_pressure(&app, false);
                }
            }
        }
    });
}

/// Starts or ends the pressure in the scheduler and the metrics; returns `on`.
fn set_pressure(app: &App, on: bool) -> bool {
    if !on {
        tracing::info!("memory pressure over: serving everything again");
    }
    app.memory.pressed.set(i64::from(on));
    app.scheduler.set_memory_pressure(on);
    on
}

/// Empties the caches kept in memory and hands the allocator's free pages to the system.
fn give_back(app: &App) {
    app.responses.clear();
    app.site().fragments.clear();
    purge_allocator();
}

/// Has jemalloc return every arena's unused pages now rather than after their decay time.
fn purge_allocator() {
    // `arena.<MALLCTL_ARENAS_ALL>.purge`: all arenas. The name is a NUL-terminated string
    // and the control takes no values, as jemalloc's manual says.
    let name = c"arena.4096.purge";
    // SAFETY: a valid C string, and null old/new pointers with zero length for a control
    // that reads and writes nothing.
    let failed = unsafe {
        tikv_jemalloc_sys::mallctl(
            name.as_ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
        )
    };
    if failed != 0 {
        tracing::debug!("jemalloc purge failed: {failed}");
    }
}

/// The limit in force: `configured` (0: none) or the cgroup's, whichever is lower.
fn limit(configured: u64) -> Option<u64> {
    let configured = (configured > 0).then_some(configured);
    match (configured, cgroup_limit()) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The memory limit of the process's cgroup (v2 `memory.max`, or v1
/// `memory.limit_in_bytes`), if it has one.
fn cgroup_limit() -> Option<u64> {
    let groups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    cgroup_limit_files(&groups)
        .into_iter()
        .filter_map(|file| std::fs::read_to_string(file).ok())
        .filter_map(|text| text.trim().parse::<u64>().ok())
        // v1 writes "no limit" as a huge number near 2^63.
        .filter(|&bytes| bytes < 1 << 60)
        .min()
}

/// Where the limits of the cgroups named in `/proc/self/cgroup` are.
fn cgroup_limit_files(groups: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for line in groups.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let path = path.trim_start_matches('/');
        if controllers.is_empty() {
            for root in ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"] {
                files.push(PathBuf::from(root).join(path).join("memory.max"));
            }
        } else if controllers.split(',').any(|c| c == "memory") {
            files.push(
                PathBuf::from("/sys/fs/cgroup/memory")
                    .join(path)
                    .join("memory.limit_in_bytes"),
            );
        }
    }
    files
}

/// The process's resident anonymous memory (resident pages less file-backed ones).
fn anonymous_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let mut pages = statm.split_whitespace().skip(1).map(str::parse::<u64>);
    let resident = pages.next()?.ok()?;
    let shared = pages.next()?.ok()?;
    Some(resident.saturating_sub(shared) * rustix::param::page_size() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_files_follow_the_cgroup_versions() {
        let v1 = "4:memory:/system.slice/cgitd.service\n1:cpu,cpuacct:/\n0::/\n";
        let files = cgroup_limit_files(v1);
        assert!(files.contains(&PathBuf::from(
            "/sys/fs/cgroup/memory/system.slice/cgitd.service/memory.limit_in_bytes"
        )));
        assert!(files.contains(&PathBuf::from("/sys/fs/cgroup/memory.max")));
        assert_eq!(files.len(), 3, "{files:?}");
        let v2 = cgroup_limit_files("0::/system.slice/cgitd.service\n");
        assert_eq!(
            v2[0],
            PathBuf::from("/sys/fs/cgroup/system.slice/cgitd.service/memory.max")
        );
    }

    #[test]
    fn the_lower_limit_wins_and_zero_is_none() {
        let cgroup = cgroup_limit();
        assert_eq!(limit(0), cgroup);
        assert_eq!(
            limit(1 << 20),
            Some(cgroup.map_or(1 << 20, |c| c.min(1 << 20)))
        );
    }

    #[test]
    fn anonymous_memory_is_read_and_grows_with_an_allocation() {
        let before = anonymous_bytes().unwrap();
        let block = vec![1u8; 64 << 20];
        let after = anonymous_bytes().unwrap();
        assert!(after >= before + (48 << 20), "{before} then {after}");
        drop(block);
    }
}
