//! A job's NUMA placement on each of its worker threads, before the thread makes its engine and
//! buffers (`--numa-nodes`, `--mem-policy`: fio's numa_cpu_nodes, numa_mem_policy): the CPUs
//! of the nodes, read from /sys/devices/system/node, and the memory policy. A node the machine
//! does not have is the job's error, naming the nodes it has.

use crate::source::SourceError;
use iolab_spec::cpus::Cpus;
use iolab_spec::numa::{cpulist_path, Numa};

/// The CPUs of `nodes`, as the kernel lists them.
pub fn cpus_of(nodes: &Cpus) -> Result<Cpus, SourceError> {
    let mut all = Vec::new();
    for &n in &nodes.0 {
        let text = std::fs::read_to_string(cpulist_path(n)).map_err(|e| {
            let online = std::fs::read_to_string("/sys/devices/system/node/online").unwrap_or_default();
            SourceError::Said(format!(
                "--numa-nodes {nodes}: node {n} is not on this machine ({e}); its nodes: {}",
                if online.trim().is_empty() { "none listed in /sys/devices/system/node" } else { online.trim() }
            ))
        })?;
        // A node without CPUs (memory only) lists none.
        if !text.trim().is_empty() {
            let c: Cpus = text.trim().parse().map_err(|e| SourceError::Said(format!("{}: {e}", cpulist_path(n))))?;
            all.extend(c.0);
        }
    }
    all.sort_unstable();
    all.dedup();
    if all.is_empty() {
        return Err(SourceError::Said(format!("--numa-nodes {nodes}: these nodes have no CPUs (memory only)")));
    }
    Ok(Cpus(all))
}

/// Apply the memory policy on the calling thread; the CPUs to pin it to, when nodes are given.
pub fn place(numa: &Numa) -> Result<Option<Cpus>, SourceError> {
    if let Some(p) = &numa.mem {
        iolab_engine::numa::set_mempolicy(p).map_err(|e| {
            SourceError::Said(format!(
                "--mem-policy {p}: the system refused it ({e}); see the nodes online in /sys/devices/system/node/online"
            ))
        })?;
    }
    numa.nodes.as_ref().map(cpus_of).transpose()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{run_plan, Control, NoSink};
    use iolab_spec::{Bytes, JobPatch, Phase, Plan, Rw};

    #[test]
    fn a_job_runs_on_its_nodes_cpus_with_its_policy_and_a_missing_node_is_named() {
        let Ok(online) = std::fs::read_to_string("/sys/devices/system/node/online") else {
            eprintln!("SKIPPED numa: no /sys/devices/system/node/online");
            return;
        };
        let node0: Cpus = std::fs::read_to_string(cpulist_path(0)).unwrap().trim().parse().unwrap();
        assert_eq!(cpus_of(&Cpus(vec![0])).unwrap(), node0);
        let e = cpus_of(&Cpus(vec![0, 999])).unwrap_err().to_string();
        assert!(e.contains("node 999 is not on this machine") && e.contains(online.trim()), "{e}");
        // A real job: bound to node 0 it runs; asked for node 999 it ends with that reason.
        let dir = tempfile::tempdir().unwrap();
        let run = |nodes: &str, mem: &str| {
            let job = JobPatch {
                target: Some(dir.path().join("f")),
                rw: Some(Rw::Write),
                size: Some(Bytes::kib(256)),
                numa_nodes: Some(nodes.parse().unwrap()),
                mem_policy: Some(mem.parse().unwrap()),
                ..Default::default()
            }
            .resolve("n")
            .unwrap();
            let plan = Plan { phases: vec![Phase { name: "n".into(), jobs: vec![job] }] };
            run_plan(&plan, &Control::default(), &mut NoSink).unwrap().phases[0].jobs[0].clone()
        };
        let j = run("0", "bind:0");
        assert_eq!((j.error, j.total.write().bytes), (None, 256 << 10));
        let j = run("999", "bind:0");
        assert!(j.error.unwrap_or_default().contains("node 999 is not on this machine"));
        let j = run("0", "bind:999");
        assert!(j.error.unwrap_or_default().contains("--mem-policy bind:999: the system refused it"));
    }
}
