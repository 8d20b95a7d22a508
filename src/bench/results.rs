//! Turns raw measurements into the summaries, comparisons and scaling figures that
//! are printed and exported. Field names are part of the JSON export: add, never rename.

use super::allocators::MissingAllocator;
use super::executor::Measurement;
use super::plan::Variant;
use super::stats::{self, RatioEstimate};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize)]
pub struct VariantSummary {
    pub name: String,
    pub command: String,
    pub runs: usize,
    pub median_ns: u64,
    pub ci_low_ns: u64,
    pub ci_high_ns: u64,
    /// Coverage the order-statistic interval actually achieves.
    pub ci_level: f64,
    pub min_ns: u64,
    pub max_ns: u64,
    pub mean_ns: u64,
    /// Medians over the runs.
    pub user_ns: u64,
    pub system_ns: u64,
    pub minor_faults: u64,
    pub major_faults: u64,
    /// Largest peak RSS of any run.
    pub max_rss_bytes: u64,
    /// Indices (in run order) of runs flagged as outliers; they are kept in every figure.
    pub outliers: Vec<usize>,
    pub failed_runs: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allocator: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
    pub times_ns: Vec<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<ProfileShares>,
}

/// Where one profiled run of a variant spent its time.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ProfileShares {
    pub wall_ns: u64,
    /// Time inside the allocator / total CPU time of all threads (`Summary::alloc_share_of_cpu`;
    /// the export's key keeps its first name).
    #[serde(rename = "alloc_share")]
    pub alloc_share_of_cpu: f64,
    /// Time waiting for locks / (CPU time + lock waiting time) of all threads
    /// (`Summary::lock_wait_share_of_busy`).
    #[serde(rename = "lock_share")]
    pub lock_wait_share_of_busy: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Verdict {
    #[serde(rename = "faster")]
    Faster,
    #[serde(rename = "slower")]
    Slower,
    #[serde(rename = "within noise")]
    WithinNoise,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Comparison {
    pub variant: String,
    pub baseline: String,
    /// Variant time / baseline time (median of per-round log ratios).
    pub ratio: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub ci_level: f64,
    pub verdict: Verdict,
    /// The verdict in words, e.g. "3.90x faster, 95.0% CI 3.70-4.10x".
    pub summary: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct ScalingRow {
    pub variant: String,
    pub threads: u32,
    pub baseline_threads: u32,
    /// Baseline time / this time.
    pub speedup: f64,
    pub speedup_ci_low: f64,
    pub speedup_ci_high: f64,
    /// Speedup / (threads / baseline threads).
    pub efficiency: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OrderEffect {
    pub case: String,
    /// Median time of the case run alone in a fresh process.
    pub alone_ns: u64,
    /// Median time of the case in the program's normal sequence.
    pub in_sequence_ns: u64,
    /// in_sequence_ns / alone_ns.
    pub ratio: f64,
    pub p_value: f64,
    /// Rank-biserial correlation: +1 when every in-sequence run is slower than every
    /// run alone, -1 when every one is faster.
    pub effect_size: f64,
    pub flagged: bool,
    pub alone_runs: usize,
    pub in_sequence_runs: usize,
}

#[derive(Clone, Debug, Serialize)]
pub struct Settings {
    pub runs_per_variant: usize,
    pub warmup: usize,
    pub confidence: f64,
    pub noise: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    pub variants: Vec<VariantSummary>,
    pub comparisons: Vec<Comparison>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scaling: Vec<ScalingRow>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub order_effects: Vec<OrderEffect>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub missing_allocators: Vec<MissingAllocator>,
    pub settings: Settings,
}

fn walls(measurements: &[Measurement]) -> Vec<f64> {
    measurements.iter().map(|m| m.wall_ns as f64).collect()
}

fn median_of(measurements: &[Measurement], field: impl Fn(&Measurement) -> u64) -> u64 {
    let values: Vec<f64> = measurements.iter().map(|m| field(m) as f64).collect();
    stats::median(&values).round() as u64
}

pub fn summarize(
    variant: &Variant,
    measurements: &[Measurement],
    confidence: f64,
) -> VariantSummary {
    let times = walls(measurements);
    let ci = stats::median_ci(&times, confidence);
    VariantSummary {
        name: variant.name.clone(),
        command: variant.display_command(),
        runs: measurements.len(),
        median_ns: stats::median(&times).round() as u64,
        ci_low_ns: ci.low as u64,
        ci_high_ns: ci.high as u64,
        ci_level: ci.level,
        min_ns: measurements.iter().map(|m| m.wall_ns).min().unwrap_or(0),
        max_ns: measurements.iter().map(|m| m.wall_ns).max().unwrap_or(0),
        mean_ns: (times.iter().sum::<f64>() / times.len() as f64).round() as u64,
        user_ns: median_of(measurements, |m| m.user_ns),
        system_ns: median_of(measurements, |m| m.system_ns),
        minor_faults: median_of(measurements, |m| m.minor_faults),
        major_faults: median_of(measurements, |m| m.major_faults),
        max_rss_bytes: measurements
            .iter()
            .map(|m| m.max_rss_bytes)
            .max()
            .unwrap_or(0),
        outliers: stats::outlier_indices(&times),
        failed_runs: measurements.iter().filter(|m| !m.exit.success()).count(),
        allocator: variant.allocator.clone(),
        threads: variant.threads,
        times_ns: measurements.iter().map(|m| m.wall_ns).collect(),
        profile: None,
    }
}

/// "Within noise" when the interval contains 1 or the ratio is inside the noise band.
pub fn verdict(estimate: &RatioEstimate, noise: f64) -> Verdict {
    let interval_contains_one = estimate.ci.low <= 1.0 && 1.0 <= estimate.ci.high;
    if interval_contains_one || (estimate.ratio - 1.0).abs() <= noise {
        Verdict::WithinNoise
    } else if estimate.ratio < 1.0 {
        Verdict::Faster
    } else {
        Verdict::Slower
    }
}

pub fn describe(estimate: &RatioEstimate, verdict: Verdict) -> String {
    let level = estimate.ci.level * 100.0;
    let (low, high) = (estimate.ci.low, estimate.ci.high);
    match verdict {
        Verdict::Faster => format!(
            "{:.2}x faster, {level:.1}% CI {:.2}-{:.2}x",
            1.0 / estimate.ratio,
            1.0 / high,
            1.0 / low
        ),
        Verdict::Slower => {
            format!(
                "{:.2}x slower, {level:.1}% CI {low:.2}-{high:.2}x",
                estimate.ratio
            )
        }
        Verdict::WithinNoise => format!(
            "{:.2}x, within noise ({level:.1}% CI {low:.2}-{high:.2}x)",
            estimate.ratio
        ),
    }
}

/// Every variant against the first one.
pub fn compare(
    variants: &[Variant],
    measurements: &[Vec<Measurement>],
    confidence: f64,
    noise: f64,
) -> Vec<Comparison> {
    let baseline = walls(&measurements[0]);
    (1..variants.len())
        .map(|i| {
            let estimate = stats::paired_ratio(&baseline, &walls(&measurements[i]), confidence);
            let verdict = verdict(&estimate, noise);
            Comparison {
                variant: variants[i].name.clone(),
                baseline: variants[0].name.clone(),
                ratio: estimate.ratio,
                ci_low: estimate.ci.low,
                ci_high: estimate.ci.high,
                ci_level: estimate.ci.level,
                verdict,
                summary: describe(&estimate, verdict),
            }
        })
        .collect()
}

/// Speedup and parallel efficiency of each thread count against the smallest thread
/// count of the same command and allocator (one thread when 1 is in the list).
pub fn scaling(
    variants: &[Variant],
    measurements: &[Vec<Measurement>],
    confidence: f64,
) -> Vec<ScalingRow> {
    let mut rows = Vec::new();
    for (i, variant) in variants.iter().enumerate() {
        let Some(threads) = variant.threads else {
            continue;
        };
        let same_group = |other: &&Variant| {
            other.source == variant.source && other.allocator == variant.allocator
        };
        let Some(base_index) = variants
            .iter()
            .enumerate()
            .filter(|(_, v)| same_group(v))
            .min_by_key(|(_, v)| v.threads)
            .map(|(j, _)| j)
        else {
            continue;
        };
        let base_threads = variants[base_index].threads.unwrap_or(1);
        let estimate = stats::paired_ratio(
            &walls(&measurements[base_index]),
            &walls(&measurements[i]),
            confidence,
        );
        let speedup = 1.0 / estimate.ratio;
        rows.push(ScalingRow {
            variant: variant.name.clone(),
            threads,
            baseline_threads: base_threads,
            speedup,
            speedup_ci_low: 1.0 / estimate.ci.high,
            speedup_ci_high: 1.0 / estimate.ci.low,
            efficiency: speedup * base_threads as f64 / threads as f64,
        });
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::executor::measurement_with_wall;
    use crate::bench::plan::build_variants;
    use crate::bench::stats::Interval;

    fn estimate(ratio: f64, low: f64, high: f64) -> RatioEstimate {
        RatioEstimate {
            ratio,
            ci: Interval {
                low,
                high,
                level: 0.95,
            },
        }
    }

    #[test]
    fn verdict_respects_interval_and_noise_band() {
        assert_eq!(
            verdict(&estimate(1.04, 0.99, 1.10), 0.02),
            Verdict::WithinNoise
        );
        assert_eq!(
            verdict(&estimate(1.015, 1.01, 1.02), 0.02),
            Verdict::WithinNoise
        );
        assert_eq!(verdict(&estimate(1.015, 1.01, 1.02), 0.01), Verdict::Slower);
        assert_eq!(
            verdict(&estimate(0.256, 0.244, 0.27), 0.02),
            Verdict::Faster
        );
        assert_eq!(
            describe(&estimate(0.256, 0.244, 0.27), Verdict::Faster),
            "3.91x faster, 95.0% CI 3.70-4.10x"
        );
        assert_eq!(
            describe(&estimate(1.04, 0.99, 1.10), Verdict::WithinNoise),
            "1.04x, within noise (95.0% CI 0.99-1.10x)"
        );
    }

    fn runs(walls: &[u64]) -> Vec<Measurement> {
        walls.iter().map(|&w| measurement_with_wall(w)).collect()
    }

    #[test]
    fn summary_and_comparison_from_mock_runs() {
        let commands = vec!["fast".to_string(), "slow".to_string()];
        let variants = build_variants(&commands, &[], &[], &[]).unwrap();
        let measurements = vec![
            runs(&[100, 102, 98, 101, 99, 100, 500]),
            runs(&[200, 204, 196, 202, 198, 200, 1000]),
        ];
        let summary = summarize(&variants[0], &measurements[0], 0.95);
        assert_eq!(summary.median_ns, 100);
        assert_eq!((summary.min_ns, summary.max_ns), (98, 500));
        assert_eq!(summary.outliers, vec![6]);
        assert_eq!(summary.runs, 7);
        assert_eq!(summary.max_rss_bytes, 4 << 20);

        let comparisons = compare(&variants, &measurements, 0.95, 0.02);
        assert_eq!(comparisons.len(), 1);
        assert!((comparisons[0].ratio - 2.0).abs() < 1e-9);
        assert_eq!(comparisons[0].verdict, Verdict::Slower);
        assert_eq!(comparisons[0].baseline, "fast");
    }

    #[test]
    fn scaling_is_against_the_smallest_thread_count() {
        let commands = vec!["work {threads}".to_string()];
        let variants = build_variants(&commands, &[], &[], &[1, 2, 4]).unwrap();
        let measurements = vec![
            runs(&[400, 400, 400]),
            runs(&[200, 200, 200]),
            runs(&[160, 160, 160]),
        ];
        let rows = scaling(&variants, &measurements, 0.95);
        assert_eq!(rows.len(), 3);
        assert!((rows[0].speedup - 1.0).abs() < 1e-9);
        assert!((rows[1].efficiency - 1.0).abs() < 1e-9);
        assert!((rows[2].speedup - 2.5).abs() < 1e-9);
        assert!((rows[2].efficiency - 0.625).abs() < 1e-9);
        assert_eq!(rows[2].baseline_threads, 1);
    }
}
