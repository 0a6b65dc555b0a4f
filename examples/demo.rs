//! The hotmem demo: `cargo xtask demo [-- --threads N --secs S --heap MIB --numa MODE --generations young|single --collector stw|concurrent --page-cache mapped|page --root-tables concurrent|in-pause --young-in-full paced|each-round|never --json --report DIR --full]`.
//!
//! The report page (charts of the run, see the README) goes to
//! `target/hotmem-report/index.html` (or `--report DIR`), the full text
//! report beside it (`report.txt`; `--full` prints it too);
//! `HOTMEM_LOG=gc*=info,safepoint=info` prints the GC log. The run itself
//! is [`hotmem_examples::demo_run`].
//!
//! A small but real managed heap driven by `hotmem::Runtime`: mutator threads
//! build object graphs (linked lists, trees, arrays of shared references,
//! cycles, single objects of small, medium and large sizes) and drop most of
//! them; collections stop the mutators, trace the graphs from the roots on
//! the GC workers, evacuate sparse pages on the NUMA workers, update every
//! reference and free the garbage; class loaders come and go. At the end
//! the whole reachable graph is verified (every payload checksum, every
//! reference) against what the threads built, and the report is printed.

use hotmem_examples::demo_run;

fn main() {
    let args = match demo_run::parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    // Not `stdout().lock()` held for the run: the runtime's log
    // (`HOTMEM_LOG`) writes to stdout from the collecting threads, which
    // would wait for the lock forever.
    let mut out = std::io::stdout();
    if let Err(e) = demo_run::run(&args, &mut out) {
        eprintln!("demo FAILED: {e}");
        std::process::exit(1);
    }
}
