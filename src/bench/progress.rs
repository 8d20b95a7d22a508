//! Progress bar on stderr, drawn only when stderr is a terminal so that logs and
//! pipes never see it.

use std::io::{IsTerminal, Write};

pub trait Progress {
    fn update(&mut self, done: usize, total: usize, label: &str);
    fn finish(&mut self);
}

/// Draws nothing.
pub struct Silent;

impl Progress for Silent {
    fn update(&mut self, _done: usize, _total: usize, _label: &str) {}
    fn finish(&mut self) {}
}

pub struct TerminalBar {
    drawn: bool,
}

const WIDTH: usize = 30;

impl Progress for TerminalBar {
    fn update(&mut self, done: usize, total: usize, label: &str) {
        let filled = (done * WIDTH).checked_div(total).unwrap_or(WIDTH);
        let label: String = label.chars().take(40).collect();
        let mut stderr = std::io::stderr().lock();
        // \r and "erase line" redraw in place.
        let _ = write!(
            stderr,
            "\r\x1b[2K[{}{}] {done}/{total} {label}",
            "#".repeat(filled),
            " ".repeat(WIDTH - filled)
        );
        let _ = stderr.flush();
        self.drawn = true;
    }

    fn finish(&mut self) {
        if self.drawn {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
            self.drawn = false;
        }
    }
}

/// A bar when stderr is a terminal and it is not disabled, otherwise nothing.
pub fn for_stderr(disabled: bool) -> Box<dyn Progress> {
    if !disabled && std::io::stderr().is_terminal() {
        Box::new(TerminalBar { drawn: false })
    } else {
        Box::new(Silent)
    }
}
