//! Folded stacks (`export -f collapsed`): one line per distinct stack, `root;...;leaf value`,
//! sorted; the stacks and their weights are the model's ([`crate::analysis::collapsed`]).

use super::{Exporter, Options};
use crate::analysis::collapsed::stacks;
use crate::model::Model;
use anyhow::Result;
use std::io::Write;

pub struct Collapsed;

impl Exporter for Collapsed {
    fn name(&self) -> &'static str {
        "collapsed"
    }

    fn write(&self, a: &Model, opts: &Options, out: &mut dyn Write) -> Result<()> {
        for (line, value) in stacks(a, opts.weight) {
            writeln!(out, "{line} {value}")?;
        }
        Ok(())
    }
}
