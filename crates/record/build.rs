//! Compiles the recorder's kernel half (bpf/iolab.bpf.c) with clang into $OUT_DIR/iolab.bpf.o,
//! which the crate embeds. Where clang cannot target BPF or libbpf's headers are missing, iolab
//! still builds, without the eBPF recorder: `cfg(iolab_bpf)` is left unset and
//! IOLAB_BPF_MISSING says why, which `trace record --via ebpf` repeats with what to install.
//! The kernel types come from the committed bpf/vmlinux.h (trimmed, CO-RE), so the build does
//! not need bpftool nor depend on the build machine's kernel.
use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(iolab_bpf)");
    println!("cargo::rerun-if-changed=bpf/iolab.bpf.c");
    println!("cargo::rerun-if-changed=bpf/vmlinux.h");
    println!("cargo::rerun-if-env-changed=CLANG");
    println!("cargo::rerun-if-env-changed=IOLAB_NO_BPF");
    match build() {
        Ok(()) => println!("cargo::rustc-cfg=iolab_bpf"),
        Err(why) => {
            let why = why.replace('\n', " ");
            println!("cargo::warning=iolab builds without its eBPF recorder: {why}");
            println!("cargo::rustc-env=IOLAB_BPF_MISSING={why}");
        }
    }
}

fn build() -> Result<(), String> {
    if std::env::var_os("IOLAB_NO_BPF").is_some() {
        return Err("IOLAB_NO_BPF was set at build time".into());
    }
    let arch = match std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default().as_str() {
        "x86_64" => "x86",
        "aarch64" => "arm64",
        other => return Err(format!("the recorder knows x86-64 and aarch64 system calls, not {other}")),
    };
    let out = PathBuf::from(std::env::var_os("OUT_DIR").ok_or("OUT_DIR is not set")?).join("iolab.bpf.o");
    let clang = std::env::var("CLANG").unwrap_or_else(|_| "clang".into());
    let res = Command::new(&clang)
        .args(["-O2", "-g", "-target", "bpf", "-Wall", "-Werror"])
        .arg(format!("-D__TARGET_ARCH_{arch}"))
        .args(["-Ibpf", "-idirafter", "/usr/include", "-c", "bpf/iolab.bpf.c", "-o"])
        .arg(&out)
        .output()
        .map_err(|e| format!("clang was not found ({clang}: {e})"))?;
    if !res.status.success() {
        let err = String::from_utf8_lossy(&res.stderr);
        let first = err.lines().find(|l| l.contains("error")).unwrap_or("clang failed").trim().to_string();
        if err.contains("bpf_helpers.h") {
            return Err(format!("libbpf's headers are missing ({first})"));
        }
        return Err(format!("clang could not compile bpf/iolab.bpf.c: {first}"));
    }
    Ok(())
}
