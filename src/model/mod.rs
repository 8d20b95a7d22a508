//! The one model of a run that every view reads: a profile's figures ([`Analysis`]) and what
//! they mean ([`Finding`]s), worked out as the last stage on the finished figures; and, for a run
//! of several processes, the typed model of the run. Its JSON serialization is [`json`].
//!
//! The layers (docs/ARCHITECTURE.md, enforced by tests/layers.rs): `util`, `profile`, `symbols`,
//! `analysis`, `findings` and this module are the model; the views (`report`, `html`, `export`,
//! `diff`) read it and never one another; the commands sit on top.

pub mod blame_json;
pub mod invariants;
pub mod json;
pub mod run;
mod run_cpus;
pub mod waitfor_json;

use crate::analysis::{Analysis, Options};
use crate::findings::{self, Finding};
use crate::profile::Profile;
use anyhow::Result;
use std::path::Path;

/// A profile analysed, and its findings: what every view of one profile shows.
#[derive(Debug, Clone, Default)]
pub struct Model {
    pub analysis: Analysis,
    /// Most severe first.
    pub findings: Vec<Finding>,
}

impl Model {
    /// Reads, validates and analyses a profile file, then works out its findings.
    pub fn read(path: &Path) -> Result<Model> {
        Model::read_with(path, Options::default())
    }

    pub fn read_with(path: &Path, options: Options) -> Result<Model> {
        Ok(Model::from(Analysis::read_with(path, options)?))
    }

    /// The model of a profile already read.
    pub fn of(profile: Profile, path: String, options: Options) -> Model {
        Model::from(Analysis::of(profile, path, options))
    }
}

impl From<Analysis> for Model {
    /// The findings, the last stage, on the finished figures.
    fn from(analysis: Analysis) -> Model {
        let findings = findings::evaluate(&analysis);
        Model { analysis, findings }
    }
}

impl std::ops::Deref for Model {
    type Target = Analysis;

    fn deref(&self) -> &Analysis {
        &self.analysis
    }
}
