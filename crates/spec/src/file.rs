//! TOML job files: `[defaults]` plus `[[phase]]` tables each holding `[[phase.job]]`s.
//! Parsing reports the line and the field; nothing runs until the whole file is valid.

use crate::job::{Phase, Plan};
use crate::patch::JobPatch;
use crate::SpecError;
use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileModel {
    #[serde(default)]
    defaults: JobPatch,
    #[serde(default)]
    phase: Vec<PhaseModel>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PhaseModel {
    name: Option<String>,
    #[serde(default)]
    job: Vec<JobPatch>,
}

/// Parse a job file's text. `overrides` (from command-line flags) win over the file.
pub fn parse_job_file(text: &str, overrides: &JobPatch) -> Result<Plan, SpecError> {
    let model: FileModel = toml::from_str(text).map_err(|e| SpecError::Toml(e.to_string()))?;
    let mut phases = Vec::new();
    for (i, p) in model.phase.iter().enumerate() {
        let name = p.name.clone().unwrap_or_else(|| format!("phase{}", i + 1));
        let mut jobs = Vec::new();
        for (k, j) in p.job.iter().enumerate() {
            // The defaults give a job the options its workload takes; the job's own table and
            // the flags must all apply to it.
            let kind = model.defaults.layered(j).layered(overrides).kind();
            let patch = model.defaults.for_workload(kind).layered(j).layered(overrides);
            jobs.push(patch.resolve(&format!("job{}", k + 1))?);
        }
        phases.push(Phase { name, jobs });
    }
    let plan = Plan { phases };
    plan.validate()?;
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::{Rw, SyncMode};
    use crate::units::Bytes;

    const REDO: &str = r#"
# Seed 002: MySQL Cluster's redo-log initialisation, 4 files at once.
[defaults]
target = "/tmp/redo"
size = "256M"
direct = true

[[phase]]
name = "init"
[[phase.job]]
name = "redo"
rw = "write"
bs = "32k"
stride = "1M"
sync = "fsync"
threads = 4
"#;

    #[test]
    fn redo_log_file() {
        let plan = parse_job_file(REDO, &JobPatch::default()).unwrap();
        let j = &plan.phases[0].jobs[0];
        let b = j.workload.block().expect("a block job");
        assert_eq!(plan.phases[0].name, "init");
        assert_eq!(b.rw, Rw::Write);
        assert_eq!(b.stride, Some(Bytes::mib(1)));
        assert_eq!(j.size, Some(Bytes::mib(256)));
        assert_eq!(b.sync, SyncMode::Fsync);
        assert_eq!(b.fsync_every, 1);
        assert_eq!(j.threads, 4);
        assert!(j.direct);
    }

    #[test]
    fn flags_override_the_file() {
        let over = JobPatch { threads: Some(2), ..Default::default() };
        let plan = parse_job_file(REDO, &over).unwrap();
        assert_eq!(plan.phases[0].jobs[0].threads, 2);
    }

    #[test]
    fn typo_names_the_field() {
        let e = parse_job_file("[[phase]]\n[[phase.job]]\ntarget='/x'\nblocksize='4k'\n", &JobPatch::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("blocksize"), "{e}");
        assert!(e.contains("line 4"), "{e}");
    }

    #[test]
    fn bad_value_lists_accepted_ones() {
        let e = parse_job_file("[[phase]]\n[[phase.job]]\ntarget='/x'\nrw='sideways'\n", &JobPatch::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("sideways") && e.contains("randrw"), "{e}");
    }

    #[test]
    fn rule_errors_name_job_and_field() {
        let e = parse_job_file(
            "[[phase]]\n[[phase.job]]\nname='a'\ntarget='/x'\nrw='randread'\nstride='1M'\n",
            &JobPatch::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("job `a`") && e.contains("stride"), "{e}");
    }

    /// What a flag's parser refuses, a job file's value is refused for too, naming the field.
    #[test]
    fn a_job_files_values_keep_the_flags_ranges() {
        let bad = |lines: &str| {
            parse_job_file(
                &format!("[[phase]]\n[[phase.job]]\ntarget='/x'\nsize='1M'\n{lines}\n"),
                &JobPatch::default(),
            )
            .unwrap_err()
            .to_string()
        };
        for (lines, field) in [
            ("rw='randrw'\nmix=101", "mix"),
            ("rw='write'\ncompressibility=101", "compressibility"),
            ("rw='write'\nverify_on='other'\nverify_rounds=0", "verify_rounds"),
            ("rw='write'\nverify_on='other'\nverify_rounds=1001", "verify_rounds"),
            ("io_size=0", "io_size"),
            ("iodepth=0", "iodepth"),
            ("threads=0", "threads"),
            ("runtime='0s'", "runtime"),
            ("rate_iops=0", "rate"),
            ("bs='0'", "bs"),
            ("dist='zipf:0'", "zipf"),
        ] {
            let e = bad(lines);
            assert!(e.contains(field), "{lines}: {e}");
        }
    }

    #[test]
    fn empty_file_is_refused() {
        assert!(parse_job_file("", &JobPatch::default()).unwrap_err().to_string().contains("no phase"));
    }

    proptest::proptest! {
        /// Arbitrary text, and job files with one line mangled, parse or fail without panic.
        #[test]
        fn any_text_is_a_plan_or_an_error(s in "\\PC{0,200}", line in 0usize..14, junk in "\\PC{0,20}") {
            let _ = parse_job_file(&s, &JobPatch::default());
            let mut lines: Vec<String> = REDO.lines().map(String::from).collect();
            let i = line % lines.len();
            lines[i] = junk;
            let _ = parse_job_file(&lines.join("\n"), &JobPatch::default());
        }
    }

    #[test]
    fn a_job_is_one_flat_table_with_its_workload_named_and_old_plans_read_back() {
        let plan = parse_job_file(REDO, &JobPatch::default()).unwrap();
        let v = serde_json::to_value(&plan).unwrap();
        let j = &v["phases"][0]["jobs"][0];
        assert_eq!(j["workload"], "block");
        assert_eq!(j["rw"], "write");
        assert_eq!(j["threads"], 4);
        // The plan's job table is a job file's job table.
        let table: JobPatch = serde_json::from_value(j.clone()).unwrap();
        assert_eq!(table.resolve("x").unwrap(), plan.phases[0].jobs[0]);
        // A plan stored before jobs named their workload is a block job.
        let mut old = v.clone();
        old["phases"][0]["jobs"][0].as_object_mut().unwrap().remove("workload");
        let back: Plan = serde_json::from_value(old).unwrap();
        assert_eq!(back, plan);
        let mut other = v;
        other["phases"][0]["jobs"][0]["workload"] = "teleport".into();
        let e = serde_json::from_value::<Plan>(other).unwrap_err().to_string();
        assert!(e.contains("unknown workload `teleport`"), "{e}");
    }

    #[test]
    fn plan_round_trips_through_json() {
        let plan = parse_job_file(REDO, &JobPatch::default()).unwrap();
        let text = serde_json::to_string(&plan).unwrap();
        let back: Plan = serde_json::from_str(&text).unwrap();
        assert_eq!(plan, back);
    }
}
