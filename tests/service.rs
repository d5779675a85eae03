//! The systemd unit in `contrib/systemd`: it verifies with `systemd-analyze`, and the command
//! line, reload and stop it gives systemd serve, reload and stop cgitd.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const UNIT: &str = include_str!("../contrib/systemd/cgitd.service");
const INSTALLED_BINARY: &str = "/usr/local/bin/cgitd";

/// The value of the unit's `key=` line (exactly one).
fn setting(key: &str) -> &'static str {
    let prefix = format!("{key}=");
    let values: Vec<&str> = UNIT
        .lines()
        .filter_map(|line| line.strip_prefix(&prefix))
        .collect();
    assert_eq!(values.len(), 1, "one {key}= line in the unit: {values:?}");
    values[0]
}

/// The unit with its ExecStart naming the binary this test built.
fn unit_for_this_build(dir: &Path) -> PathBuf {
    let unit = dir.join("cgitd.service");
    let text = UNIT.replace(INSTALLED_BINARY, env!("CARGO_BIN_EXE_cgitd"));
    assert_ne!(text, UNIT, "ExecStart names {INSTALLED_BINARY}");
    std::fs::write(&unit, text).unwrap();
    unit
}

#[test]
fn the_unit_verifies_without_warnings() {
    let installed = Command::new("systemd-analyze").arg("--version").output();
    require_oracle(installed.is_ok(), "systemd-analyze", "systemd");
    let dir = TempDir::new("unit");
    let unit = unit_for_this_build(dir.path());
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&unit)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "systemd-analyze verify: {stderr}");
    assert!(
        stderr.trim().is_empty(),
        "systemd-analyze verify warns: {stderr}"
    );
}

#[test]
fn the_unit_is_hardened() {
    for (key, value) in [
        ("DynamicUser", "yes"),
        ("NoNewPrivileges", "yes"),
        ("ProtectSystem", "strict"),
        ("PrivateTmp", "yes"),
        ("CapabilityBoundingSet", ""),
        ("SystemCallFilter", "@system-service"),
    ] {
        assert_eq!(setting(key), value, "{key}");
    }
}

#[test]
fn the_units_command_line_serves_reloads_and_stops() {
    let dir = TempDir::new("service");
    let repo = dir.path().join("repo");
    init_repo(&repo);
    write(&repo, "README", "hello\n");
    commit_all(&repo, "first", "2024-01-02T03:04:05Z");
    let rc = dir.path().join("cgitrc");
    let site = |title: &str| {
        format!(
            "root-title={title}\nrepo.url=r\nrepo.path={}\n",
            repo.display()
        )
    };
    std::fs::write(&rc, site("Before")).unwrap();

    let exec_start = setting("ExecStart").replace("/etc/cgitrc", rc.to_str().unwrap());
    let exec_start = exec_start.replace("127.0.0.1:8080", "127.0.0.1:0");
    let words: Vec<&str> = exec_start.split_whitespace().collect();
    assert_eq!(words[0], INSTALLED_BINARY);
    let mut server = Server::start_with(dir.path(), &words[1..]);
    assert!(server.page("/").contains("Before"));
    assert_eq!(server.get("/r/").status, 200);

    // ExecReload: the signal it sends re-reads the file.
    assert_eq!(setting("ExecReload"), "/bin/kill -HUP $MAINPID");
    std::fs::write(&rc, site("After")).unwrap();
    server.signal("HUP");
    let reloaded = (0..50).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        server.page("/").contains("After")
    });
    assert!(reloaded, "the new root-title shows after the reload signal");

    // KillSignal, within TimeoutStopSec: a clean exit, not a kill.
    assert_eq!(setting("KillSignal"), "SIGTERM");
    let timeout: u64 = setting("TimeoutStopSec").parse().unwrap();
    server.signal("TERM");
    let status = server.exit_within(Duration::from_secs(timeout));
    assert_eq!(status.and_then(|s| s.code()), Some(0), "{status:?}");
}
