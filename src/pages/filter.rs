//! cgit's exec filters: run the configured program (no shell) with arguments, feed it input on
//! stdin, take its stdout — with a time limit and an output cap.

use super::RepoCtx;
use super::html::escape;
use crate::config::RepoConfig;
use crate::repos::Person;
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

/// The `CGIT_REPO_*` variables cgit gives filters.
pub fn repo_env(ctx: &RepoCtx<'_>) -> Vec<(&'static str, String)> {
    config_env(&ctx.state.config, &ctx.defbranch)
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

/// `text` as HTML: escaped, then through `filter` when one is configured — cgit gives its
/// commit, email and owner filters the escaped text and includes their output as it is. A
/// filter that fails leaves the escaped text (and a warning). `env` is only built for a filter.
pub fn filtered_text(
    filter: Option<&str>,
    args: &[&str],
    env: impl FnOnce() -> Vec<(&'static str, String)>,
    text: &str,
) -> String {
    let escaped = escape(text);
    let Some(program) = filter.and_then(exec_program) else {
        return escaped;
    };
    match run(program, args, &env(), escaped.as_bytes()) {
        Ok(out) => String::from_utf8_lossy(&out).into_owned(),
        Err(e) => {
            tracing::warn!("{e}");
            escaped
        }
    }
}

/// A person's `text` (name, perhaps with email) as HTML, through the email-filter when one is
/// configured: its arguments are the email in angle brackets and the page, as cgit gives them.
pub fn person_html(ctx: &RepoCtx<'_>, person: &Person, text: &str, page: &str) -> String {
    let Some(filter) = ctx.state.config.opts.email_filter.as_deref() else {
        return escape(text);
    };
    let email = format!("<{}>", person.email);
    filtered_text(Some(filter), &[&email, page], || repo_env(ctx), text)
}

/// A person as name and email (only the name with `noplainemail`), as HTML through the
/// email-filter, as the commit and tag pages show them.
pub fn name_and_email_html(ctx: &RepoCtx<'_>, person: &Person, page: &str) -> String {
    let text = if ctx.site.config.globals.noplainemail {
        person.name.clone()
    } else {
        format!("{} <{}>", person.name, person.email)
    };
    person_html(ctx, person, &text, page)
}

/// A file's text as HTML: through the source-filter when one is configured (it gets the raw
/// text and the file's name, as cgit runs it, e.g. for syntax highlighting), else escaped.
pub fn source_html(ctx: &RepoCtx<'_>, path: &[u8], text: &[u8]) -> String {
    let filter = ctx.state.config.opts.source_filter.as_deref();
    if let Some(program) = filter.and_then(exec_program) {
        let name = path.rsplit(|&b| b == b'/').next().unwrap_or_default();
        let name = String::from_utf8_lossy(name);
        match run(program, &[&name], &repo_env(ctx), text) {
            Ok(out) => return String::from_utf8_lossy(&out).into_owned(),
            Err(e) => tracing::warn!("source-filter: {e}"),
        }
    }
    escape(&String::from_utf8_lossy(text))
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
}
