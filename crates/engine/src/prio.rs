//! A thread's I/O priority and nice value (`--ioprio`, `--nice`: fio's prio, prioclass, nice):
//! ioprio_set(2) and ioprio_get(2) on the calling thread (IOPRIO_WHO_PROCESS with 0, which
//! Linux reads as the calling thread; requests it submits without a priority of their own
//! inherit it), and setpriority(2) for the nice value, a per-thread attribute on Linux. Raw
//! system calls, each behind a `// SAFETY:` comment.

use std::io;

const IOPRIO_WHO_PROCESS: libc::c_int = 1;

/// Set the calling thread's I/O priority (IOPRIO_PRIO_VALUE(class, level)).
pub fn set_ioprio(value: u16) -> io::Result<()> {
    // SAFETY: plain integer arguments; the call changes only the calling thread's priority.
    let r = unsafe { libc::syscall(libc::SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, value as libc::c_int) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The calling thread's I/O priority.
pub fn ioprio() -> io::Result<u16> {
    // SAFETY: plain integer arguments; the call only reads.
    let r = unsafe { libc::syscall(libc::SYS_ioprio_get, IOPRIO_WHO_PROCESS, 0) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r as u16)
}

/// Set the calling thread's nice value (-20 to 19; below its current one needs CAP_SYS_NICE).
pub fn set_nice(nice: i8) -> io::Result<()> {
    // SAFETY: plain integer arguments; who = 0 names the calling thread on Linux.
    let r = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice as libc::c_int) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The calling thread's nice value.
pub fn nice() -> io::Result<i8> {
    // SAFETY: getpriority can return -1 as a value: errno is cleared first and read after.
    unsafe { *libc::__errno_location() = 0 };
    // SAFETY: plain integer arguments; the call only reads.
    let r = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
    let e = io::Error::last_os_error();
    if r == -1 && e.raw_os_error().unwrap_or(0) != 0 {
        return Err(e);
    }
    Ok(r as i8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_threads_priority_and_nice_value_are_its_own() {
        let before = (ioprio().unwrap(), nice().unwrap());
        std::thread::spawn(|| {
            set_ioprio(3 << 13).unwrap();
            assert_eq!(ioprio().unwrap(), 3 << 13);
            set_nice(5).unwrap();
            assert_eq!(nice().unwrap(), 5);
        })
        .join()
        .unwrap();
        assert_eq!((ioprio().unwrap(), nice().unwrap()), before, "another thread's are untouched");
        // Class 5 is none of the kernel's (1 real-time, 2 best-effort, 3 idle).
        let e = set_ioprio(5 << 13).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EINVAL));
    }
}
