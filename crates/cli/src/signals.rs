//! Signals, with Unix manners: SIGINT, SIGTERM, SIGHUP and SIGQUIT each stop a run the same way
//! (no more I/O is issued, what is in flight completes, what was measured is kept and printed),
//! and the exit status then says which one came, 128 + its number: 130, 143, 129, 131. A second
//! signal quits at once with the same convention.

use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;

/// The first signal that stopped the run (0: none).
static FIRST: AtomicI32 = AtomicI32::new(0);

/// The signals that stop a run.
pub const STOPPING: [i32; 4] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT];

/// A stop flag the first of [`STOPPING`] sets; the second quits the process at once.
pub fn stop_on_signals() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let mut signals = match signal_hook::iterator::Signals::new(STOPPING) {
        Ok(s) => s,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "iolab: warning: cannot handle signals ({e}); Ctrl-C quits at once");
            return stop;
        }
    };
    let started = std::thread::Builder::new().name("iolab-signals".into()).spawn(move || {
        for sig in signals.forever() {
            if flag.swap(true, Ordering::SeqCst) {
                std::process::exit(128 + sig);
            }
            let _ = FIRST.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
            let _ = writeln!(
                std::io::stderr(),
                "\niolab: {}: stopping; finishing the I/O in flight (a second signal quits at once)",
                name(sig)
            );
        }
    });
    if let Err(e) = started {
        let _ = writeln!(std::io::stderr(), "iolab: warning: cannot handle signals ({e})");
    }
    stop
}

/// A signal's name.
pub fn name(sig: i32) -> &'static str {
    match sig {
        SIGINT => "SIGINT",
        SIGTERM => "SIGTERM",
        SIGHUP => "SIGHUP",
        SIGQUIT => "SIGQUIT",
        _ => "a signal",
    }
}

/// The exit status of a run a signal stopped: 128 + the signal's number (130 when none is
/// known: an agent's run stopped by its coordinator's Ctrl-C).
pub fn interrupted_status() -> u8 {
    match FIRST.load(Ordering::SeqCst) {
        s @ 1..=127 => 128 + s as u8,
        _ => 130,
    }
}
