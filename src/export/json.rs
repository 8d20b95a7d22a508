//! The report's JSON, exactly as `report --json` prints it for one file.

use super::{Exporter, Options};
use crate::model::Model;
use anyhow::Result;
use std::io::Write;

pub struct Json;

impl Exporter for Json {
    fn name(&self) -> &'static str {
        "json"
    }

    fn write(&self, a: &Model, _opts: &Options, out: &mut dyn Write) -> Result<()> {
        writeln!(
            out,
            "{}",
            crate::model::json::to_string(std::slice::from_ref(a))?
        )?;
        Ok(())
    }
}
