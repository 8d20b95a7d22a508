//! The report's JSON, exactly as `report --json` prints it for one file.

use super::{Exporter, Loaded, Options};
use anyhow::Result;
use std::io::Write;

pub struct Json;

impl Exporter for Json {
    fn name(&self) -> &'static str {
        "json"
    }

    fn write(&self, p: &Loaded, _opts: &Options, out: &mut dyn Write) -> Result<()> {
        let value = p.report_value();
        writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
        Ok(())
    }
}
