//! What the pause examples (`root_pauses`, `weak_pauses`) share: their
//! common arguments, the wait for the mutator's setup, and the collector
//! thread's cycles run back to back while the mutator works.

use hotmem::{ConcurrentPhases, Generations, Runtime};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// `--cycles N` and `--generations single|young`: the cycles per
/// configuration, and whether they are full cycles only or young and full.
#[derive(Copy, Clone, Debug)]
pub struct CycleArgs {
    /// Cycles per configuration.
    pub cycles: usize,
    /// Full cycles only, or young and full.
    pub generations: Generations,
}

impl Default for CycleArgs {
    fn default() -> Self {
        CycleArgs {
            cycles: 12,
            generations: Generations::Single,
        }
    }
}

impl CycleArgs {
    /// Takes `arg` if it is one of these arguments (reading its value with
    /// `value`): whether it did.
    ///
    /// # Errors
    /// A value that does not parse.
    pub fn take(
        &mut self,
        arg: &str,
        value: &mut dyn FnMut() -> Result<String, String>,
    ) -> Result<bool, String> {
        match arg {
            "--cycles" => {
                self.cycles = value()?.parse().map_err(|e| format!("--cycles: {e}"))?;
            }
            "--generations" => {
                self.generations = match value()?.as_str() {
                    "single" => Generations::Single,
                    "young" => Generations::YoungAndOld,
                    v => return Err(format!("--generations: {v}? (single|young)")),
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Checks the values once all arguments are read.
    ///
    /// # Errors
    /// Fewer than 3 cycles (the first two are left out of the figures).
    pub fn check(&self) -> Result<(), String> {
        if self.cycles < 3 {
            return Err("--cycles must be at least 3 (the first two are left out)".into());
        }
        Ok(())
    }

    /// The kind of cycles, for the heading.
    pub fn describe(&self) -> &'static str {
        match self.generations {
            Generations::YoungAndOld => "young and full cycles, 3 to 1",
            _ => "full cycles",
        }
    }

    /// Runs the cycles from this thread while `mutator` runs (young and
    /// full, 3 to 1, with generations), 2 ms apart, calling `each` with
    /// every cycle's phases and whether it counts in the percentiles (not
    /// the first two, which move the freshly built data the most). Stops
    /// early if the mutator ends.
    ///
    /// # Errors
    /// A collection's error, or a cycle that is not concurrent.
    pub fn run<T>(
        &self,
        rt: &Runtime,
        mutator: &JoinHandle<T>,
        mut each: impl FnMut(&ConcurrentPhases, bool),
    ) -> Result<(), String> {
        for i in 0..self.cycles {
            if mutator.is_finished() {
                break;
            }
            let young = self.generations == Generations::YoungAndOld && i % 4 != 3;
            let s = match young {
                true => rt.collect_young(),
                false => rt.collect(),
            }
            .map_err(|e| e.to_string())?;
            let c = s.concurrent.ok_or("not a concurrent cycle")?;
            each(&c, i >= 2);
            std::thread::sleep(Duration::from_millis(2));
        }
        Ok(())
    }
}

/// Waits until the mutator says it has built its data (`ready`) or has
/// ended (an error it returns).
pub fn wait_until_ready<T>(ready: &AtomicBool, mutator: &JoinHandle<T>) {
    while !ready.load(Ordering::Acquire) && !mutator.is_finished() {
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The comma-separated counts of argument `arg` (`10000,100000`).
///
/// # Errors
/// A count that does not parse.
pub fn counts(arg: &str, value: &str) -> Result<Vec<usize>, String> {
    value
        .split(',')
        .map(|n| n.parse().map_err(|e| format!("{arg}: {e}")))
        .collect()
}

/// Nanoseconds as microseconds.
pub fn us(ns: u64) -> f64 {
    ns as f64 / 1e3
}
