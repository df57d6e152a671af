//! A thread's NUMA memory policy (`--mem-policy`, fio's numa_mem_policy): set_mempolicy(2) on
//! the calling thread, before its engine's buffers are made, so their pages are placed by it;
//! get_mempolicy(2) to read it back. Raw system calls (libc has no wrapper and no crate we
//! use does), each behind a `// SAFETY:` comment.

use iolab_spec::numa::MemPolicy;
use std::io;

// linux/mempolicy.h
const MPOL_DEFAULT: libc::c_int = 0;
const MPOL_PREFERRED: libc::c_int = 1;
const MPOL_BIND: libc::c_int = 2;
const MPOL_INTERLEAVE: libc::c_int = 3;
const MPOL_LOCAL: libc::c_int = 4;

/// Nodes a mask holds: 1024, the kernel's largest MAX_NUMNODES.
const MASK_WORDS: usize = 16;
const MASK_BITS: usize = MASK_WORDS * 64;

/// A policy's mode and its node mask.
fn mode_of(p: &MemPolicy) -> io::Result<(libc::c_int, [u64; MASK_WORDS])> {
    let mut mask = [0u64; MASK_WORDS];
    let mut set = |nodes: &[u32]| -> io::Result<()> {
        for &n in nodes {
            let n = n as usize;
            if n >= MASK_BITS {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("node {n}: the highest is {}", MASK_BITS - 1),
                ));
            }
            mask[n / 64] |= 1 << (n % 64);
        }
        Ok(())
    };
    let mode = match p {
        MemPolicy::Default => MPOL_DEFAULT,
        MemPolicy::Local => MPOL_LOCAL,
        MemPolicy::Prefer(n) => {
            set(&[*n])?;
            MPOL_PREFERRED
        }
        MemPolicy::Bind(n) => {
            set(&n.0)?;
            MPOL_BIND
        }
        MemPolicy::Interleave(n) => {
            set(&n.0)?;
            MPOL_INTERLEAVE
        }
    };
    Ok((mode, mask))
}

/// Set the calling thread's memory policy (the kernel refuses nodes that are not online with
/// EINVAL).
pub fn set_mempolicy(p: &MemPolicy) -> io::Result<()> {
    let (mode, mask) = mode_of(p)?;
    let (ptr, maxnode) = match mode {
        MPOL_DEFAULT | MPOL_LOCAL => (std::ptr::null(), 0),
        // The kernel reads maxnode - 1 bits.
        _ => (mask.as_ptr(), MASK_BITS as libc::c_ulong + 1),
    };
    // SAFETY: `ptr` is null or points to MASK_WORDS words that outlive the call, and the
    // kernel reads at most maxnode - 1 = MASK_BITS bits of it; the call changes only the
    // calling thread's policy.
    let r = unsafe { libc::syscall(libc::SYS_set_mempolicy, mode, ptr, maxnode) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The calling thread's memory policy: its mode (linux/mempolicy.h's MPOL_*) and nodes.
pub fn mempolicy() -> io::Result<(i32, Vec<u32>)> {
    let mut mode: libc::c_int = 0;
    let mut mask = [0u64; MASK_WORDS];
    // SAFETY: `mode` and `mask` are writable and outlive the call; the kernel writes at most
    // MASK_BITS bits (maxnode) into the mask; addr 0 and flags 0 ask for the thread's policy.
    let r = unsafe {
        libc::syscall(
            libc::SYS_get_mempolicy,
            &mut mode as *mut libc::c_int,
            mask.as_mut_ptr(),
            MASK_BITS as libc::c_ulong,
            0usize,
            0 as libc::c_ulong,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    let nodes = (0..MASK_BITS).filter(|b| mask[b / 64] >> (b % 64) & 1 == 1).map(|b| b as u32).collect();
    Ok((mode, nodes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_set_on_a_thread_reads_back() {
        let nodes = std::fs::read_to_string("/sys/devices/system/node/online").unwrap_or_default();
        if nodes.is_empty() {
            eprintln!("SKIPPED a_policy_set_on_a_thread_reads_back: no /sys/devices/system/node/online");
            return;
        }
        // On a thread of its own: the policy is the thread's.
        std::thread::spawn(|| {
            set_mempolicy(&"bind:0".parse().unwrap()).unwrap();
            assert_eq!(mempolicy().unwrap(), (MPOL_BIND, vec![0]));
            set_mempolicy(&"interleave:0".parse().unwrap()).unwrap();
            assert_eq!(mempolicy().unwrap(), (MPOL_INTERLEAVE, vec![0]));
            set_mempolicy(&MemPolicy::Local).unwrap();
            assert_eq!(mempolicy().unwrap().0, MPOL_LOCAL);
            // A node that is not online is refused (the machine's highest is below 1000).
            let e = set_mempolicy(&"bind:1000".parse().unwrap()).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::EINVAL), "{e}");
        })
        .join()
        .unwrap();
    }
}
