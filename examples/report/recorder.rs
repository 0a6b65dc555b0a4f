//! [`Recorder`]: collects a run's data while it runs.

use super::data::{RunData, Sample, SpaceImage, SpaceSnapshot, space_name};
use hotmem::log::{LogConfig, LogOutput, LogSelection};
use hotmem::{MetadataType, Runtime};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

/// Gathers what the report shows: give [`Recorder::log_config`] to the
/// runtime builder, start [`Recorder::sample`] once the runtime runs, take
/// [`Recorder::snapshot_spaces`] at the moments worth a picture, then
/// [`super::write_report`].
#[derive(Clone, Default)]
pub struct Recorder {
    data: Arc<Mutex<RunData>>,
}

/// The sampling thread; stops and joins on drop.
pub struct Sampling {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Sampling {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Recorder {
    /// A recorder for the run called `title`.
    pub fn new(title: &str) -> Recorder {
        let r = Recorder::default();
        r.lock().title = title.to_string();
        r
    }

    fn lock(&self) -> MutexGuard<'_, RunData> {
        self.data.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `base` plus an output that hands this recorder the `gc`,
    /// `gc,phases` and `safepoint` records (as data, no text is written
    /// for it).
    pub fn log_config(&self, base: LogConfig) -> LogConfig {
        let data = self.data.clone();
        let selection = LogSelection::parse("gc=info,gc+phases=info,safepoint=info")
            .expect("a valid selection");
        base.output(
            selection,
            LogOutput::callback(move |r| data.lock().unwrap_or_else(|e| e.into_inner()).record(r)),
        )
    }

    /// Samples the heap and NMT of `rt` every `every` until the returned
    /// handle is dropped.
    ///
    /// # Errors
    /// The error of spawning the thread.
    pub fn sample(&self, rt: &Runtime, every: Duration) -> std::io::Result<Sampling> {
        let stop = Arc::new(AtomicBool::new(false));
        let (rt, data, s) = (rt.clone(), self.data.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("report-sampler".into())
            .spawn(move || {
                while !s.load(Ordering::Relaxed) {
                    let sample = take_sample(&rt);
                    data.lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .samples
                        .push(sample);
                    std::thread::sleep(every);
                }
            })?;
        Ok(Sampling {
            stop,
            thread: Some(thread),
        })
    }

    /// One sample now (the sampler thread takes them periodically; call
    /// this for the first and last moment).
    pub fn sample_now(&self, rt: &Runtime) {
        let sample = take_sample(rt);
        self.lock().samples.push(sample);
    }

    /// A picture of both metaspaces, one letter per commit granule.
    pub fn snapshot_spaces(&self, rt: &Runtime, label: &str) {
        let spaces = [MetadataType::Class, MetadataType::NonClass]
            .into_iter()
            .map(|ty| {
                let space = rt.metaspace().space(ty);
                let map = space.map_with_cell(space.config().commit_granule);
                SpaceImage {
                    space: space_name(ty).to_string(),
                    granule_bytes: map.cell_bytes,
                    cells: map.rows.concat(),
                    legend: map.legend.clone(),
                }
            })
            .collect();
        let t_s = rt.uptime().as_secs_f64();
        self.lock().space_snapshots.push(SpaceSnapshot {
            label: label.to_string(),
            t_s,
            spaces,
        });
    }

    /// A copy of the data so far (flush the runtime's log first, for the
    /// last safepoint).
    pub fn data(&self) -> RunData {
        self.lock().clone()
    }

    /// Ends the recording of `rt`'s run: one last sample, the log flushed
    /// (so every collection's records are in), and the page written to
    /// `dir` ([`super::write_report`]). Stop the sampling thread first.
    ///
    /// # Errors
    /// As [`super::write_report`].
    pub fn finish(
        &self,
        rt: &Runtime,
        dir: &std::path::Path,
    ) -> Result<std::path::PathBuf, String> {
        self.sample_now(rt);
        rt.flush_log();
        super::write_report(&self.data(), dir)
    }
}

fn take_sample(rt: &Runtime) -> Sample {
    let t_s = rt.uptime().as_secs_f64();
    let heap = rt.heap();
    let usage = heap.usage();
    let counters = heap.counters();
    let nmt = rt.nmt();
    let nmt_committed = nmt
        .summary()
        .iter()
        .filter(|(_, t)| t.reserved > 0)
        .map(|(tag, t)| {
            let name = nmt
                .tag_name(tag)
                .map_or_else(|| format!("{tag}"), str::to_string);
            (name, t.committed)
        })
        .collect();
    Sample {
        t_s,
        used: usage.used,
        capacity: usage.capacity,
        max_capacity: usage.max_capacity,
        allocated_total: counters.page_bytes_allocated,
        flushed_total: counters.cache_flush_bytes,
        medium_undo_total: counters.undo_ops.medium,
        stalls: rt.gc_totals().stalls_by_cycle,
        nmt_committed,
    }
}
