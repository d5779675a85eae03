//! Filter programs, as cgit runs its exec filters: the configured program (no shell) with
//! arguments and cgit's `CGIT_REPO_*` environment, input on stdin, output from stdout — with a
//! time limit and an output cap — and `lua:` filters in an embedded Lua ([`lua`]).

pub mod lua;

use crate::config::{FilterSpec, RepoConfig};
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long a filter may run.
pub(crate) const FILTER_TIMEOUT: Duration = Duration::from_secs(5);
/// Output kept from a filter, at most.
pub(crate) const MAX_OUTPUT: u64 = 8 << 20;

/// What a filter wrote and its exit status (`filter_close`'s number for Lua filters).
#[derive(Debug)]
pub struct Output {
    pub out: Vec<u8>,
    pub status: i32,
}

/// Runs the filter `spec` (`exec:`, prefix-less or `lua:`) once with `args`, `env` and `input`.
pub fn apply(
    spec: &str,
    args: &[&str],
    env: &[(&str, String)],
    input: &[u8],
) -> Result<Output, String> {
    match FilterSpec::parse(spec)? {
        FilterSpec::Lua(script) => lua::run(script, args, env, input),
        FilterSpec::Exec(program) => run_exec(program, args, env, input),
    }
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
    run_exec(program, args, env, input).map(|o| o.out)
}

/// [`run`], with the exit status; a program killed by a signal has failed.
pub fn run_exec(
    program: &str,
    args: &[&str],
    env: &[(&str, String)],
    input: &[u8],
) -> Result<Output, String> {
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
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("filter {program} timed out"));
            }
        }
    };
    let _ = writer.join();
    let out = reader
        .join()
        .map_err(|_| format!("reading filter {program} failed"))?;
    let status = status
        .code()
        .ok_or_else(|| format!("filter {program} exited abnormally"))?;
    Ok(Output { out, status })
}

/// What is wrong with the filter programs a configuration names: missing, not a file or not
/// executable — each program once, with how many repositories use it.
pub fn program_problems(config: &crate::config::Config) -> Vec<String> {
    use std::os::unix::fs::PermissionsExt;
    let mut users: std::collections::BTreeMap<&str, usize> = Default::default();
    for repo in &config.repos {
        for spec in repo.opts.filters() {
            *users.entry(spec).or_default() += 1;
        }
    }
    if let Some(auth) = &config.globals.auth_filter {
        users.entry(auth).or_default();
    }
    users
        .into_iter()
        .filter_map(|(spec, repos)| {
            let (program, script) = match FilterSpec::parse(spec) {
                Ok(FilterSpec::Exec(program)) => (program, false),
                Ok(FilterSpec::Lua(script)) => (script.to_str().unwrap_or(spec), true),
                Err(why) => return Some(why),
            };
            let problem = match std::fs::metadata(program) {
                Err(e) if script => format!("cannot be read ({e})"),
                Err(e) => format!("cannot be run ({e})"),
                Ok(m) if !m.is_file() => "is not a file".to_string(),
                Ok(m) if !script && m.permissions().mode() & 0o111 == 0 => {
                    "is not executable".to_string()
                }
                Ok(_) => return None,
            };
            Some(if repos == 0 {
                format!("filter {program} {problem}; it is the auth-filter")
            } else {
                format!("filter {program} {problem}; {repos} repositories use it")
            })
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
        assert!(run("/nonexistent/filter", &[], &[], b"").is_err());
        let out = apply("exec:/bin/sh", &["-c", "cat; exit 3"], &[], b"in").unwrap();
        assert_eq!((out.out.as_slice(), out.status), (&b"in"[..], 3));
        assert!(apply("ldap:/x", &[], &[], b"").is_err());
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
