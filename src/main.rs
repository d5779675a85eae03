//! The cgitd command line: serve (default), check-config, render (and man, for the manual).

use cgitd::config::Config;
use cgitd::http;
use cgitd::pages;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// jemalloc: per-thread caches instead of glibc's locked arenas (a distinct-URL crawl makes
/// about a quarter more pages a second), and background threads that hand freed memory back
/// to the system after a burst of large pages.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// A resident, cgit-compatible git web frontend.
///
/// Reads a cgitrc (cgit's configuration format: same options, same URLs) once and serves
/// every repository it names from one long-lived process.
#[derive(Parser)]
#[command(version, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Serve HTTP (the default when no command is given).
    Serve(ServeArgs),
    /// Parse a cgitrc, list its repositories and options, and report warnings and errors.
    CheckConfig {
        /// The cgitrc file to check.
        file: PathBuf,
    },
    /// Print one response (status, headers, body) for a URL path, without a server.
    Render {
        /// The URL path and query, e.g. '/myrepo/log/?h=main'.
        url: String,
        #[command(flatten)]
        config: ConfigArg,
    },
    /// Print the manual page (roff), as docs/cgitd.1 holds it.
    #[command(hide = true)]
    Man,
}

#[derive(Args, Clone)]
struct ConfigArg {
    /// The cgitrc to read. Default: $CGIT_CONFIG if set, else an embedded default that serves
    /// the git repository in the current directory and the repositories found below it.
    #[arg(long, short = 'c', value_name = "FILE")]
    config: Option<PathBuf>,
}

#[derive(Args, Clone)]
struct ServeArgs {
    #[command(flatten)]
    config: ConfigArg,
    /// Address to listen on.
    #[arg(
        long,
        short = 'l',
        value_name = "ADDR",
        default_value = "127.0.0.1:8080"
    )]
    listen: String,
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "cgitd=info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match cli.command.unwrap_or(Command::Serve(cli.serve)) {
        Command::Serve(args) => serve(args),
        Command::CheckConfig { file } => check_config(&file),
        Command::Render { url, config } => render(&url, &config),
        Command::Man => man(),
    }
}

/// Writes the manual page made from the command line's definition to stdout.
fn man() -> ExitCode {
    use clap::CommandFactory;
    let page = clap_mangen::Man::new(Cli::command());
    match page.render(&mut std::io::stdout()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cgitd: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Loads the configuration named by `--config`, else `$CGIT_CONFIG`, else the embedded default;
/// one that must not be served is an error.
fn load_config(arg: &ConfigArg) -> Result<(Config, Option<PathBuf>), String> {
    let path = arg
        .config
        .clone()
        .or_else(|| std::env::var_os("CGIT_CONFIG").map(PathBuf::from));
    match path {
        Some(path) => {
            let config = Config::load(&path)?;
            match config.refusal() {
                Some(why) => Err(why),
                None => Ok((config, Some(path))),
            }
        }
        None => {
            let cwd = std::env::current_dir().map_err(|e| format!("current directory: {e}"))?;
            Ok((Config::embedded_default(&cwd), None))
        }
    }
}

fn serve(args: ServeArgs) -> ExitCode {
    let (config, path) = match load_config(&args.config) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("cgitd: {e}");
            return ExitCode::FAILURE;
        }
    };
    for d in &config.diagnostics {
        tracing::warn!("{d}");
    }
    survive_exhaustion();
    let runtime = match http::runtime() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cgitd: cannot start runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let repos = config.repos.len();
    let source = config.source.clone();
    runtime.block_on(async move {
        let listener = match tokio::net::TcpListener::bind(&args.listen).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("cgitd: cannot listen on {}: {e}", args.listen);
                return ExitCode::FAILURE;
            }
        };
        let addr = listener
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or(args.listen);
        println!("cgitd serving {repos} repositories ({source}) at http://{addr}/");
        let app = http::App::new(config, path);
        match http::serve(app, listener).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("cgitd: {e}");
                ExitCode::FAILURE
            }
        }
    })
}

/// What the server does not die of: a temporary file written past `RLIMIT_FSIZE` fails with
/// `EFBIG` (a 503 for that snapshot or clone) instead of raising SIGXFSZ, whose default
/// action ends the process; and the soft open-file limit is raised to the hard one.
fn survive_exhaustion() {
    // SAFETY: sets a signal's disposition to "ignore", before any thread is started.
    let previous = unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
    if previous == libc::SIG_ERR {
        tracing::warn!("SIGXFSZ not ignored: {}", std::io::Error::last_os_error());
    }
    let files = http::listener::raise_open_file_limit();
    tracing::debug!("open-file limit {files}");
}

