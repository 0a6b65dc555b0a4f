//! The hostile-embedder suite, short: random cases in every collector,
//! with and without a panic planted in a binding callback (see
//! `hotmem_examples::hostile` for what each case does and what must
//! hold). `cargo run --release -p hotmem-examples --example hostile --
//! --secs N` runs it for longer.

use hotmem_examples::hostile::{self, Callback, Case, Mode, PanicPlan};
use proptest::prelude::*;
use std::sync::mpsc;
use std::time::Duration;

/// Generous: a case takes well under a second; this turns a hang into a
/// failure.
const DEADLINE: Duration = Duration::from_secs(120);

fn run(case: Case) -> Result<hostile::Outcome, String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(hostile::run(&case));
    });
    rx.recv_timeout(DEADLINE)
        .unwrap_or_else(|_| Err(format!("{case:?} hung for {DEADLINE:?}")))
}

fn plan() -> impl Strategy<Value = Option<PanicPlan>> {
    prop_oneof![
        Just(None),
        (0..Callback::ALL.len(), 1u64..40).prop_map(|(c, nth)| Some(PanicPlan {
            callback: Callback::ALL[c],
            nth,
        })),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    (0..Mode::ALL.len(), any::<u64>(), plan()).prop_map(|(m, seed, panic)| Case {
        mode: Mode::ALL[m],
        seed,
        ops: 150,
        mutators: 2,
        outsiders: 1,
        panic,
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn no_sequence_of_public_calls_breaks_the_contract(case in case()) {
        let outcome = run(case);
        prop_assert!(outcome.is_ok(), "{case:?}: {}", outcome.unwrap_err());
    }
}

/// Every mode once, with a panic in the root update (the second global
/// root scan of a collection): the case the poison exists for.
#[test]
fn a_panic_in_the_root_update_in_every_mode() {
    for mode in Mode::ALL {
        let case = Case {
            mode,
            seed: 7,
            ops: 200,
            mutators: 2,
            outsiders: 1,
            panic: Some(PanicPlan {
                callback: Callback::GlobalRoots,
                nth: 2,
            }),
        };
        let outcome = run(case).unwrap_or_else(|e| panic!("{case:?}: {e}"));
        assert!(outcome.checks >= 2, "{outcome:?}");
    }
}
