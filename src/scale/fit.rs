//! Scalability models fitted to the measured speedups: Amdahl's law (one serial fraction) and
//! the Universal Scalability Law (contention and coherence), by least squares on the linearized
//! form `N / S(N) - 1 = σ (N - 1) + κ N (N - 1)` (Amdahl is κ = 0).

use serde::Serialize;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Fit {
    /// Amdahl's serial fraction, in [0, 1].
    pub serial_fraction: Option<f64>,
    /// USL σ: the part of the work that serializes (queueing for a shared resource).
    pub usl_contention: Option<f64>,
    /// USL κ: the cost of keeping data coherent between every pair of threads. Needs three
    /// thread counts or more: with two it is not identifiable and stays `None`.
    pub usl_coherence: Option<f64>,
    /// The thread counts the fit used (at most the CPUs: beyond them time-sharing, not the
    /// program, limits the speedup).
    pub counts_used: Vec<u32>,
}

/// Fits `(threads, speedup)` points; only counts up to `cpus` are used.
pub fn fit(points: &[(u32, f64)], cpus: u32) -> Fit {
    let used: Vec<(f64, f64)> = points
        .iter()
        .filter(|(n, s)| *n > 1 && *n <= cpus.max(1) && s.is_finite() && *s > 0.0)
        .map(|&(n, s)| (n as f64, n as f64 / s - 1.0))
        .collect();
    let counts_used = points
        .iter()
        .filter(|(n, s)| *n > 1 && *n <= cpus.max(1) && s.is_finite() && *s > 0.0)
        .map(|p| p.0)
        .collect();
    if used.is_empty() {
        return Fit {
            serial_fraction: None,
            usl_contention: None,
            usl_coherence: None,
            counts_used,
        };
    }
    // Amdahl: y = s x with x = N - 1.
    let (sxy, sxx) = used.iter().fold((0.0, 0.0), |(a, b), &(n, y)| {
        let x = n - 1.0;
        (a + x * y, b + x * x)
    });
    let serial = (sxy / sxx).clamp(0.0, 1.0);

    let distinct = {
        let mut ns: Vec<u64> = used.iter().map(|p| p.0 as u64).collect();
        ns.sort_unstable();
        ns.dedup();
        ns.len()
    };
    let (sigma, kappa) = if distinct >= 2 {
        let (s, k) = usl(&used);
        (Some(s), Some(k))
    } else {
        (Some(serial), None)
    };
    Fit {
        serial_fraction: Some(serial),
        usl_contention: sigma,
        usl_coherence: kappa,
        counts_used,
    }
}

/// Least squares for y = σ a + κ b with a = N - 1, b = N (N - 1), both at least 0.
fn usl(points: &[(f64, f64)]) -> (f64, f64) {
    let (mut aa, mut ab, mut bb, mut ay, mut by) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(n, y) in points {
        let (a, b) = (n - 1.0, n * (n - 1.0));
        aa += a * a;
        ab += a * b;
        bb += b * b;
        ay += a * y;
        by += b * y;
    }
    let det = aa * bb - ab * ab;
    if det.abs() > 1e-12 {
        let sigma = (ay * bb - by * ab) / det;
        let kappa = (aa * by - ab * ay) / det;
        if sigma >= 0.0 && kappa >= 0.0 {
            return (sigma, kappa);
        }
    }
    // On the boundary: one parameter at 0, the other fitted alone; keep the better one.
    let sigma_only = (ay / aa).max(0.0);
    let kappa_only = (by / bb).max(0.0);
    let residual = |s: f64, k: f64| -> f64 {
        points
            .iter()
            .map(|&(n, y)| (y - s * (n - 1.0) - k * n * (n - 1.0)).powi(2))
            .sum()
    };
    if residual(sigma_only, 0.0) <= residual(0.0, kappa_only) {
        (sigma_only, 0.0)
    } else {
        (0.0, kappa_only)
    }
}

impl Fit {
    /// The model's speedup at `n` threads (USL when fitted, else Amdahl).
    pub fn predict(&self, n: u32) -> Option<f64> {
        let n = n as f64;
        let sigma = self.usl_contention.or(self.serial_fraction)?;
        let kappa = self.usl_coherence.unwrap_or(0.0);
        Some(n / (1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0)))
    }

    /// The thread count where the USL curve peaks, when coherence makes it bend down.
    pub fn peak_threads(&self) -> Option<f64> {
        let kappa = self.usl_coherence.filter(|k| *k > 1e-9)?;
        let sigma = self.usl_contention.unwrap_or(0.0);
        Some(((1.0 - sigma) / kappa).sqrt())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn amdahl(s: f64, n: u32) -> f64 {
        1.0 / (s + (1.0 - s) / n as f64)
    }

    fn usl_speedup(sigma: f64, kappa: f64, n: u32) -> f64 {
        let n = n as f64;
        n / (1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0))
    }

    #[test]
    fn recovers_amdahls_serial_fraction() {
        let points: Vec<(u32, f64)> = [1, 2, 4, 8].iter().map(|&n| (n, amdahl(0.2, n))).collect();
        let f = fit(&points, 8);
        assert!((f.serial_fraction.unwrap() - 0.2).abs() < 1e-9, "{f:?}");
        assert!((f.usl_contention.unwrap() - 0.2).abs() < 1e-9, "{f:?}");
        assert!(f.usl_coherence.unwrap().abs() < 1e-9, "{f:?}");
        assert!((f.predict(16).unwrap() - amdahl(0.2, 16)).abs() < 1e-9);
        assert_eq!(f.peak_threads(), None);
    }

    #[test]
    fn recovers_usl_parameters_and_the_peak() {
        let points: Vec<(u32, f64)> = [1, 2, 4, 8, 16]
            .iter()
            .map(|&n| (n, usl_speedup(0.05, 0.002, n)))
            .collect();
        let f = fit(&points, 16);
        assert!((f.usl_contention.unwrap() - 0.05).abs() < 1e-9, "{f:?}");
        assert!((f.usl_coherence.unwrap() - 0.002).abs() < 1e-9, "{f:?}");
        let peak = f.peak_threads().unwrap();
        assert!((peak - (0.95f64 / 0.002).sqrt()).abs() < 1e-6, "{peak}");
    }

    #[test]
    fn two_counts_fit_only_the_serial_fraction_and_oversubscribed_counts_are_left_out() {
        // 2 CPUs: the 4-thread point is time-sharing and must not bend the fit.
        let points = vec![(1, 1.0), (2, amdahl(0.3, 2)), (4, 1.2)];
        let f = fit(&points, 2);
        assert!((f.serial_fraction.unwrap() - 0.3).abs() < 1e-9, "{f:?}");
        assert_eq!(f.usl_coherence, None);
        assert_eq!(f.counts_used, vec![2]);
        // A superlinear speedup clamps at 0, never negative.
        assert_eq!(fit(&[(1, 1.0), (2, 2.2)], 2).serial_fraction, Some(0.0));
        assert_eq!(fit(&[(1, 1.0)], 2).serial_fraction, None);
    }
}
