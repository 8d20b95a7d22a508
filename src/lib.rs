//! stallscope: why doesn't my multithreaded native program scale?
//!
//! The pipeline (docs/ARCHITECTURE.md): the interposer (`preload/`) writes a profile; [`profile`]
//! reads and validates it; [`analysis`] builds the one typed model of it (summaries, symbolized
//! sites, phases, thread states, findings); the views ([`report`], [`html`], [`export`], [`diff`],
//! [`demo`], [`bench`]) read that model. `main` only parses the command line ([`cli`]).

pub mod analysis;
pub mod attach;
pub mod bench;
pub mod cli;
pub mod demo;
pub mod diff;
pub mod export;
pub mod findings;
pub mod help;
pub mod html;
pub mod model;
pub mod options;
pub mod preload;
pub mod profile;
pub mod report;
pub mod run;
pub mod scale;
pub mod symbols;
#[cfg(any(test, fuzzing))]
pub mod testing;
pub mod util;
