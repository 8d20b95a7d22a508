//! Frames as the report's JSON writes them: `{function, file, line, module, offset, inlined}`.

use super::*;

/// A frame list: each frame `{function, file, line, module, offset ("0x..."), inlined}`.
pub(super) struct Frames<'a>(pub(super) &'a [Frame]);

impl Serialize for Frames<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(FrameJson::of))
    }
}

#[derive(Serialize)]
pub(super) struct FrameJson<'a> {
    pub(super) function: &'a Option<String>,
    pub(super) file: &'a Option<String>,
    pub(super) line: Option<u32>,
    pub(super) module: &'a str,
    pub(super) offset: String,
    pub(super) inlined: bool,
}

impl<'a> FrameJson<'a> {
    pub(super) fn of(f: &'a Frame) -> FrameJson<'a> {
        FrameJson {
            function: &f.function,
            file: &f.file,
            line: f.line,
            module: &f.module,
            offset: format!("{:#x}", f.offset),
            inlined: f.inlined,
        }
    }
}
