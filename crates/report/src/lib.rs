//! iolab-report: what people read about stored runs. Comparisons with verdicts ([`compare`]),
//! CSV for spreadsheets ([`csv`]) and the self-contained HTML report with charts ([`html`]);
//! and the scenarios of several nodes as plug-ins ([`scenario`]: their steps, their verdicts,
//! their charts), here because their verdicts and charts read results and draw as the report
//! does. Everything here reads results; nothing reaches back into the engine.

#![forbid(unsafe_code)]

mod charts;
pub mod compare;
pub mod csv;
pub mod export;
pub mod fio_json;
pub mod fio_log;
pub mod fmt;
pub mod html;
mod html_nodes;
pub mod nodes;
pub mod scenario;
pub mod summary;
pub mod survey;
pub mod system;
pub mod threads;
pub mod verdict;
pub mod verify;
