//! Flow between jobs (`--flow`, fio's `flow`, `flow_id`, `flow_sleep`): jobs sharing a flow id
//! keep their I/O counts in proportion to their weights (3:2:1 for weights 3, 2 and 1), each
//! thread stalling while its share of the flow's I/Os is above its share of the weights.

use crate::patch::JobPatch;
use crate::units::duration_serde;
use crate::SpecError;
use serde::{Deserialize, Serialize};
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Flow {
    /// Each thread's weight in its flow (fio's `flow`; every clone of a job has it).
    pub weight: u32,
    /// The flow the job belongs to (fio's `flow_id`, default 0: one flow for every job).
    #[serde(default)]
    pub id: u32,
    /// How long a thread ahead of its share sleeps, what it has in flight completed first,
    /// before it looks again (fio's `flow_sleep`; 0: it looks again at once).
    #[serde(default, with = "duration_serde", skip_serializing_if = "Duration::is_zero")]
    pub sleep: Duration,
}

/// The flow a patch asks for (`flow_id` and `flow_sleep` alone are mistakes, named).
pub(crate) fn of(p: &JobPatch, name: &str) -> Result<Option<Flow>, SpecError> {
    let Some(weight) = p.flow.filter(|w| *w > 0) else {
        if let Some(k) = [("flow_id", p.flow_id.is_some()), ("flow_sleep", p.flow_sleep.is_some())].iter().find(|k| k.1)
        {
            return Err(SpecError::field(
                name,
                k.0,
                format!("--{} belongs to a flow; give --flow WEIGHT too", k.0.replace('_', "-")),
            ));
        }
        return Ok(None);
    };
    Ok(Some(Flow { weight, id: p.flow_id.unwrap_or(0), sleep: p.flow_sleep.unwrap_or_default() }))
}
