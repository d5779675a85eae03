//! Servers started under resource limits (setrlimit(2) in the child before it runs cgitd),
//! and limits changed while they run (prlimit(2)): exhausted descriptors, file sizes, memory,
//! without privileges or mounts.

use super::Server;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;

/// A resource limit: soft and hard alike, but for [`Limit::FileSize`], whose hard limit stays
/// unlimited so that [`Server::set_limit`] can lift it without privileges.
#[derive(Clone, Copy, Debug)]
pub enum Limit {
    /// `RLIMIT_NOFILE`: open file descriptors.
    Files(u64),
    /// `RLIMIT_FSIZE`: bytes a file may be written to (past it, writes fail with `EFBIG`
    /// and raise SIGXFSZ).
    FileSize(u64),
    /// `RLIMIT_AS`: bytes of address space.
    AddressSpace(u64),
}

impl Limit {
    fn raw(self) -> (libc::__rlimit_resource_t, libc::rlimit) {
        let (resource, n) = match self {
            Limit::Files(n) => (libc::RLIMIT_NOFILE, n),
            Limit::FileSize(n) => (libc::RLIMIT_FSIZE, n),
            Limit::AddressSpace(n) => (libc::RLIMIT_AS, n),
        };
        let n = if n == u64::MAX {
            libc::RLIM_INFINITY
        } else {
            n
        };
        let max = match self {
            Limit::FileSize(_) => libc::RLIM_INFINITY,
            _ => n,
        };
        (
            resource,
            libc::rlimit {
                rlim_cur: n,
                rlim_max: max,
            },
        )
    }
}

impl Server {
    /// Like [`Server::start_logging_to`], the process started under `limits`.
    pub fn start_limited(cwd: &Path, args: &[&str], log: &Path, limits: &[Limit]) -> Server {
        let file = std::fs::File::create(log).unwrap();
        let raw: Vec<_> = limits.iter().map(|l| l.raw()).collect();
        let mut command = Self::command(cwd, args);
        command.env("NO_COLOR", "1").stderr(Stdio::from(file));
        // SAFETY: between fork and exec the closure only calls setrlimit(2), which is
        // async-signal-safe, on values prepared before the fork.
        unsafe {
            command.pre_exec(move || {
                for (resource, limit) in &raw {
                    if libc::setrlimit(*resource, limit) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        Self::spawn(&mut command)
    }

    /// Changes a limit of the running server (raising a hard limit needs CAP_SYS_RESOURCE).
    pub fn set_limit(&self, limit: Limit) {
        let (resource, value) = limit.raw();
        // SAFETY: prlimit(2) on our own child, reading a valid rlimit, writing nothing.
        let done = unsafe {
            libc::prlimit(
                self.pid() as libc::pid_t,
                resource,
                &value,
                std::ptr::null_mut(),
            )
        };
        assert_eq!(
            done,
            0,
            "prlimit {limit:?}: {}",
            std::io::Error::last_os_error()
        );
    }
}

/// Raises this process's soft open-file limit to at least `n` (within the hard limit), for
/// a test that holds many connections; fails when the hard limit is lower.
pub fn allow_open_files(n: u64) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit on a local struct.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
        if limit.rlim_cur >= n {
            return;
        }
        assert!(
            limit.rlim_max >= n,
            "this test needs {n} open files; the hard limit is {} (raise it: ulimit -Hn {n})",
            limit.rlim_max
        );
        limit.rlim_cur = n;
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &limit), 0);
    }
}
