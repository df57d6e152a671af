//! Data validation's part in running a phase (`--verify`): before it, the files its validating
//! block jobs use are opened with their key maps and journals (shared by the threads and jobs on
//! one file, a later phase taking on an earlier one's map), and each application or replay job
//! gets its file set; after it, `--verify-after`'s pass, the maps saved with their journals and
//! what was found in `phases[].verify`. The stamps, maps,
//! journals and checks themselves are crates/verify's; the executor calls these two.

use crate::layout::Target;
use crate::source::verify_files::FileSet;
use iolab_model::{PhaseResult, VerifyResult};
use iolab_spec::Phase;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

/// The files under validation in a phase, by path (threads and jobs on one file share it).
pub type Validated = HashMap<PathBuf, Arc<iolab_verify::Tracked>>;

/// Why a phase's validated files could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum ValidationError {
    #[error(transparent)]
    Spec(#[from] iolab_spec::SpecError),
    #[error("validation: {0}")]
    Verify(#[from] iolab_verify::VerifyError),
}

/// Open the files the phase's validating jobs use (`--verify`): their key maps and journals.
/// `node` names the node in the stamps (the host name when `None`); `handed` are the key maps
/// the coordinator handed over (`--verify-on other`): a file that has one takes its keys, and
/// a job reading another node's file (`verify.peer`) must have one.
pub fn open(
    phase: &Phase,
    targets: &[Vec<Target>],
    created: &HashSet<PathBuf>,
    carried: &Validated,
    node: Option<&str>,
    handed: &[iolab_verify::HandedMap],
) -> Result<Validated, ValidationError> {
    let mut out = Validated::new();
    let node = node.map_or_else(iolab_sysstat::hostname, str::to_string);
    for (job, ts) in phase.jobs.iter().zip(targets) {
        let (Some(v), Some(b)) = (&job.verify, job.workload.block()) else { continue };
        let key_block = b.key_block() as u32;
        for t in ts {
            if let Some(have) = out.get(&t.path) {
                if have.key_block != key_block {
                    return Err(iolab_spec::SpecError::field(
                        &job.name,
                        "bs",
                        format!(
                            "{} is validated by another job of the phase with key blocks of {} bytes, not {key_block}",
                            t.path.display(),
                            have.key_block
                        ),
                    )
                    .into());
                }
                continue;
            }
            let opts = iolab_verify::Options {
                journal: v.journal.clone(),
                sync: v.journal_sync == iolab_spec::JournalSync::Sync,
                max_errors: v.max_errors,
                node: node.clone(),
                id_root: v.id_root.clone(),
                peer: v.peer.clone(),
            };
            let carry = carried.get(&t.path).map(|c| &**c);
            let tr = iolab_verify::Tracked::open(&t.path, t.size, key_block, &opts, created.contains(&t.path), carry)?;
            // Read back and flushed through the target as the run opened it, not by its name.
            let held =
                t.at.open(iolab_engine::OpenOptions { read: true, ..Default::default() })
                    .map_err(|e| iolab_verify::VerifyError::io(&t.path, e))?;
            let tr = tr.hold(held);
            match handed.iter().find(|h| h.file_id == tr.file_id) {
                Some(h) => tr.take_keys(h)?,
                None if v.peer.is_some() => {
                    return Err(iolab_verify::VerifyError::Refused(format!(
                        "job `{}` reads {} as node {} wrote it, but no key map of it was handed over (file id {:#018x}); the file ids differ when the nodes' dir= do not name the same directory of the share",
                        job.name,
                        tr.display,
                        v.peer.as_deref().unwrap_or_default(),
                        tr.file_id
                    ))
                    .into())
                }
                None => {}
            }
            out.insert(t.path.clone(), Arc::new(tr));
        }
    }
    Ok(out)
}

/// The key maps to hand on after the phase (`--verify-on other`): of each file a job with it
/// wrote (not those read from another node), for the coordinator to hand to the reader.
pub fn handed_out(phase: &Phase, validated: &Validated) -> Vec<iolab_verify::HandedMap> {
    if !phase.jobs.iter().any(|j| j.verify.as_ref().is_some_and(|v| v.on_other && v.peer.is_none())) {
        return Vec::new();
    }
    let mut paths: Vec<_> = validated.keys().collect();
    paths.sort();
    paths.into_iter().map(|p| &validated[p]).filter(|t| t.peer.is_none()).map(|t| t.handed()).collect()
}

/// After the phase: `--verify-after`'s pass, the maps saved with their journals, and what
/// validation found in `phases[].verify`. A failure to finish is the job's error.
pub fn finish(phase: &Phase, validated: &Validated, pr: &mut PhaseResult) {
    if validated.is_empty() {
        return;
    }
    let mut total = VerifyResult::default();
    let mut paths: Vec<_> = validated.keys().collect();
    paths.sort();
    for path in paths {
        let t = &validated[path];
        let job = phase.jobs.iter().position(|j| {
            j.verify.is_some()
                && crate::layout::job_paths(j)
                    .iter()
                    .any(|p| p == path || p.canonicalize().ok().as_ref() == Some(&t.path))
        });
        let after = job.and_then(|j| phase.jobs[j].verify.as_ref()).is_some_and(|v| v.after);
        let keep = job.and_then(|j| phase.jobs[j].verify.as_ref()).map_or(50, |v| {
            if v.max_errors == 0 {
                1000
            } else {
                v.max_errors as usize
            }
        });
        let mut fail = None;
        if after && !t.stopped() {
            fail = t.verify_after().err();
        }
        if let Err(e) = t.finish() {
            fail.get_or_insert(e);
        }
        if let Some(e) = fail {
            let j = job.unwrap_or(0);
            if let Some(jr) = pr.jobs.get_mut(j) {
                jr.error.get_or_insert(format!("validation: {e}"));
            }
        }
        total.merge(&t.result(), keep);
    }
    pr.verify = Some(total);
}

/// The file sets of the phase's jobs that validate an application workload or a replay
/// (`--verify` on a workload other than block), by job; `None` for the others.
pub fn file_sets(
    phase: &Phase,
    node: Option<&str>,
    dirs: &[Option<Arc<iolab_engine::beneath::Beneath>>],
) -> Vec<Option<Arc<FileSet>>> {
    let node = node.map_or_else(iolab_sysstat::hostname, str::to_string);
    phase
        .jobs
        .iter()
        .enumerate()
        .map(|(i, j)| match (&j.verify, j.workload.block()) {
            (Some(v), None) => {
                let dir = dirs.get(i).cloned().flatten();
                Some(Arc::new(FileSet::new(&node, v.max_errors, v.after).within(dir)))
            }
            _ => None,
        })
        .collect()
}

/// After the phase: `--verify-after`'s pass over the files the jobs left, and what their
/// validation found, added to `phases[].verify`.
pub fn finish_files(phase: &Phase, sets: &[Option<Arc<FileSet>>], pr: &mut PhaseResult) {
    for (job, set) in phase.jobs.iter().zip(sets) {
        let (Some(set), Some(v)) = (set, &job.verify) else { continue };
        set.verify_after();
        let keep = if v.max_errors == 0 { 1000 } else { v.max_errors as usize };
        pr.verify.get_or_insert_with(VerifyResult::default).merge(&set.tally.result(), keep);
    }
}

#[cfg(test)]
mod tests {
    use crate::{run_plan, Control, Sink};
    use iolab_spec::{Bytes, JobPatch, Phase, Plan, Rw, VerifyOn};
    use iolab_verify::HandedMap;

    /// Keeps the key maps a run hands out.
    #[derive(Default)]
    struct Maps(Vec<HandedMap>);
    impl Sink for Maps {
        fn event(&mut self, _node: Option<&str>, event: iolab_model::Event<'_>) {
            if let iolab_model::Event::KeyMaps { maps, .. } = event {
                self.0.extend_from_slice(maps);
            }
        }
    }

    fn plan(f: impl FnOnce(&mut JobPatch)) -> Plan {
        let mut p = JobPatch { size: Some(Bytes::kib(64)), verify_on: Some(VerifyOn::Other), ..Default::default() };
        f(&mut p);
        Plan { phases: vec![Phase { name: "p".into(), jobs: vec![p.resolve("j").unwrap()] }] }
    }

    #[test]
    fn a_reader_of_another_nodes_file_checks_the_keys_handed_over_and_only_those() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("f.b");
        // Node b writes its file: its map is handed out, 16 blocks of key 1.
        let write = plan(|p| {
            p.target = Some(f.clone());
            p.rw = Some(Rw::Write);
        });
        let mut maps = Maps::default();
        let ctl = Control { node: Some("b".into()), ..Default::default() };
        let r = run_plan(&write, &ctl, &mut maps).unwrap();
        assert_eq!(r.phases[0].verify.as_ref().unwrap().blocks_written, 16);
        assert_eq!(maps.0.len(), 1);
        assert_eq!((maps.0[0].writer.as_str(), maps.0[0].keys.clone()), ("b", vec![1u8; 16]));

        // Node a reads it: without the map it is refused, with it every block checks out.
        let mut read = plan(|p| {
            p.target = Some(f.clone());
            p.rw = Some(Rw::Read);
        });
        read.phases[0].jobs[0].verify.as_mut().unwrap().peer = Some("b".into());
        let a = |handed: Vec<HandedMap>| Control { node: Some("a".into()), handed, ..Default::default() };
        let err = run_plan(&read, &a(Vec::new()), &mut Maps::default()).unwrap_err().to_string();
        assert!(err.contains("no key map") && err.contains("node b"), "{err}");
        let mut got = Maps::default();
        let r = run_plan(&read, &a(maps.0.clone()), &mut got).unwrap();
        let v = r.phases[0].verify.clone().unwrap();
        assert_eq!((v.checked_during, v.errors.total()), (16, 0));
        assert!(got.0.is_empty(), "a reader hands out no map");

        // Had b written key 2 to blocks 4 and 5 (a later round) that a still reads as key 1:
        // two stale reads, where they are, written by b.
        let mut later = maps.0[0].clone();
        later.keys[4] = 2;
        later.keys[5] = 2;
        let r = run_plan(&read, &a(vec![later]), &mut Maps::default()).unwrap();
        let v = r.phases[0].verify.clone().unwrap();
        assert_eq!((v.errors.stale_read, v.errors.total()), (2, 2));
        assert_eq!(v.first_errors.iter().map(|e| e.offset).collect::<Vec<_>>(), [4 * 4096, 5 * 4096]);
        assert_eq!(v.first_errors[0].writer.as_deref(), Some("b/0"));
        // A map of another size is refused, not half applied.
        let mut short = maps.0[0].clone();
        short.keys.pop();
        assert!(run_plan(&read, &a(vec![short]), &mut Maps::default()).is_err());
    }
}
