//! The eBPF recorder: loads the kernel half (bpf/iolab.bpf.c, compiled by build.rs and
//! embedded) with aya, which relocates its field accesses against the running kernel's BTF,
//! tells it which system calls to trace and which process tree (the command it forks, or the
//! process it attaches to: `traced`, followed through fork and exit in the kernel), attaches
//! its tp_btf programs (no tracefs needed), and turns what comes out of the ring buffer into a
//! trace ([`crate::assemble::Builder`]) until the tree has exited or the stop flag is set.
//! Lost events are read from the kernel half's counters at the end and kept in the trace.

use crate::assemble::Summary;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// What to record.
pub enum What {
    /// Fork this command (argv) in `cwd` and record it and every process it makes.
    Spawn { argv: Vec<String>, cwd: PathBuf },
    /// Record this running process (all its threads) and the processes it makes from now on.
    Attach(u32),
    /// Record nothing but block requests, until stopped (or for `Options::duration`).
    Watch,
}

/// How to record.
pub struct Options {
    /// The ring buffer's size in bytes (a power of two, at least a page).
    pub ring_bytes: u32,
    /// Record system calls and asynchronous I/O (the default level).
    pub syscalls: bool,
    /// Record block requests on these devices (dev as the kernel numbers it, and a name).
    pub block: Vec<(u32, String)>,
    /// Stop after this long (block-level watching).
    pub duration: Option<Duration>,
    /// The trace's source line (the command, `process PID`...).
    pub source: String,
}

/// What a recording ended with.
pub struct Recorded<W> {
    pub out: W,
    pub summary: Summary,
    /// The command's exit status (`What::Spawn`).
    pub status: Option<ExitStatus>,
    /// Parts that could not be attached (io_uring on a kernel without it), in words.
    pub notes: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum EbpfError {
    #[error(
        "this iolab was built without its eBPF recorder ({0}); install clang, llvm, libbpf-dev and bpftool (apt-get install clang llvm libbpf-dev bpftool) and rebuild iolab, or record with --via strace"
    )]
    NotBuilt(String),
    #[error(
        "the kernel refused the eBPF recorder ({0}): it needs root, or CAP_BPF and CAP_PERFMON; run iolab as root, or record with --via strace (ptrace, slower)"
    )]
    Refused(String),
    #[error("the kernel cannot run the eBPF recorder ({0}); record with --via strace")]
    Unsupported(String),
    #[error("cannot start `{0}`: {1}")]
    Spawn(String, std::io::Error),
    #[error("cannot write the trace: {0}")]
    Write(std::io::Error),
}

/// Why the eBPF recorder cannot run here, checked without loading anything: not built in, no
/// BTF, or not privileged. `None`: it should work (loading may still be refused).
pub fn unavailable() -> Option<EbpfError> {
    if !cfg!(iolab_bpf) {
        return Some(EbpfError::NotBuilt(missing()));
    }
    if !std::path::Path::new("/sys/kernel/btf/vmlinux").exists() {
        return Some(EbpfError::Unsupported(
            "no /sys/kernel/btf/vmlinux: the kernel was built without CONFIG_DEBUG_INFO_BTF".into(),
        ));
    }
    if !privileged() {
        return Some(EbpfError::Refused("not root, and without CAP_BPF and CAP_PERFMON".into()));
    }
    None
}

fn missing() -> String {
    option_env!("IOLAB_BPF_MISSING").unwrap_or("clang or libbpf's headers were missing at build time").to_string()
}

/// Root, or CAP_BPF (39) and CAP_PERFMON (38) effective.
fn privileged() -> bool {
    if rustix::process::geteuid().is_root() {
        return true;
    }
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let eff = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or(0);
    eff & (1 << 39) != 0 && eff & (1 << 38) != 0
}

#[cfg(not(iolab_bpf))]
pub fn record<W: Write>(_: What, _: &Options, _: W, _: &AtomicBool) -> Result<Recorded<W>, EbpfError> {
    Err(EbpfError::NotBuilt(missing()))
}

#[cfg(iolab_bpf)]
pub use live::record;

/// The loader, where the kernel half was built.
#[cfg(iolab_bpf)]
mod live {
    use super::*;
    use crate::assemble::{Builder, ProcFds};
    use std::sync::atomic::Ordering;
    use std::time::Instant;

    static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/iolab.bpf.o"));

