//! What to run: the variants (command x allocator x thread count) and the balanced
//! order of their runs.

use super::allocators::{self, Allocator};
use super::executor::CommandSpec;
use anyhow::{Context, Result, bail};

/// Environment variable carrying the thread count of `--threads` to every run.
pub const THREADS_VARIABLE: &str = "STALLSCOPE_THREADS";
/// Placeholder in a command replaced by the thread count of `--threads`.
pub const THREADS_PLACEHOLDER: &str = "{threads}";

/// One thing to measure.
#[derive(Clone, Debug, PartialEq)]
pub struct Variant {
    pub name: String,
    pub command: CommandSpec,
    /// Index of the command-line command this variant comes from.
    pub source: usize,
    pub allocator: Option<String>,
    pub threads: Option<u32>,
}

impl Variant {
    /// The command with the environment it gets, e.g. `LD_PRELOAD=... prog arg`.
    pub fn display_command(&self) -> String {
        let mut words: Vec<String> = self
            .command
            .env
            .iter()
            .map(|(k, v)| format!("{k}={}", shell_words::quote(v)))
            .collect();
        words.push(self.command.display());
        words.join(" ")
    }
}

/// Splits a command like a POSIX shell would (quotes, backslashes), without running one.
pub fn split_command(text: &str) -> Result<Vec<String>> {
    let words =
        shell_words::split(text).with_context(|| format!("cannot split command `{text}`"))?;
    if words.is_empty() {
        bail!("empty command");
    }
    Ok(words)
}

/// Every combination of command, allocator and thread count, in that nesting order.
pub fn build_variants(
    commands: &[String],
    names: &[String],
    allocators: &[Allocator],
    threads: &[u32],
) -> Result<Vec<Variant>> {
    if !names.is_empty() && names.len() != commands.len() {
        bail!(
            "{} names given for {} commands; give one --name per command or none",
            names.len(),
            commands.len()
        );
    }
    if threads.contains(&0) {
        bail!("thread counts must be at least 1");
    }
    let allocator_choices: Vec<Option<&Allocator>> = if allocators.is_empty() {
        vec![None]
    } else {
        allocators.iter().map(Some).collect()
    };
    let thread_choices: Vec<Option<u32>> = if threads.is_empty() {
        vec![None]
    } else {
        threads.iter().copied().map(Some).collect()
    };
    let inherited_preload = std::env::var("LD_PRELOAD").ok();

    let mut variants = Vec::new();
    for (source, text) in commands.iter().enumerate() {
        let template = split_command(text)?;
        for allocator in &allocator_choices {
            for &thread_count in &thread_choices {
                let argv = match thread_count {
                    Some(n) => template
                        .iter()
                        .map(|w| w.replace(THREADS_PLACEHOLDER, &n.to_string()))
                        .collect(),
                    None => template.clone(),
                };
                let mut command = CommandSpec::new(argv);
                if let Some(library) = allocator.and_then(|a| a.preload.as_ref()) {
                    let value = allocators::preload_value(library, inherited_preload.as_deref());
                    command.env.push(("LD_PRELOAD".into(), value));
                }
                if let Some(n) = thread_count {
                    command.env.push((THREADS_VARIABLE.into(), n.to_string()));
                }

                let mut parts = Vec::new();
                if commands.len() > 1 || (allocators.is_empty() && threads.is_empty()) {
                    parts.push(names.get(source).cloned().unwrap_or_else(|| text.clone()));
                }
                if let Some(a) = allocator {
                    parts.push(a.name.clone());
                }
                if let Some(n) = thread_count {
                    parts.push(format!("{n} thread{}", if n == 1 { "" } else { "s" }));
                }
                let mut name = parts.join(" / ");
                // Comparing a command with itself is legitimate (an A/A test); keep
                // the names distinct so that tables and exports stay unambiguous.
                let same = variants
                    .iter()
                    .filter(|v: &&Variant| {
                        v.name == name || v.name.starts_with(&format!("{name} #"))
                    })
                    .count();
                if same > 0 {
                    name = format!("{name} #{}", same + 1);
                }
                variants.push(Variant {
                    name,
                    command,
                    source,
                    allocator: allocator.map(|a| a.name.clone()),
                    threads: thread_count,
                });
            }
        }
    }
    Ok(variants)
}

