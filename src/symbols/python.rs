//! Python frames in resolved stacks: a stack's Python frames (profile::python) put in place of
//! the CPython evaluation loops that ran them, as py-spy's `--native` does. The frames one run of
//! the loop (`_PyEval_EvalFrameDefault`) executes end at the frame marked `entry`: one per
//! Python call in 3.8 to 3.10, a run of Python-to-Python calls from 3.11. The interpreter's own
//! frames between two runs (the calls' machinery) are left out; those inside the innermost run
//! (a builtin, the GIL's wait) and outside the outermost stay.

use super::Frame;
use crate::profile::python::{PyFrame, Python};

/// The module of a Python frame: its file is the Python source.
pub const PYTHON_MODULE: &str = "[python]";

/// CPython's evaluation loop (`_PyEval_EvalFrameDefault`, its `.cold` part, or 3.8's
/// `PyEval_EvalFrameEx`), where the Python frames it runs go.
fn is_eval_loop(f: &Frame) -> bool {
    f.function.as_deref().is_some_and(|n| {
        let n = n.strip_prefix('_').unwrap_or(n);
        n.starts_with("PyEval_EvalFrameDefault") || n.starts_with("PyEval_EvalFrameEx")
    })
}

/// A Python frame as every view shows it: the function (qualified where the version has it),
/// the file and the line.
fn frame_of(f: &PyFrame, py: &Python) -> Frame {
    let code = f.code.and_then(|id| py.codes.get(&id));
    Frame {
        function: Some(code.map_or_else(
            || "(unknown Python code)".to_string(),
            |c| c.display_name().to_string(),
        )),
        file: code.map(|c| c.file.clone()).filter(|f| !f.is_empty()),
        line: f.code.and_then(|id| py.line(id, f.offset)),
        module: PYTHON_MODULE.into(),
        offset: u64::try_from(f.offset).unwrap_or(0),
        inlined: false,
    }
}

/// `native` (innermost first) with the Python frames of `python` in place of the evaluation
/// loops: the innermost loop runs the innermost run of frames, and so on out; runs left over
/// (a native stack cut short) go outermost.
pub fn splice(native: Vec<Frame>, python: &[PyFrame], py: &Python) -> Vec<Frame> {
    let mut runs: Vec<Vec<Frame>> = Vec::new();
    let mut run = Vec::new();
    for f in python {
        run.push(frame_of(f, py));
        if f.entry {
            runs.push(std::mem::take(&mut run));
        }
    }
    if !run.is_empty() {
        runs.push(run);
    }
    let mut runs = runs.into_iter();
    let mut out: Vec<Frame> = Vec::with_capacity(native.len() + python.len());
    let mut interpreter: Option<String> = None;
    // Where the frames after the last run spliced begin (the interpreter's frames from there to
    // the next loop are its call machinery).
    let mut after_run: Option<usize> = None;
    for f in native {
        if f.inlined || !is_eval_loop(&f) {
            out.push(f);
            continue;
        }
        let Some(run) = runs.next() else {
            out.push(f);
            continue;
        };
        // Functions inlined into the loop at this address are the loop's.
        while out
            .last()
            .is_some_and(|l| l.inlined && l.module == f.module)
        {
            out.pop();
        }
        if let Some(from) = after_run {
            let module = interpreter.as_deref().unwrap_or(&f.module);
            let mut kept = out.split_off(from.min(out.len()));
            kept.retain(|g| g.module != module);
            out.extend(kept);
        }
        interpreter.get_or_insert(f.module);
        out.extend(run);
        after_run = Some(out.len());
    }
    for run in runs {
        out.extend(run);
    }
    out
}

/// A file of the interpreter's library or of an installed package (`/usr/lib/python3.11/`,
/// `lib/python3.12/site-packages/`, a frozen module's `<frozen ...>`): not the user's line.
fn is_library_file(f: &Frame) -> bool {
    f.file.as_deref().is_none_or(|file| {
        file.starts_with('<')
            || file.contains("/lib/python3")
            || file.contains("/site-packages/")
            || file.contains("/dist-packages/")
    })
}

/// In a stack with Python frames, the user's frame: the innermost Python frame of the user's own
/// files, else the innermost Python frame (None: no Python frames).
pub fn user_frame(frames: &[Frame]) -> Option<usize> {
    frames
        .iter()
        .position(|f| f.is_python() && !is_library_file(f))
        .or_else(|| frames.iter().position(Frame::is_python))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::python::PyCode;

    fn native(function: &str, module: &str, inlined: bool) -> Frame {
        Frame {
            function: Some(function.into()),
            module: module.into(),
            inlined,
            ..Frame::default()
        }
    }

    /// 3.11's shape: a builtin called from `work` (run with `main` by the inner loop), called
    /// through the interpreter's machinery from `<module>` (the outer loop), under `main`. The
    /// Python frames take the loops' places, the machinery between them goes, the rest stays.
    #[test]
    fn python_frames_take_the_places_of_the_loops_that_ran_them() {
        let lib = "/usr/lib/libpython3.11.so";
        let mut py = Python {
            version: 0x030b0000,
            flags: crate::profile::format::PYTHON_FRAMES,
            ..Python::default()
        };
        for (id, name) in [(0, "work"), (1, "main"), (2, "<module>")] {
            let code = PyCode {
                name: name.into(),
                qualname: name.into(),
                file: "/home/u/app.py".into(),
                first_line: 10 * (id + 1),
                table: Vec::new(),
            };
            py.codes.insert(id as u32, code);
        }
        let frame = |code, entry| PyFrame {
            code: Some(code),
            offset: -1,
            entry,
        };
        let python = [frame(0, false), frame(1, true), frame(2, true)];
        let stack = vec![
            native("math_sqrt", lib, false),
            native("_Py_INCREF", lib, true),
            native("_PyEval_EvalFrameDefault", lib, false),
            native("_PyFunction_Vectorcall", lib, false),
            native("ctypes_callproc", "/x/_ctypes.so", false),
            native("_PyEval_EvalFrameDefault", lib, false),
            native("Py_RunMain", lib, false),
            native("main", "/usr/bin/python3.11", false),
        ];
        let out = splice(stack, &python, &py);
        let names: Vec<_> = out.iter().map(|f| f.name()).collect();
        assert_eq!(
            names,
            [
                "math_sqrt",
                "work",
                "main",
                "ctypes_callproc",
                "<module>",
                "Py_RunMain",
                "main"
            ]
        );
        assert_eq!(out[1].line, Some(10));
        assert_eq!(out[1].display(), "work (u/app.py:10)");
        assert_eq!(user_frame(&out), Some(1));
    }
}
