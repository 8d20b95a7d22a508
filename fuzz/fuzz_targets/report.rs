//! The `report --json` path and every other view on each profile the reader accepts (checksums
//! made valid first): the model (analysis and findings), the JSON and text reports, the exports, the html page and a
//! diff (`testing::render_every_view`). Modules' files are never opened (the input names
//! arbitrary paths): frames stay `module+offset`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stallscope::analysis::Options;
use stallscope::model::Model;

fuzz_target!(|data: &[u8]| {
    let mut bytes = data.to_vec();
    stallscope::profile::fix_checksums(&mut bytes);
    let Ok(profile) = stallscope::profile::parse(&bytes) else {
        return;
    };
    let a = Model::of(
        profile,
        "fuzz.prof".into(),
        Options {
            read_modules: false,
        },
    );
    stallscope::testing::render_every_view(&a);
});
