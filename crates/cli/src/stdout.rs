//! The one writer of stdout. Every command prints through [`out`] (or the [`outln!`] and
//! [`out!`] macros), so a reader that goes away (`| head -1`) ends the command quietly, exit 0
//! for a listing as git and ripgrep do, and a full disk (`> /dev/full`) is said once, "stdout is
//! full", exit 2: never a panic, never `Error: Broken pipe`. What happened is kept here for
//! `main` to read ([`ended`]); after a closed pipe every further write fails at once, so a
//! command stops producing. Control characters are escaped on the way (`iolab_report::text`):
//! whatever a label, a name or a path holds, no escape sequence reaches the terminal.

use std::io::{self, Write};
use std::sync::atomic::{AtomicU8, Ordering};

const OPEN: u8 = 0;
const CLOSED: u8 = 1;
const FULL: u8 = 2;
const FAILED: u8 = 3;

static STATE: AtomicU8 = AtomicU8::new(OPEN);

/// How stdout ended, when a write to it failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The reader went away (EPIPE): quiet.
    Closed,
    /// No space left (ENOSPC, EDQUOT, EFBIG): "stdout is full", exit 2.
    Full,
    /// Any other error (EIO...): said, exit 2.
    Failed,
}

/// What the first failed write to stdout was, if one failed.
pub fn ended() -> Option<Ended> {
    match STATE.load(Ordering::SeqCst) {
        CLOSED => Some(Ended::Closed),
        FULL => Some(Ended::Full),
        FAILED => Some(Ended::Failed),
        _ => None,
    }
}

fn note(e: &io::Error) {
    let state = match e.kind() {
        io::ErrorKind::BrokenPipe => CLOSED,
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded | io::ErrorKind::FileTooLarge => FULL,
        io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock => return,
        _ => FAILED,
    };
    let _ = STATE.compare_exchange(OPEN, state, Ordering::SeqCst, Ordering::SeqCst);
}

fn gone() -> Option<io::Error> {
    match STATE.load(Ordering::SeqCst) {
        OPEN => None,
        CLOSED => Some(io::Error::from(io::ErrorKind::BrokenPipe)),
        FULL => Some(io::Error::from(io::ErrorKind::StorageFull)),
        _ => Some(io::Error::other("stdout failed")),
    }
}

/// stdout, locked for the writer's life; writes fail (and are noted) as the kernel says.
pub struct Out(io::StdoutLock<'static>);

/// The writer of stdout.
pub fn out() -> Out {
    Out(io::stdout().lock())
}

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Some(e) = gone() {
            return Err(e);
        }
        // Whatever the text came from (a label, a name, a path, a trace), no control
        // character reaches the terminal raw (`iolab_report::text`).
        if buf.iter().any(|&b| (b < 0x20 && b != b'\n' && b != b'\t') || b == 0x7f || b == 0xc2) {
            let mut clean = Vec::with_capacity(buf.len() + 16);
            if iolab_report::text::filter_bytes(buf, &mut clean) {
                self.0.write_all(&clean).inspect_err(note)?;
                return Ok(buf.len());
            }
        }
        self.0.write(buf).inspect_err(note)
    }
    fn flush(&mut self) -> io::Result<()> {
        if let Some(e) = gone() {
            return Err(e);
        }
        self.0.flush().inspect_err(note)
    }
}

/// Flush stdout at the end of a command (a last line without its newline, or a full disk that
/// only the flush finds).
pub fn flush() {
    let _ = out().flush();
}

/// `Ok` for a result whose only failure was a closed stdout: what a command that measured
/// something returns, its exit status being the run's whatever became of its reader.
pub fn unless_closed<T: Default>(r: anyhow::Result<T>) -> anyhow::Result<T> {
    match r {
        Err(_) if ended() == Some(Ended::Closed) => Ok(T::default()),
        r => r,
    }
}

/// `println!` through [`out`], returning `io::Result<()>` instead of panicking.
macro_rules! outln {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        writeln!($crate::stdout::out(), $($t)*)
    }};
}

/// `print!` through [`out`], returning `io::Result<()>`.
macro_rules! out {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        write!($crate::stdout::out(), $($t)*)
    }};
}

/// One line on stderr (a note, a warning, progress without a bar), its control characters
/// escaped like stdout's (a path or a label from a user or a trace cannot recolour the terminal
/// or forge a line), and a failed write ignored: `eprintln!` panics when stderr is closed or
/// full (`2>/dev/full`), and a note is never worth a run. Every line the commands write to
/// stderr goes through here ([`errln!`]; clippy's `disallowed_macros` refuses `eprintln!` in
/// this crate).
pub fn err_line(args: std::fmt::Arguments<'_>) {
    let mut text = args.to_string();
    text.push('\n');
    let mut clean = Vec::new();
    let bytes =
        if iolab_report::text::filter_bytes(text.as_bytes(), &mut clean) { &clean[..] } else { text.as_bytes() };
    let _ = io::stderr().lock().write_all(bytes);
}

/// `eprintln!` through [`err_line`]: escaped, and never a panic.
macro_rules! errln {
    () => {
        $crate::stdout::err_line(format_args!(""))
    };
    ($($t:tt)*) => {
        $crate::stdout::err_line(format_args!($($t)*))
    };
}
