//! The files a user names for iolab to read (job files, scenario files, node lists, PostMark
//! configurations, tokens, traces): opened without blocking, so a FIFO or a terminal never holds
//! iolab past a signal; refused unless a regular file (a directory, FIFO, socket or device is
//! named as such); read up to a cap said in the error, so `/dev/zero` or a 50 MB file cannot
//! exhaust memory.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The most a job file (iolab's TOML or fio's), a scenario file or a PostMark configuration
/// may hold: fio's reader has the same cap.
pub const JOB_FILE_MAX: u64 = 4 << 20;
/// The most a node list (`--nodes FILE`) may hold.
pub const NODES_FILE_MAX: u64 = 1 << 20;
/// The most a token file may hold (its first line is the token).
pub const TOKEN_FILE_MAX: u64 = 64 << 10;

/// Why a file named for reading cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    // `err`, not `source`: the reason is said once, in this message (anyhow's chain would
    // repeat a `source`).
    #[error("reading {what} {}: {err}", path.display())]
    Open { what: &'static str, path: PathBuf, err: io::Error },
    #[error("the {what} {} is {kind}, not a regular file; name the file itself", path.display())]
    NotRegular { what: &'static str, path: PathBuf, kind: &'static str },
    #[error("the {what} {} is larger than {} (the most iolab reads as one); is it the right file?", path.display(), size_words(*cap))]
    TooLarge { what: &'static str, path: PathBuf, cap: u64 },
    #[error("the {what} {} is not text (UTF-8): byte {at} is not; is it the right file?", path.display())]
    NotText { what: &'static str, path: PathBuf, at: usize },
    #[error("reading {what} {}: {err}", path.display())]
    Read { what: &'static str, path: PathBuf, err: io::Error },
}

fn size_words(n: u64) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 && n.is_multiple_of(1 << 10) {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} bytes")
    }
}

/// What a file type is, in words (`a directory`, `a FIFO`...); `None` for a regular file.
pub fn not_regular(t: &std::fs::FileType) -> Option<&'static str> {
    Some(if t.is_file() {
        return None;
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    })
}

/// Open `path` (a `what`, for errors: "job file") for reading if it is a regular file. The open
/// does not block (O_NONBLOCK: a FIFO with no writer, a terminal), and the type is checked on
/// the descriptor opened, not on the name.
pub fn open_regular(path: &Path, what: &'static str) -> Result<File, InputError> {
    let f = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY).open(path).map_err(
        |err| {
            // A socket cannot be opened at all (ENXIO): name what it is rather than the errno.
            match std::fs::metadata(path).ok().and_then(|m| not_regular(&m.file_type())) {
                Some(kind) => InputError::NotRegular { what, path: path.into(), kind },
                None => InputError::Open { what, path: path.into(), err },
            }
        },
    )?;
    let meta = f.metadata().map_err(|err| InputError::Read { what, path: path.into(), err })?;
    if let Some(kind) = not_regular(&meta.file_type()) {
        return Err(InputError::NotRegular { what, path: path.into(), kind });
    }
    // O_NONBLOCK means nothing to a regular file's reads; it is left set.
    Ok(f)
}

/// The bytes of a regular file of at most `cap` bytes.
pub fn read_bytes(path: &Path, what: &'static str, cap: u64) -> Result<Vec<u8>, InputError> {
    let f = open_regular(path, what)?;
    let size = f.metadata().map(|m| m.len()).unwrap_or(0);
    if size > cap {
        return Err(InputError::TooLarge { what, path: path.into(), cap });
    }
    let mut buf = Vec::with_capacity(size as usize);
    // A file growing while read is held to the cap as well.
    f.take(cap + 1).read_to_end(&mut buf).map_err(|err| InputError::Read { what, path: path.into(), err })?;
    if buf.len() as u64 > cap {
        return Err(InputError::TooLarge { what, path: path.into(), cap });
    }
    Ok(buf)
}

/// The text of a regular file of at most `cap` bytes.
pub fn read_text(path: &Path, what: &'static str, cap: u64) -> Result<String, InputError> {
    let bytes = read_bytes(path, what, cap)?;
    String::from_utf8(bytes).map_err(|e| InputError::NotText {
        what,
        path: path.into(),
        at: e.utf8_error().valid_up_to(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("iolab-input-{}-{:?}", std::process::id(), std::thread::current().id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_regular_file_within_its_cap_reads() {
        let d = dir();
        let p = d.join("f");
        std::fs::write(&p, "hello").unwrap();
        assert_eq!(read_text(&p, "job file", 5).unwrap(), "hello");
        let e = read_text(&p, "job file", 4).unwrap_err().to_string();
        assert!(e.contains("larger than 4 bytes"), "{e}");
        std::fs::write(&p, b"a\xffb").unwrap();
        let e = read_text(&p, "job file", 100).unwrap_err().to_string();
        assert!(e.contains("byte 1"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn devices_directories_and_fifos_are_named_not_read() {
        let d = dir();
        for (p, kind) in [
            (Path::new("/dev/zero"), "a character device"),
            (Path::new("/dev/null"), "a character device"),
            (&d, "a directory"),
        ] {
            let e = read_text(p, "job file", JOB_FILE_MAX).unwrap_err().to_string();
            assert!(e.contains(kind), "{e}");
            assert!(e.contains("job file"), "{e}");
        }
        let fifo = d.join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            // Opened without a writer, it would block; it is refused at once instead.
            let t = std::time::Instant::now();
            let e = read_text(&fifo, "scenario file", JOB_FILE_MAX).unwrap_err().to_string();
            assert!(e.contains("a FIFO"), "{e}");
            assert!(t.elapsed() < std::time::Duration::from_secs(5));
        }
        let sock = d.join("sock");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let e = read_text(&sock, "job file", 10).unwrap_err().to_string();
        assert!(e.contains("a socket"), "{e}");
        let e = read_text(&d.join("missing"), "job file", 10).unwrap_err();
        // The reason is said once: in the message, not again as a source (anyhow's chain).
        assert!(std::error::Error::source(&e).is_none());
        let e = e.to_string();
        assert!(e.starts_with("reading job file") && e.contains("No such file"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