/// Variant indices in run order: `rounds` rounds of one run per variant, every other
/// round reversed (A B, B A, A B, ...), so that each variant is as often early as late
/// and a drifting machine biases no one.
pub fn balanced_order(variant_count: usize, rounds: usize) -> Vec<Vec<usize>> {
    (0..rounds)
        .map(|round| {
            let forward = 0..variant_count;
            if round % 2 == 0 {
                forward.collect()
            } else {
                forward.rev().collect()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn commands_split_like_a_shell() {
        assert_eq!(
            split_command(r#"prog "a b" 'c d' e\ f"#).unwrap(),
            strings(&["prog", "a b", "c d", "e f"])
        );
        assert!(split_command("prog 'unterminated").is_err());
        assert!(split_command("   ").is_err());
    }

    #[test]
    fn threads_substitute_and_export_the_count() {
        let variants =
            build_variants(&strings(&["work --threads {threads}"]), &[], &[], &[1, 4]).unwrap();
        assert_eq!(variants.len(), 2);
        assert_eq!(
            variants[1].command.argv,
            strings(&["work", "--threads", "4"])
        );
        assert_eq!(
            variants[1].command.env,
            vec![(THREADS_VARIABLE.into(), "4".into())]
        );
        assert_eq!(variants[0].name, "1 thread");
        assert_eq!(variants[1].name, "4 threads");
        assert_eq!(variants[1].threads, Some(4));
    }

    #[test]
    fn allocators_multiply_commands_and_set_preload() {
        let allocators = vec![
            Allocator {
                name: "glibc".into(),
                preload: None,
            },
            Allocator {
                name: "jemalloc".into(),
                preload: Some(PathBuf::from("/lib/libjemalloc.so.2")),
            },
        ];
        let variants = build_variants(
            &strings(&["a", "b x"]),
            &strings(&["first", "second"]),
            &allocators,
            &[],
        )
        .unwrap();
        let names: Vec<&str> = variants.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "first / glibc",
                "first / jemalloc",
                "second / glibc",
                "second / jemalloc"
            ]
        );
        assert!(variants[0].command.env.is_empty());
        let preload = &variants[3].command.env[0];
        assert_eq!(preload.0, "LD_PRELOAD");
        assert!(preload.1.starts_with("/lib/libjemalloc.so.2"));
        assert_eq!(variants[3].source, 1);
    }

    #[test]
    fn repeated_commands_get_distinct_names() {
        let variants = build_variants(&strings(&["true", "true", "true"]), &[], &[], &[]).unwrap();
        let names: Vec<&str> = variants.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["true", "true #2", "true #3"]);
    }

    #[test]
    fn names_must_match_commands() {
        assert!(build_variants(&strings(&["a", "b"]), &strings(&["x"]), &[], &[]).is_err());
        assert!(build_variants(&strings(&["a"]), &[], &[], &[0]).is_err());
    }

    #[test]
    fn order_alternates_direction_each_round() {
        assert_eq!(
            balanced_order(2, 4),
            vec![vec![0, 1], vec![1, 0], vec![0, 1], vec![1, 0]]
        );
        let order = balanced_order(3, 2);
        assert_eq!(order, vec![vec![0, 1, 2], vec![2, 1, 0]]);
        // Over an even number of rounds every variant has the same mean position.
        let order = balanced_order(3, 6);
        for variant in 0..3 {
            let total: usize = order
                .iter()
                .map(|r| r.iter().position(|&v| v == variant).unwrap())
                .sum();
            assert_eq!(total, 6);
        }
    }
}
