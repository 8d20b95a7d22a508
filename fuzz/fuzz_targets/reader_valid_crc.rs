//! The reader on arbitrary bytes whose checksums are made valid first, so that mutations reach
//! the checks of every record's fields and of the file as a whole (a random mutation almost
//! never keeps a CRC-32 right).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut bytes = data.to_vec();
    stallscope::profile::fix_checksums(&mut bytes);
    let _ = stallscope::profile::parse(&bytes);
});
