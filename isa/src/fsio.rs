//! File-system helpers for untrusted paths: bounded reads, and the temporary-file-and-rename
//! writer that refuses non-regular targets and never leaves its temporary file behind.
//!
//! [`write_atomic`] writes into an unnamed file (`O_TMPFILE`) of the target's directory, links
//! it under a `.tpbsim-*.tmp` name only once it is complete, and renames that over the target:
//! a process killed while writing (even by `SIGKILL`) leaves nothing. Where the file system has
//! no unnamed files, a named temporary file is used. Named temporary files are registered while
//! they exist; [`install_signal_cleanup`] makes `SIGINT`, `SIGTERM`, `SIGHUP` and `SIGPIPE` remove them
//! before the process dies. Created files get mode 0644 less the umask.

use std::ffi::CString;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};

/// Read all of `path` (a regular file, a pipe, a device...) refusing more than `limit` bytes:
/// a regular file larger than the limit is refused before any byte is read; any other source
/// is read up to `limit + 1` bytes.
pub fn read_limited(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let file = File::open(path)?;
    let meta = file.metadata()?;
    if meta.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "is a directory",
        ));
    }
    if meta.is_file() && meta.len() > limit {
        return Err(too_large(meta.len(), limit));
    }
    read_to_limit(file, limit)
}

/// Read `r` to its end, refusing more than `limit` bytes.
pub fn read_to_limit(r: impl Read, limit: u64) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    r.take(limit.saturating_add(1)).read_to_end(&mut out)?;
    if out.len() as u64 > limit {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("more than {limit} bytes (the input limit)"),
        ));
    }
    Ok(out)
}

fn too_large(len: u64, limit: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{len} bytes, more than the {limit}-byte input limit"),
    )
}

/// Check that `path` may be replaced by [`write_atomic`]: it does not exist, or it is a
/// regular file (not a symbolic link, directory, device, FIFO or socket; a FIFO or device is
/// accepted with [`ALLOW_SPECIAL_ENV`] set to `1`).
pub fn check_target(path: &Path) -> io::Result<()> {
    if allow_special_env() && is_special(path) {
        return Ok(());
    }
    check_regular(path)
}

fn allow_special_env() -> bool {
    std::env::var_os(ALLOW_SPECIAL_ENV).is_some_and(|v| v == "1")
}

/// Whether `path` exists as a FIFO, device or socket (not a symbolic link or directory).
fn is_special(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| {
        let t = m.file_type();
        !t.is_file() && !t.is_dir() && !t.is_symlink()
    })
}

/// `path` does not exist or is a regular file.
fn check_regular(path: &Path) -> io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
        Ok(m) => {
            let t = m.file_type();
            let what = if t.is_file() {
                return Ok(());
            } else if t.is_symlink() {
                "a symbolic link"
            } else if t.is_dir() {
                "a directory"
            } else if t.is_fifo() {
                "a FIFO"
            } else if t.is_char_device() || t.is_block_device() {
                "a device"
            } else {
                "not a regular file"
            };
            Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                if t.is_symlink() || t.is_dir() {
                    format!("{what}; only regular files are replaced")
                } else {
                    format!(
                        "{what}; only regular files are replaced ({ALLOW_SPECIAL_ENV}=1 writes to FIFOs and devices)"
                    )
                },
            ))
        }
    }
}

/// Environment variable that, set to `1`, lets [`write_atomic`] write to an existing FIFO or
/// device (`-o /dev/null`); symbolic links and directories are refused regardless.
pub const ALLOW_SPECIAL_ENV: &str = "TPBSIM_WRITE_SPECIAL";

/// Write `bytes` to `path` through a temporary file in the same directory and a rename, so a
/// reader never sees a half-written file. An existing target must be a regular file
/// ([`check_target`]), or, with [`ALLOW_SPECIAL_ENV`] set to `1`, a FIFO or device.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with(path, bytes, allow_special_env())
}

/// [`write_atomic`]; with `allow_special`, an existing non-regular target other than a
/// directory or symbolic link (a device, a FIFO) is written to directly instead.
pub fn write_atomic_with(path: &Path, bytes: &[u8], allow_special: bool) -> io::Result<()> {
    if allow_special && is_special(path) {
        let mut f = std::fs::OpenOptions::new().write(true).open(path)?;
        return f.write_all(bytes);
    }
    check_regular(path)?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if let Some(f) = unnamed_in(dir) {
        let mut f = f;
        f.write_all(bytes)?;
        f.sync_all()?;
        let tmp = temp_name(dir);
        let guard = Registered::new(&tmp);
        let linked = link_fd(&f, &tmp);
        if linked.is_ok() {
            let r = std::fs::rename(&tmp, path);
            if r.is_err() {
                let _ = std::fs::remove_file(&tmp);
            }
            drop(guard);
            return r;
        }
        drop(guard);
        // No /proc to link through: fall back to a named temporary file.
    }
    let mut tmp = tempfile::Builder::new()
        .prefix(".tpbsim-")
        .suffix(".tmp")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644))
        .tempfile_in(dir)?;
    let guard = Registered::new(tmp.path());
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    let r = tmp.persist(path).map(|_| ()).map_err(|e| e.error);
    drop(guard);
    r
}

/// An unnamed file in `dir` (mode 0644 less the umask), where the file system supports them.
fn unnamed_in(dir: &Path) -> Option<File> {
    std::fs::OpenOptions::new()
        .write(true)
        .mode(0o644)
        .custom_flags(libc::O_TMPFILE)
        .open(dir)
        .ok()
}

