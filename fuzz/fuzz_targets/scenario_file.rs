//! Fuzz the scenario-file parser and its expansion: any input gives a scenario or an error,
//! never a panic, and whatever expands holds only valid jobs on the nodes given.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(file) = iolab_spec::parse_scenario_file(text, "fuzz") else { return };
    let nodes: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
    if let Ok(s) = file.expand(&nodes, &iolab_spec::JobPatch::default()) {
        for step in &s.steps {
            for part in &step.parts {
                assert!(nodes.contains(&part.node), "a part on a node not given");
                for job in &part.jobs {
                    job.validate().expect("an expanded job is valid");
                }
            }
        }
    }
});
