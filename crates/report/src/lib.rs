//! iolab-report: what people read about stored runs. Comparisons with verdicts ([`compare`]),
//! CSV for spreadsheets ([`csv`]) and the self-contained HTML report with charts ([`html`]).
//! Everything here reads `StoredRun`s; nothing reaches back into the engine.

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
