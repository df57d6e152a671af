//! iolab's recorders of a program's I/O (issue 28): the eBPF recorder ([`ebpf`]: system calls
//! with the kernel's times, io_uring and libaio submissions and completions, block requests;
//! its kernel half in bpf/iolab.bpf.c, the records it sends in [`wire`], the calls it traces in
//! [`syscalls`], their assembly into a trace in [`assemble`]). The strace recorder lives in the
//! CLI (`trace record --via strace`) and its text is imported by `iolab_trace`. Built without
//! the eBPF recorder where clang or libbpf's headers are missing (build.rs): [`ebpf::unavailable`]
//! says so, and why.
#![forbid(unsafe_code)]

pub mod assemble;
pub mod ebpf;
pub mod proctree;
pub mod syscalls;
pub mod wire;
