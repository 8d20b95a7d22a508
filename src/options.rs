//! The options of `stallscope run` that reach the interposer, from the one table both sides
//! read: preload/ss_options.def. The interposer takes its defaults and bounds from it in C
//! (base.c); build.rs turns the same lines into the constants below, which `run` uses for its
//! flags' defaults and bounds and for the environment variables it sets.

/// How the interposer reads an option's variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionKind {
    /// An unsigned number: unset or not a number gives `default`; outside `[min, max]`, the
    /// nearest bound.
    Num,
    /// "1" turns it on.
    Flag,
    /// A path or a word.
    Text,
}

/// One option: its environment variable and, for numbers, default and bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunOption {
    pub env: &'static str,
    pub kind: OptionKind,
    pub default: u64,
    pub min: u64,
    pub max: u64,
}

impl RunOption {
    /// The value the interposer uses for `value`: brought within the option's bounds.
    pub fn clamp(self, value: u64) -> u64 {
        value.clamp(self.min, self.max)
    }
}

include!(concat!(env!("OUT_DIR"), "/options_generated.rs"));

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    #[test]
    fn the_table_is_consistent() {
        let mut names: Vec<&str> = ALL.iter().map(|o| o.env).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ALL.len(), "an environment variable twice");
        for o in ALL {
            assert!(o.env.starts_with("STALLSCOPE_"), "{o:?}");
            if o.kind == OptionKind::Num {
                assert!(o.min <= o.default && o.default <= o.max, "{o:?}");
            }
        }
        assert_eq!(SAMPLE_HZ.clamp(20_000), 10_000);
        assert_eq!(TIMING_PERIOD.clamp(0), 1);
    }

    /// A program that allocates about 8 MiB in 64 KiB blocks (so that stacks are sampled by
    /// bytes) and computes a few milliseconds.
    const PROGRAM: &str = r#"
        #include <stdlib.h>
        int main(void) {
            volatile unsigned long sum = 0;
            for (int i = 0; i < 128; i++) { char *p = malloc(65536); p[0] = (char)i; sum += p[0]; free(p); }
            for (unsigned long i = 0; i < 20000000; i++) sum += i;
            return sum == 0;
        }
    "#;

    fn program(dir: &Path) -> PathBuf {
        let src = dir.join("options.c");
        std::fs::write(&src, PROGRAM).unwrap();
        let exe = dir.join("options");
        let status = Command::new("cc")
            .arg("-O1")
            .arg("-o")
            .arg(&exe)
            .arg(&src)
            .status()
            .expect("cc (Debian package gcc)");
        assert!(status.success());
        exe
    }

    /// Runs `exe` under the interposer the way `run` starts it, with `env` set, and reads its
    /// profile.
    fn profile_with(
        dir: &Path,
        exe: &Path,
        name: &str,
        env: &[(RunOption, &str)],
    ) -> profile::Profile {
        let out = dir.join(name);
        let mut cmd = Command::new(exe);
        for o in ALL {
            cmd.env_remove(o.env);
        }
        cmd.env("LD_PRELOAD", crate::preload::library_path().unwrap())
            .env(SUPERVISOR.env, std::process::id().to_string())
            .env(OUTPUT.env, &out);
        for (o, value) in env {
            cmd.env(o.env, value);
        }
        let status = cmd.status().unwrap();
        assert!(status.success(), "{cmd:?}");
        profile::read(&out).unwrap()
    }

    /// The figures of a profile that show the options the interposer used.
    fn seen(p: &profile::Profile) -> [u64; 5] {
        let sampling = p.sampling.clone().expect("a sampling record");
        let stacks = p.stack_sampling.expect("an allocation sites record");
        [
            u64::from(p.process.timing_period),
            u64::from(sampling.cpu_hz),
            u64::from(sampling.wall_hz),
            u64::from(stacks.count_period),
            stacks.mean_bytes,
        ]
    }

    #[test]
    fn the_interposer_applies_the_tables_defaults_and_bounds() {
        let dir = std::env::temp_dir().join(format!("stallscope-options-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let exe = program(&dir);
        let options = [TIMING_PERIOD, SAMPLE_HZ, WALL_HZ, STACK_PERIOD, STACK_BYTES];

        let defaults = profile_with(&dir, &exe, "defaults.prof", &[]);
        assert_eq!(
            seen(&defaults),
            options.map(|o| o.default),
            "unset: the defaults"
        );

        let garbage: Vec<(RunOption, &str)> = options.iter().map(|&o| (o, "12x")).collect();
        let p = profile_with(&dir, &exe, "garbage.prof", &garbage);
        assert_eq!(
            seen(&p),
            options.map(|o| o.default),
            "not a number: the defaults"
        );

        let p = profile_with(
            &dir,
            &exe,
            "beyond.prof",
            &[
                (TIMING_PERIOD, "0"),
                (SAMPLE_HZ, "99999"),
                (WALL_HZ, "5000"),
            ],
        );
        let [period, cpu_hz, wall_hz, ..] = seen(&p);
        assert_eq!(period, TIMING_PERIOD.min, "below the minimum: the minimum");
        assert_eq!(cpu_hz, SAMPLE_HZ.max, "above the maximum: the maximum");
        assert_eq!(wall_hz, WALL_HZ.max);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