fn check_config(file: &std::path::Path) -> ExitCode {
    let config = match Config::load(file) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    for repo in &config.repos {
        let o = &repo.opts;
        let flags = [
            ("hide", repo.hide),
            ("ignore", repo.ignore),
            ("enable-blame", o.enable_blame),
            ("enable-commit-graph", o.enable_commit_graph),
            ("enable-log-filecount", o.enable_log_filecount),
            ("enable-log-linecount", o.enable_log_linecount),
            ("enable-remote-branches", o.enable_remote_branches),
            ("enable-html-serving", o.enable_html_serving),
            ("enable-esi", o.enable_esi),
            ("enable-highlight", !o.no_highlight),
            ("clone-bundle-uri", o.clone_bundle_uri),
        ];
        let on: Vec<&str> = flags.iter().filter(|f| f.1).map(|f| f.0).collect();
        println!("repo {}", repo.url);
        println!("  path     {}", repo.path.display());
        println!("  name     {}", repo.name);
        println!("  section  {}", o.section);
        println!("  desc     {}", repo.desc);
        println!("  owner    {}", repo.owner);
        println!(
            "  snapshots {}",
            repo.snapshot_suffixes().collect::<Vec<_>>().join(" ")
        );
        println!("  readme   {}", o.readme.join(" "));
        println!("  flags    {}", on.join(" "));
    }
    print_globals(&config.globals);
    for d in &config.diagnostics {
        println!("{d}");
    }
    for problem in cgitd::filter::program_problems(&config) {
        println!("warning: {problem}");
    }
    if let Some(why) = config.refusal() {
        println!("error: {why}");
        return ExitCode::FAILURE;
    }
    if config.has_errors() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// The global options in force, cgitd's scheduling with what it derives from the machine.
fn print_globals(g: &cgitd::config::Globals) {
    let limits = http::scheduler_limits(&g.scheduling);
    let proxies: Vec<String> = g.trusted_proxies.iter().map(|n| n.to_string()).collect();
    let access_log = match g.access_log_sample {
        0 => "off".to_string(),
        n => format!("every {n} request(s)"),
    };
    println!("global");
    println!("  virtual-root             {}", g.virtual_root);
    println!("  root-title               {}", g.root_title);
    println!("  css                      {}", g.css.join(" "));
    println!(
        "  cache ttl (min)          root {} repo {} dynamic {} static {} about {} snapshot {}",
        g.ttl.root, g.ttl.repo, g.ttl.dynamic, g.ttl.r#static, g.ttl.about, g.ttl.snapshot
    );
    println!("  fragment-cache-size      {}", g.fragment_cache_size);
    println!("  response-cache-size      {}", g.response_cache_size);
    let clone = if g.enable_http_clone {
        "smart HTTP (upload-pack v0/v1/v2) and dumb HTTP"
    } else {
        "off (enable-http-clone=0)"
    };
    println!("  http clone               {clone}");
    println!("  clone-cache-size         {}", g.clone_cache_size);
    println!(
        "  metrics-path             {}",
        g.metrics_path.as_deref().unwrap_or("(off)")
    );
    println!("  git-workers              {}", limits.workers);
    println!("  git-expensive-workers    {}", limits.expensive_workers);
    println!(
        "  queue-deadline-cheap     {} ms",
        limits.cheap_deadline.as_millis()
    );
    println!(
        "  queue-deadline-expensive {} ms",
        limits.expensive_deadline.as_millis()
    );
    println!("  trusted-proxies          {}", proxies.join(" "));
    println!("  access-log               {access_log}");
    let watch = if g.watch_refs {
        "inotify (stat every 250 ms where a watch cannot be added)"
    } else {
        "off (stat every 250 ms)"
    };
    println!("  watch-refs               {watch}");
    println!("  max-warm-handles         {}", g.max_warm_handles);
}

fn render(url: &str, arg: &ConfigArg) -> ExitCode {
    let (config, _) = match load_config(arg) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("cgitd: {e}");
            return ExitCode::FAILURE;
        }
    };
    let site = pages::Site::new(config);
    let (path, query) = match url.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (url, None),
    };
    let response = match cgitd::request::url::parse(&site.config, path, query) {
        // As cgit run by hand: the auth-filter decides, without a cookie.
        Ok(req) if site.config.globals.auth_filter.is_some() => {
            let auth = cgitd::pages::auth::AuthRequest::new(&site, "GET", path, query, Some(&req));
            cgitd::pages::auth::render(&site, &req, &auth)
        }
        Ok(req) => pages::render(&site, &req),
        Err(e) => pages::render_error(&site, e.status(), e.message()),
    };
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "Status: {}", response.status);
    let _ = writeln!(out, "Content-Type: {}", response.content_type);
    for (name, value) in &response.headers {
        let _ = writeln!(out, "{name}: {value}");
    }
    let _ = writeln!(out);
    let written = match response.body {
        pages::Body::Full(bytes) => out.write_all(&bytes),
        pages::Body::File { file, offset, len } => pages::copy_file(&file, offset, len, &mut out),
    };
    if let Err(e) = written.and_then(|()| out.flush()) {
        eprintln!("cgitd: writing the body: {e}");
        return ExitCode::FAILURE;
    }
    if response.status < 400 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
