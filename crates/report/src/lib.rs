//! iolab-report: what people read about runs. Every output format, named once ([`format`]),
//! each written by an exporter ([`export`]): the terminal summary, the JSON, CSV for
//! spreadsheets ([`csv`]), fio's JSON ([`fio_json`]), bonnie++'s CSV ([`bonnie_csv`]); a
//! survey's profile ([`survey`]); comparisons with verdicts ([`compare`]) and the
//! self-contained HTML report with charts ([`html`]); and the scenarios of several nodes as
//! plug-ins ([`scenario`]: their steps, their verdicts, their charts), here because their
//! verdicts and charts read results and draw as the report does. Everything here reads results
//! (fresh or `StoredRun`s); nothing reaches back into the engine.

#![forbid(unsafe_code)]

pub mod bonnie_csv;
mod charts;
pub mod compare;
pub mod csv;
pub mod export;
pub mod fio_json;
pub mod fio_log;
pub mod fio_text;
pub mod fmt;
pub mod format;
pub mod html;
mod html_nodes;
mod markup;
pub mod nodes;
mod profile_chart;
pub mod scenario;
pub mod summary;
pub mod survey;
pub mod system;
pub mod text;
pub mod threads;
pub mod verdict;
pub mod verify;
