//! `--metrics-listen`: a command's runs served live for Prometheus (iolab-metrics). The
//! endpoint starts before the first run, each run gets a feed (one more sink beside the progress
//! line and the store's), and the endpoint stays up `--metrics-linger` after the result is
//! printed, so the last scrape sees the final counts. Off, it costs nothing: no thread, no feed.

use crate::args::MetricsArgs;
use anyhow::Result;
use iolab_metrics::{Board, Endpoint, Feed, RunStart};
use iolab_spec::Plan;
use iolab_workload::model::{now_unix_s, RunKind};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// The command's endpoint, or none.
pub struct Live {
    on: Option<(Arc<Board>, Endpoint)>,
    linger: Duration,
}

impl Live {
    /// Start the endpoint the flags ask for (none without `--metrics-listen`); say where
    /// unless `quiet`.
    pub fn start(args: &MetricsArgs, quiet: bool) -> Result<Live> {
        let Some(addr) = &args.metrics_listen else {
            return Ok(Live { on: None, linger: Duration::ZERO });
        };
        let board = Board::new();
        let endpoint = Endpoint::start(addr, board.clone())?;
        if !quiet {
            errln!("iolab: serving live metrics at http://{}/metrics", endpoint.addr());
        }
        Ok(Live { on: Some((board, endpoint)), linger: args.metrics_linger })
    }

    /// A run's feed (none when the endpoint is off). `stored`: the run's id in the results
    /// database, its `run_id` label; a run not stored is `unsaved-` and its start in Unix
    /// seconds.
    pub fn feed(&self, stored: Option<i64>, kind: RunKind, labels: &[(String, String)], plan: &Plan) -> Option<Feed> {
        let (board, _) = self.on.as_ref()?;
        let started = now_unix_s();
        let id = stored.map(|id| id.to_string()).unwrap_or_else(|| format!("unsaved-{}", started as u64));
        let node = iolab_sysstat::hostname();
        Some(board.begin(RunStart { id, kind: kind.as_str(), labels, plan, node, started_unix_s: started }))
    }

    /// Keep the endpoint up for the linger, then stop it; a Ctrl-C ends the wait.
    pub fn linger(self, stop: &AtomicBool, quiet: bool) {
        let Some((_, endpoint)) = self.on else { return };
        if !self.linger.is_zero() && !quiet {
            errln!(
                "iolab: live metrics stay up {} s for a last scrape (Ctrl-C ends them now)",
                self.linger.as_secs_f64()
            );
        }
        endpoint.linger(self.linger, stop);
    }
}
