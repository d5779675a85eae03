//! A real varnishd in front of a test's cgitd.

use super::*;

/// A real varnishd on 127.0.0.1 in front of `backend`, with contrib/varnish/cgitd-esi.vcl;
/// killed on drop.
pub struct Varnish {
    child: Child,
    pub addr: String,
    workdir: TempDir,
}

impl Varnish {
    /// A varnishd in front of `backend` with the project's ESI VCL.
    pub fn start(backend: &str) -> Varnish {
        let (host, port) = backend.rsplit_once(':').unwrap();
        let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/varnish/cgitd-esi.vcl");
        Self::start_vcl(&format!(
            "vcl 4.1;\nbackend default {{ .host = \"{host}\"; .port = \"{port}\"; }}\ninclude \"{}\";\n",
            include.display()
        ))
    }

    /// A varnishd running `vcl` (a complete VCL file's text).
    pub fn start_vcl(vcl_text: &str) -> Varnish {
        let installed = Command::new("varnishd").arg("-V").output().is_ok();
        require_oracle(installed, "varnishd", "varnish");
        let workdir = TempDir::new("varnish");
        let vcl = workdir.path().join("main.vcl");
        std::fs::write(&vcl, vcl_text).unwrap();
        let port = free_port();
        let child = Command::new("varnishd")
            .args(["-F", "-a", &format!("127.0.0.1:{port}"), "-f"])
            .arg(&vcl)
            .arg("-n")
            .arg(workdir.path().join("n"))
            .args(["-s", "malloc,64m"])
            // A worker thread adds its counters to the ones varnishstat reads only when the
            // lock is free as it finishes a job, or else after thread_stats_rate (10) more
            // jobs: a hit could stay unseen for the rest of a test. 0: every job adds them.
            .args(["-p", "thread_stats_rate=0"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("varnishd starts");
        let addr = format!("127.0.0.1:{port}");
        for _ in 0..100 {
            if TcpStream::connect(&addr).is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Varnish {
            child,
            addr,
            workdir,
        }
    }

    pub fn get(&self, target: &str) -> Response {
        request(&self.addr, "GET", target, &[])
    }

    pub fn request(&self, target: &str, headers: &[(&str, &str)]) -> Response {
        request(&self.addr, "GET", target, headers)
    }

    /// A counter from varnishstat, e.g. `MAIN.cache_hit`.
    pub fn stat(&self, name: &str) -> u64 {
        let out = Command::new("varnishstat")
            .arg("-n")
            .arg(self.workdir.path().join("n"))
            .args(["-1", "-f", name])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .nth(1)
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for Varnish {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
