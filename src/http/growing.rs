//! A pack being written to a temporary file while it is sent: the git worker writes at the
//! disk's pace and never waits for the client, and the sender reads what is written so far,
//! waiting for more, so the client indexes the pack while the rest is made.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::sync::{Condvar, Mutex};

/// Bytes read from the file and passed on at once.
const CHUNK: usize = 64 << 10;

/// A temporary file, how much of it is written, and whether its writing ended (and how).
pub struct Growing {
    file: File,
    state: Mutex<Progress>,
    grown: Condvar,
}

#[derive(Default)]
struct Progress {
    written: u64,
    /// `Some(Ok)` once complete; `Some(Err)` when the writing failed (why, for the log).
    ended: Option<Result<(), String>>,
}

impl Growing {
    pub fn new(file: File) -> Growing {
        Growing {
            file,
            state: Mutex::default(),
            grown: Condvar::new(),
        }
    }

    /// The writer that appends to the file and tells the sender.
    pub fn writer(&self) -> Appender<'_> {
        Appender { growing: self }
    }

    /// Says the writing ended: completely, or with the error that stopped it.
    pub fn end(&self, result: Result<(), String>) {
        self.lock().ended = Some(result);
        self.grown.notify_all();
    }

    /// A second handle on the file (to keep it once complete).
    pub fn file(&self) -> io::Result<File> {
        self.file.try_clone()
    }

    /// Copies the file to `out` as it grows, until its writing ended; an error when the
    /// writing failed (the client sees a cut transfer). Returns the bytes copied.
    pub fn copy_to(&self, out: &mut dyn Write) -> io::Result<u64> {
        let mut buf = vec![0; CHUNK];
        let mut sent = 0;
        loop {
            let written = self.wait_past(sent)?;
            if written == sent {
                return Ok(sent);
            }
            let want = CHUNK.min((written - sent) as usize);
            let n = self.file.read_at(&mut buf[..want], sent)?;
            if n == 0 {
                return Err(io::Error::other("pack file shrank while it was sent"));
            }
            out.write_all(&buf[..n])?;
            sent += n as u64;
        }
    }

    /// The bytes written once more than `sent` are, or the writing ended complete (then
    /// equal to `sent` when all is sent).
    fn wait_past(&self, sent: u64) -> io::Result<u64> {
        let mut state = self.lock();
        loop {
            match &state.ended {
                Some(Err(why)) => return Err(io::Error::other(why.clone())),
                _ if state.written > sent => return Ok(state.written),
                Some(Ok(())) => return Ok(state.written),
                None => {
                    state = self.grown.wait(state).unwrap_or_else(|e| e.into_inner());
                }
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Progress> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Appends to a growing file, telling its sender after each write.
pub struct Appender<'a> {
    growing: &'a Growing,
}

impl Write for Appender<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = (&self.growing.file).write(buf)?;
        self.growing.lock().written += n as u64;
        self.growing.grown.notify_all();
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        (&self.growing.file).flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn the_sender_gets_everything_written_while_it_waits_for_more() {
        let growing = Arc::new(Growing::new(tempfile::tempfile().unwrap()));
        let sender = {
            let growing = Arc::clone(&growing);
            std::thread::spawn(move || {
                let mut out = Vec::new();
                let sent = growing.copy_to(&mut out).unwrap();
                (sent, out)
            })
        };
        let mut expected = Vec::new();
        for n in 0..200u32 {
            let piece = n.to_le_bytes().repeat(500);
            growing.writer().write_all(&piece).unwrap();
            expected.extend_from_slice(&piece);
            if n % 50 == 0 {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        }
        growing.end(Ok(()));
        let (sent, out) = sender.join().unwrap();
        assert_eq!(sent, expected.len() as u64);
        assert!(out == expected, "the bytes arrive in order, all of them");
    }

    #[test]
    fn a_failed_writing_cuts_the_transfer() {
        let growing = Growing::new(tempfile::tempfile().unwrap());
        growing.writer().write_all(b"PACK and some").unwrap();
        growing.end(Err("object vanished".into()));
        let mut out = Vec::new();
        let error = growing.copy_to(&mut out).unwrap_err();
        assert!(error.to_string().contains("object vanished"), "{error}");
    }
}