/// Give the unnamed file `f` the name `to`.
fn link_fd(f: &File, to: &Path) -> io::Result<()> {
    use std::os::unix::io::AsRawFd;
    let from = CString::new(format!("/proc/self/fd/{}", f.as_raw_fd()))?;
    let to_c = CString::new(to.as_os_str().as_bytes())?;
    // SAFETY: both paths are NUL-terminated strings that outlive the call.
    let r = unsafe {
        libc::linkat(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to_c.as_ptr(),
            libc::AT_SYMLINK_FOLLOW,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn temp_name(dir: &Path) -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    dir.join(format!(
        ".tpbsim-{}-{}.tmp",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ))
}

/// Temporary paths removed by the signal handler: a fixed table a handler can read without
/// locking (state 0 free, 1 being filled or emptied, 2 registered).
const SLOTS: usize = 16;
const PATH_BYTES: usize = 4096;

struct Slot {
    state: AtomicU8,
    path: std::cell::UnsafeCell<[u8; PATH_BYTES]>,
}

// SAFETY: a slot's path is written only by the thread that moved its state from 0 to 1, and
// read (by the handler) only in state 2.
unsafe impl Sync for Slot {}

static TABLE: [Slot; SLOTS] = [const {
    Slot {
        state: AtomicU8::new(0),
        path: std::cell::UnsafeCell::new([0; PATH_BYTES]),
    }
}; SLOTS];

/// A registered temporary path, unregistered on drop.
struct Registered(Option<usize>);

impl Registered {
    fn new(path: &Path) -> Registered {
        let bytes = path.as_os_str().as_bytes();
        if bytes.len() >= PATH_BYTES || bytes.contains(&0) {
            return Registered(None);
        }
        for (i, s) in TABLE.iter().enumerate() {
            if s.state
                .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                // SAFETY: state 1 gives this thread the slot.
                let buf = unsafe { &mut *s.path.get() };
                buf[..bytes.len()].copy_from_slice(bytes);
                buf[bytes.len()] = 0;
                s.state.store(2, Ordering::Release);
                return Registered(Some(i));
            }
        }
        Registered(None)
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        if let Some(i) = self.0 {
            TABLE[i].state.store(0, Ordering::Release);
        }
    }
}

extern "C" fn on_signal(sig: libc::c_int) {
    for s in &TABLE {
        if s.state.load(Ordering::Acquire) == 2 {
            // SAFETY: unlink is async-signal-safe; the path is NUL-terminated in state 2.
            unsafe {
                libc::unlink(s.path.get() as *const libc::c_char);
            }
        }
    }
    if sig == libc::SIGBUS {
        // A mapped input (a NEFF, a stream, an `.npy` array) shrank under the process: say so
        // and exit with the error status instead of dying of the signal.
        const MSG: &[u8] =
            b"sim: error: a mapped input file was truncated while it was read (SIGBUS); nothing was written\n";
        // SAFETY: write and _exit are async-signal-safe.
        unsafe {
            libc::write(2, MSG.as_ptr() as *const libc::c_void, MSG.len());
            libc::_exit(2);
        }
    }
    // SAFETY: restoring the default action and re-raising ends the process as the signal
    // would have.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

/// Remove registered temporary files when the process receives `SIGINT`, `SIGTERM`, `SIGHUP`
/// or `SIGPIPE`, then die of the signal as before; on `SIGBUS` (a mapped input file truncated
/// under the process) remove them, print a named error and exit with status 2. (Rust programs start with `SIGPIPE`
/// ignored, so that a reader closing the pipe — `sim ... | head` — would make every later
/// print fail; a command-line filter dies of the signal instead, quietly.)
pub fn install_signal_cleanup() {
    for sig in [
        libc::SIGINT,
        libc::SIGTERM,
        libc::SIGHUP,
        libc::SIGPIPE,
        libc::SIGBUS,
    ] {
        // SAFETY: the handler only calls async-signal-safe functions.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn writes_replace_regular_files_only_and_leave_no_temp() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("out.bin");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        // SAFETY: umask only swaps the process mask; it is restored at once.
        let mask = unsafe {
            let m = libc::umask(0o022);
            libc::umask(m);
            m
        };
        assert_eq!(mode, 0o644 & !(mask as u32), "mode {mode:o}");
        std::os::unix::fs::symlink(&p, d.path().join("link")).unwrap();
        let e = write_atomic(&d.path().join("link"), b"x").unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        let e = write_atomic(d.path(), b"x").unwrap_err();
        assert!(e.to_string().contains("directory"), "{e}");
        let e = write_atomic(Path::new("/dev/null"), b"x").unwrap_err();
        assert!(e.to_string().contains("device"), "{e}");
        write_atomic_with(Path::new("/dev/null"), b"x", true).unwrap();
        let names: Vec<_> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }

    #[test]
    fn limited_reads() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, [7u8; 100]).unwrap();
        assert_eq!(read_limited(&p, 100).unwrap().len(), 100);
        assert!(read_limited(&p, 99)
            .unwrap_err()
            .to_string()
            .contains("limit"));
        let e = read_limited(Path::new("/dev/zero"), 1000).unwrap_err();
        assert!(e.to_string().contains("more than 1000 bytes"), "{e}");
        assert!(read_limited(d.path(), 10).is_err());
    }
}
