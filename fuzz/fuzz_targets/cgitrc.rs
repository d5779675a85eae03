//! The cgitrc parser: any text gives a configuration (with warnings), never a panic. Lines
//! that would read other files (include, scan-path, header, ...) are dropped first.
#![no_main]

use cgitd::config::Config;
use libfuzzer_sys::fuzz_target;

const READS_FILES: &[&str] = &[
    "include",
    "scan-path",
    "project-list",
    "header",
    "footer",
    "head-include",
    "mimetype-file",
];

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let kept: String = text
        .lines()
        .filter(|line| {
            !READS_FILES
                .iter()
                .any(|key| line.trim_start().starts_with(key))
        })
        .flat_map(|line| [line, "\n"])
        .collect();
    let config = Config::from_text(&kept, "fuzz");
    let _ = config.refusal();
    let _ = config.has_errors();
});
