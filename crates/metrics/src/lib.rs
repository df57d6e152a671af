//! iolab-metrics: a run's live figures for Prometheus. A [`Feed`] is one more sink of the event
//! stream (`iolab_model::events`): it folds what the stream already hands the coordinating
//! thread (each second's counts, the phase so far with its HDR histograms, system samples) onto
//! a [`Board`]; an [`Endpoint`] serves the board read-only at `/metrics` ([`serve`]) in
//! Prometheus's text formats ([`encode`]), the latency histograms in one fixed set of buckets
//! ([`buckets`]), a run's labels made valid and free of secrets ([`labels`]). The workers never
//! see any of it. docs/metrics.md lists the series.

#![forbid(unsafe_code)]

pub mod board;
pub mod buckets;
pub mod encode;
pub mod feed;
pub mod labels;
pub mod serve;

pub use board::Board;
pub use feed::{Feed, RunStart};
pub use serve::{Endpoint, ServeError};
