//! A replay's fidelity as data (`phases[].jobs[].replay`): what the trace recorded on the files
//! the replay covers against what the replay did, class by class; the calls whose result
//! differed (a short read, another position); the elapsed time against the recorded span; and
//! what the trace held that was left out, and why. The executor fills it at the end of a replay
//! job, so it is stored, printed and sent back by an agent with the job it belongs to.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One class: recorded against replayed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClassFidelity {
    pub class: String,
    /// Calls of this class the trace recorded, on files the replay covers, that succeeded.
    pub recorded_ops: u64,
    pub replayed_ops: u64,
    /// Bytes the recorded calls moved (their return values).
    pub recorded_bytes: u64,
    pub replayed_bytes: u64,
    /// Replayed calls that moved fewer bytes than recorded (reads and writes).
    pub short: u64,
    /// Replayed calls that returned more than recorded (a longer read, another lseek position).
    pub long: u64,
    /// The recorded calls' mean duration (strace's `-T`, which includes its own stops), ms.
    pub recorded_mean_ms: f64,
    pub replayed_mean_ms: f64,
    pub replayed_p99_ms: f64,
}

/// A replayed call whose result was not the recorded one.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Mismatch {
    /// The traced thread.
    pub tid: u32,
    /// The call's place among the thread's replayed calls (1 is its first).
    pub call: u64,
    /// The traced call's name (`read`, `lseek`, ...).
    pub name: String,
    /// The file, under the target.
    pub path: String,
    pub recorded: i64,
    pub replayed: i64,
}

/// The fidelity of one replay job.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReplayFidelity {
    /// Every class's replayed count equals its recorded count.
    pub counts_equal: bool,
    /// Every replayed read, write and lseek returned what the traced one did.
    pub results_equal: bool,
    pub classes: Vec<ClassFidelity>,
    /// Calls whose result differed, all counted here, the first 20 in `mismatches`.
    pub mismatched: u64,
    pub mismatches: Vec<Mismatch>,
    /// Traced threads replayed (one replay thread each).
    pub threads: u32,
    /// The program's recorded time, seconds: the trace's first call to its last (the time think
    /// timing replays), `lead_s` + the replayed calls' span + `tail_s`.
    pub recorded_s: f64,
    /// The recorded time before the first replayed call (the program's start-up: its loader,
    /// its calls on other files), seconds; think, scaled and recorded timing wait it first.
    #[serde(default)]
    pub lead_s: f64,
    /// The recorded time after the last replayed call's end (its wind-up), seconds; waited after
    /// the last call by the same timings.
    #[serde(default)]
    pub tail_s: f64,
    /// The thread with the most replayed calls: its time inside them (strace's `-T`, which
    /// counts strace's own stops), seconds.
    pub recorded_calls_s: f64,
    /// Its time between them: the program's think time and strace's stops, seconds.
    pub recorded_gaps_s: f64,
    /// Its smallest gap between two calls, ms: the least strace costs there, which think timing
    /// takes off every gap.
    pub tracer_gap_ms: f64,
    /// The replay's elapsed time, seconds.
    pub replayed_s: f64,
    /// `replayed_s / recorded_s - 1`, percent.
    pub elapsed_error_pct: f64,
    /// Recorded calls not replayed: why (`other calls`, `outside the target`, `not storage`,
    /// `failed when traced`, `never returned`) → call name → count.
    pub left_out: BTreeMap<String, BTreeMap<String, u64>>,
    /// Calls replayed other than recorded, and how (a call asking for more than `--max-buffer`
    /// asks for the buffer's size) → count.
    pub adjusted: BTreeMap<String, u64>,
}