    /// The chain of an error's messages, and whether the kernel said EPERM or EACCES anywhere in it.
    fn chain(e: &(dyn std::error::Error + 'static)) -> (String, bool) {
        let mut parts = vec![e.to_string()];
        let mut denied = false;
        let mut cur = e.source();
        while let Some(c) = cur {
            if let Some(io) = c.downcast_ref::<std::io::Error>() {
                denied |= matches!(io.raw_os_error(), Some(1) | Some(13));
            }
            let s = c.to_string();
            if !parts.iter().any(|p| p.contains(&s)) {
                parts.push(s);
            }
            cur = c.source();
        }
        (parts.join(": "), denied)
    }

    fn load_error(e: &(dyn std::error::Error + 'static)) -> EbpfError {
        let (msg, denied) = chain(e);
        if denied {
            EbpfError::Refused(msg)
        } else {
            EbpfError::Unsupported(msg)
        }
    }

    fn now(clock: rustix::time::ClockId) -> u64 {
        let t = rustix::time::clock_gettime(clock);
        (t.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(t.tv_nsec as u64)
    }

    /// The kernel half's reasons for losing events, by index (`enum lost_why`).
    const LOST: &[&str] = &[
        "the ring buffer was full (raise --buffer)",
        "more threads in system calls at once than the recorder's table holds",
        "more processes than the recorder's table holds",
        "iocbs or io_events past 256 in one call",
        "fixed files past 256 in one registration",
        "more block requests in flight than the recorder's table holds",
        "more io_uring rings than the recorder's table holds",
    ];

    /// How often the ring is drained when the kernel half has not woken the reader.
    const POLL: Duration = Duration::from_millis(20);

    /// This thread's CPU time so far (/proc/thread-self/schedstat's first field), 0 if unknown.
    fn thread_cpu_ns() -> u64 {
        std::fs::read_to_string("/proc/thread-self/schedstat")
            .ok()
            .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()))
            .unwrap_or(0)
    }

    fn map_err(e: aya::maps::MapError) -> EbpfError {
        load_error(&e)
    }

    fn no_map(n: &str) -> EbpfError {
        EbpfError::Unsupported(format!("the recorder's object has no map `{n}`"))
    }

    /// The kernel half's switches: the process that spawns the command (0: none), block
    /// requests and system calls on or off.
    fn set_config(bpf: &mut aya::Ebpf, opts: &Options, spawner: u32) -> Result<(), EbpfError> {
        let mut cfg: aya::maps::Array<_, [u32; 4]> =
            aya::maps::Array::try_from(bpf.map_mut("config").ok_or_else(|| no_map("config"))?).map_err(map_err)?;
        cfg.set(0, [spawner, u32::from(!opts.block.is_empty()), u32::from(opts.syscalls), 0], 0).map_err(map_err)
    }

    /// The kernel half loaded and told what to trace: the system calls (this architecture's
    /// numbers), the devices, the level.
    fn load(opts: &Options, btf: &aya::Btf) -> Result<aya::Ebpf, EbpfError> {
        use aya::maps::{Array, HashMap};
        // The kernel half wakes the reader only when a quarter of the ring waits; it drains
        // the ring every POLL otherwise.
        let wake_at = u64::from(opts.ring_bytes / 4);
        let mut bpf = aya::EbpfLoader::new()
            .btf(Some(btf))
            .map_max_entries("events", opts.ring_bytes)
            .override_global("wake_at", &wake_at, true)
            .load(OBJECT)
            .map_err(|e| load_error(&e))?;
        {
            let mut si: Array<_, u32> =
                Array::try_from(bpf.map_mut("sysinfo").ok_or_else(|| no_map("sysinfo"))?).map_err(map_err)?;
            if opts.syscalls {
                for c in crate::syscalls::CALLS {
                    if let Some(nr) = crate::syscalls::number(c) {
                        si.set(nr, crate::syscalls::packed(c), 0).map_err(map_err)?;
                    }
                }
            }
        }
        {
            let mut dev: HashMap<_, u32, u32> =
                HashMap::try_from(bpf.map_mut("devices").ok_or_else(|| no_map("devices"))?).map_err(map_err)?;
            for (d, _) in &opts.block {
                dev.insert(d, 1, 0).map_err(map_err)?;
            }
        }
        set_config(&mut bpf, opts, 0)?;
        Ok(bpf)
    }

    /// The programs attached to their tracepoints; those not needed (io_uring's, on a kernel
    /// without them) said in the notes returned.
    fn attach(bpf: &mut aya::Ebpf, opts: &Options, btf: &aya::Btf) -> Result<Vec<String>, EbpfError> {
        use aya::programs::BtfTracePoint;
        let mut progs: Vec<(&str, &str, bool)> = Vec::new();
        if opts.syscalls {
            progs.extend([
                ("handle_fork", "sched_process_fork", true),
                ("handle_exit", "sched_process_exit", true),
                ("handle_sys_enter", "sys_enter", true),
                ("handle_sys_exit", "sys_exit", true),
                ("handle_uring_create", "io_uring_create", false),
                ("handle_uring_register", "io_uring_register", false),
                ("handle_uring_submit", "io_uring_submit_req", false),
                ("handle_uring_complete", "io_uring_complete", false),
            ]);
        }
        if !opts.block.is_empty() {
            progs.extend([
                ("handle_rq_issue", "block_rq_issue", true),
                ("handle_rq_complete", "block_rq_complete", true),
            ]);
        }
        let mut notes = Vec::new();
        for (name, tp, needed) in progs {
            let attached = (|| -> Result<(), EbpfError> {
                let p: &mut BtfTracePoint = bpf
                    .program_mut(name)
                    .ok_or_else(|| EbpfError::Unsupported(format!("no program {name}")))?
                    .try_into()
                    .map_err(|e: aya::programs::ProgramError| load_error(&e))?;
                p.load(tp, btf).map_err(|e| load_error(&e))?;
                p.attach().map_err(|e| load_error(&e))?;
                Ok(())
            })();
            match attached {
                Ok(()) => {}
                Err(e) if needed => return Err(e),
                Err(e) => notes.push(format!("{tp} is not traced: {e}")),
            }
        }
        if notes.iter().any(|n| n.starts_with("io_uring")) {
            notes.push("io_uring operations are not in this trace (the kernel lacks its tracepoints)".into());
        }
        Ok(notes)
    }

    /// The traced tree's root: the command spawned (its child handle too), or the process
    /// attached to; none when watching the devices only.
    fn start<W: Write>(
        bpf: &mut aya::Ebpf,
        what: &What,
        opts: &Options,
        b: &mut Builder<W>,
    ) -> Result<(Option<std::process::Child>, Option<u32>), EbpfError> {
        match what {
            What::Spawn { argv, cwd } => {
                let (prog, args) = argv
                    .split_first()
                    .ok_or_else(|| EbpfError::Spawn(String::new(), std::io::Error::other("no command given")))?;
                // The recorder's own fork of the command is followed (the kernel adds the child
                // at fork, before it runs); its calls before its execve are left out.
                set_config(bpf, opts, std::process::id())?;
                let spawned = std::process::Command::new(prog).args(args).current_dir(cwd).spawn();
                set_config(bpf, opts, 0)?;
                let c = spawned.map_err(|e| EbpfError::Spawn(prog.clone(), e))?;
                b.add_process(c.id(), Some(cwd.to_string_lossy().into_owned()), true);
                let id = c.id();
                Ok((Some(c), Some(id)))
            }
            What::Attach(pid) => {
                // The process and the descendants it already has (those it forks from now on
                // are followed in the kernel).
                let tree = crate::proctree::descendants(*pid);
                if opts.syscalls {
                    let mut traced: aya::maps::HashMap<_, u32, u32> =
                        aya::maps::HashMap::try_from(bpf.map_mut("traced").ok_or_else(|| no_map("traced"))?)
                            .map_err(map_err)?;
                    for p in &tree {
                        traced.insert(p, 1, 0).map_err(map_err)?;
                    }
                }
                for p in tree {
                    let cwd =
                        std::fs::read_link(format!("/proc/{p}/cwd")).ok().map(|p| p.to_string_lossy().into_owned());
                    b.add_process(p, cwd, false);
                }
                Ok((None, Some(*pid)))
            }
            What::Watch => Ok((None, None)),
        }
    }

    /// Every record the ring holds now, decoded into the trace (`bad`: those the decoder refused).
    fn drain<W: Write>(
        ring: &mut aya::maps::RingBuf<aya::maps::MapData>,
        b: &mut Builder<W>,
        bad: &mut u64,
    ) -> Result<(), EbpfError> {
        while let Some(item) = ring.next() {
            match crate::wire::decode(&item) {
                Ok(ev) => b.event(ev).map_err(EbpfError::Write)?,
                Err(_) => *bad += 1,
            }
        }
        Ok(())
    }

    /// Whether the recording is over: the command and its tree have exited, the attached
    /// process is gone, or the duration is up.
    fn over(what: &What, opts: &Options, status: bool, tree_alive: bool, started: Instant) -> bool {
        let ended = match what {
            What::Spawn { .. } => status && !tree_alive,
            What::Attach(pid) => {
                if opts.syscalls {
                    !tree_alive
                } else {
                    !std::path::Path::new(&format!("/proc/{pid}")).exists()
                }
            }
            What::Watch => false,
        };
        ended || opts.duration.is_some_and(|d| started.elapsed() >= d)
    }

    /// Record until the traced tree has exited (or the stop flag, or the duration).
    pub fn record<W: Write>(what: What, opts: &Options, out: W, stop: &AtomicBool) -> Result<Recorded<W>, EbpfError> {
        use aya::maps::{HashMap, PerCpuArray, RingBuf};

        if let Some(e) = unavailable() {
            return Err(e);
        }
        let btf = aya::Btf::from_sys_fs().map_err(|e| load_error(&e))?;
        let mut bpf = load(opts, &btf)?;
        let notes = attach(&mut bpf, opts, &btf)?;
        let mut ring = RingBuf::try_from(bpf.take_map("events").ok_or_else(|| no_map("events"))?).map_err(map_err)?;
        let t0 = now(rustix::time::ClockId::Monotonic);
        let epoch = now(rustix::time::ClockId::Realtime);
        let detail = format!(
            "iolab {} eBPF recorder (aya, CO-RE) on Linux {}",
            env!("CARGO_PKG_VERSION"),
            rustix::system::uname().release().to_string_lossy()
        );
        let mut b = Builder::new(out, ProcFds, &opts.source, &detail, t0, epoch).map_err(EbpfError::Write)?;
        for (d, name) in &opts.block {
            b.add_device(*d, name).map_err(EbpfError::Write)?;
        }
        let (mut child, root) = start(&mut bpf, &what, opts, &mut b)?;

        let cpu0 = thread_cpu_ns();
        let traced: HashMap<_, u32, u32> =
            HashMap::try_from(bpf.map("traced").ok_or_else(|| no_map("traced"))?).map_err(map_err)?;
        let started = Instant::now();
        let mut status = None;
        let mut bad = 0u64;
        let mut stopping: Option<Instant> = None;
        loop {
            drain(&mut ring, &mut b, &mut bad)?;
            if let Some(c) = child.as_mut() {
                if status.is_none() {
                    status = c.try_wait().ok().flatten();
                }
            }
            let tree_alive = opts.syscalls && traced.keys().next().is_some();
            if over(&what, opts, status.is_some(), tree_alive, started) {
                break;
            }
            if stop.load(Ordering::Relaxed) {
                match (&what, stopping) {
                    // A recorded command is asked to end (SIGTERM) and given 5 s to; an attached
                    // process is left running and only the recording ends.
                    (What::Spawn { .. }, None) => {
                        if let Some(pid) = root.and_then(|p| rustix::process::Pid::from_raw(p as i32)) {
                            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
                        }
                        stopping = Some(Instant::now());
                    }
                    (What::Spawn { .. }, Some(t)) if t.elapsed() < Duration::from_secs(5) => {}
                    _ => break,
                }
            }
            let mut fds = [rustix::event::PollFd::new(&ring, rustix::event::PollFlags::IN)];
            let timeout = rustix::event::Timespec { tv_sec: 0, tv_nsec: POLL.as_nanos() as i64 };
            let _ = rustix::event::poll(&mut fds, Some(&timeout));
        }
        // What the kernel wrote before the end.
        drain(&mut ring, &mut b, &mut bad)?;
        b.lost("records the decoder refused", bad);
        if let Some(m) = bpf.map("lost") {
            if let Ok(lost) = PerCpuArray::<_, u64>::try_from(m) {
                for (i, why) in LOST.iter().enumerate() {
                    if let Ok(v) = lost.get(&(i as u32), 0) {
                        b.lost(why, v.iter().sum());
                    }
                }
            }
        }
        if let (Some(c), None) = (child.as_mut(), status) {
            status = c.wait().ok();
        }
        let (mut kernel_runs, mut kernel_ns) = (0u64, 0u64);
        for (_, p) in bpf.programs() {
            if let Ok(info) = p.info() {
                kernel_runs += info.run_count();
                kernel_ns += info.run_time().as_nanos() as u64;
            }
        }
        let reader_cpu_ns = thread_cpu_ns().saturating_sub(cpu0);
        let (out, mut summary) = b.finish().map_err(EbpfError::Write)?;
        summary.kernel_runs = kernel_runs;
        summary.kernel_ns = kernel_ns;
        summary.reader_cpu_ns = reader_cpu_ns;
        Ok(Recorded { out, summary, status, notes })
    }
}
