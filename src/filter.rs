//! Filter programs, as cgit runs its exec filters: the configured program (no shell) with
//! arguments and cgit's `CGIT_REPO_*` environment, input on stdin, output from stdout — with a
//! time limit and an output cap.

use crate::config::RepoConfig;
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long a filter may run.
const FILTER_TIMEOUT: Duration = Duration::from_secs(5);
/// Output kept from a filter, at most.
const MAX_OUTPUT: u64 = 8 << 20;

/// The program of an `exec:` (or prefix-less) filter spec; `None` for `lua:` filters, which
/// cgitd does not run.
pub fn exec_program(spec: &str) -> Option<&str> {
    if let Some(program) = spec.strip_prefix("exec:") {
        return Some(program);
    }
    if spec.starts_with("lua:") {
        return None;
    }
    Some(spec)
}

/// The `CGIT_REPO_*` variables of a configured repository.
pub fn config_env(cfg: &RepoConfig, defbranch: &str) -> Vec<(&'static str, String)> {
    vec![
        ("CGIT_REPO_URL", cfg.url.clone()),
        ("CGIT_REPO_NAME", cfg.name.clone()),
        ("CGIT_REPO_PATH", cfg.path.display().to_string()),
        ("CGIT_REPO_OWNER", cfg.owner.clone()),
        ("CGIT_REPO_DEFBRANCH", defbranch.to_string()),
        ("CGIT_REPO_SECTION", cfg.opts.section.clone()),
    ]
}

/// Runs `program args` with `env`, writes `input` to it and returns its output, or why not.
pub fn run(
    program: &str,
    args: &[&str],
    env: &[(&str, String)],
    input: &[u8],
) -> Result<Vec<u8>, String> {
    let mut child = Command::new(program)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run filter {program}: {e}"))?;
    let mut stdin = child.stdin.take().expect("piped stdin");
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let mut stdout = child.stdout.take().expect("piped stdout");
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = (&mut stdout).take(MAX_OUTPUT).read_to_end(&mut out);
        out
    });
    let deadline = Instant::now() + FILTER_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("filter {program} timed out"));
            }
        }
    }
    let _ = writer.join();
    reader
        .join()
        .map_err(|_| format!("reading filter {program} failed"))
}

/// What is wrong with the filter programs a configuration names: missing, not a file or not
/// executable — each program once, with how many repositories use it.
pub fn program_problems(config: &crate::config::Config) -> Vec<String> {
    use std::os::unix::fs::PermissionsExt;
    let mut users: std::collections::BTreeMap<&str, usize> = Default::default();
    for repo in &config.repos {
        for program in repo.opts.filters().filter_map(exec_program) {
            *users.entry(program).or_default() += 1;
        }
    }
    users
        .into_iter()
        .filter_map(|(program, repos)| {
            let problem = match std::fs::metadata(program) {
                Err(e) => format!("cannot be run ({e})"),
                Ok(m) if !m.is_file() => "is not a file".to_string(),
                Ok(m) if m.permissions().mode() & 0o111 == 0 => "is not executable".to_string(),
                Ok(_) => return None,
            };
            Some(format!(
                "filter {program} {problem}; {repos} repositories use it"
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_transform_input_without_a_shell() {
        let out = run("tr", &["a-z", "A-Z"], &[], b"hello; $(id)").unwrap();
        assert_eq!(out, b"HELLO; $(ID)");
        assert_eq!(exec_program("exec:/bin/x"), Some("/bin/x"));
        assert_eq!(exec_program("lua:/x.lua"), None);
        assert!(run("/nonexistent/filter", &[], &[], b"").is_err());
    }

    #[test]
    fn missing_and_non_executable_programs_are_reported_once() {
        let dir = std::env::temp_dir().join(format!("cgitd-filter-check-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let plain = dir.join("plain.sh");
        std::fs::write(&plain, "#!/bin/sh\n").unwrap();
        let text = format!(
            "source-filter=/nonexistent/highlight\ncommit-filter=exec:{}\nemail-filter=/bin/sh\n\
             repo.url=a\nrepo.path=/a\nrepo.url=b\nrepo.path=/b\n",
            plain.display()
        );
        let problems = program_problems(&crate::config::Config::from_text(&text, "t"));
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems
                .iter()
                .any(|p| p.contains("/nonexistent/highlight cannot be run")
                    && p.contains("2 repositories"))
        );
        assert!(
            problems
                .iter()
                .any(|p| p.contains("plain.sh is not executable"))
        );
    }
}
