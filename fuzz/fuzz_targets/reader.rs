//! The reader on arbitrary bytes: every input is a profile or an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = stallscope::profile::parse(data);
});
