//! binary-trees, the classic GC benchmark, over a [`Trees`] implementation:
//! the program itself ([`program`]) and the two baselines that need no
//! collector, [`BoxTrees`] (malloc/free per node) and [`ArenaTrees`] (one
//! bump arena per short-lived tree, dropped after its check: the
//! allocation floor). The runtime's version is in `trees_runtime.rs`.
//! Shared by `examples/binary_trees.rs` and `benches/binary_trees.rs`.

/// The shallowest iteration trees (the benchmarks game's `MIN_DEPTH`).
pub(crate) const MIN_DEPTH: u32 = 4;

/// One way to build, check and drop trees.
pub(crate) trait Trees: Sync {
    /// A thread's own state (its mutator, or nothing).
    type Thread;
    /// A tree that lives across many allocations.
    type Kept;

    /// The calling thread's state.
    fn thread(&self) -> Self::Thread;
    /// Builds a tree of `depth`, checks it and lets it go; the check.
    fn temporary(&self, t: &mut Self::Thread, depth: u32) -> u64;
    /// Builds a tree of `depth` that stays until [`Trees::release`].
    fn keep(&self, t: &mut Self::Thread, depth: u32) -> Self::Kept;
    /// The check of a kept tree.
    fn check_kept(&self, t: &mut Self::Thread, kept: &Self::Kept) -> u64;
    /// Lets a kept tree go.
    fn release(&self, t: &mut Self::Thread, kept: Self::Kept);
    /// Runs `f` (which waits for other threads) while `t` does nothing
    /// with trees: a runtime mutator leaves managed code so that the
    /// others' collections do not wait for it.
    fn wait<R>(&self, _t: &mut Self::Thread, f: impl FnOnce() -> R) -> R {
        f()
    }
}

/// Nodes in a complete tree of `depth` (the check of each tree).
pub(crate) fn nodes(depth: u32) -> u64 {
    (1u64 << (depth + 1)) - 1
}

/// Trees (and so nodes) the program allocates for `depth`.
pub(crate) fn allocated_nodes(depth: u32) -> u64 {
    let depth = depth.max(MIN_DEPTH + 2);
    let mut n = nodes(depth + 1) + nodes(depth);
    for k in (MIN_DEPTH..=depth).step_by(2) {
        n += iterations(depth, k) * nodes(k);
    }
    n
}

/// How many trees of depth `k` the program builds for `depth`.
pub(crate) fn iterations(depth: u32, k: u32) -> u64 {
    1u64 << (depth - k + MIN_DEPTH)
}

/// The benchmark: a stretch tree of `depth + 1`, a long-lived tree of
/// `depth`, then `2^(depth - k + 4)` trees of each depth `k = 4, 6, ..`,
/// spread over `threads` threads, then the long-lived tree's check. Each
/// line the benchmarks game prints goes to `out`; the checks are returned
/// in that order (stretch, one per `k`, long-lived).
///
/// `live`: a tree of that depth more, built after the long-lived one and
/// kept (and checked last) for the whole run: a larger live set for the
/// collector to mark (not part of the benchmarks game's program).
pub(crate) fn program<T: Trees>(
    trees: &T,
    depth: u32,
    threads: usize,
    live: Option<u32>,
    out: &mut dyn FnMut(String),
) -> Vec<u64> {
    let depth = depth.max(MIN_DEPTH + 2);
    let threads = threads.max(1);
    let mut checks = Vec::new();
    let mut main = trees.thread();

    let stretch = trees.temporary(&mut main, depth + 1);
    out(format!(
        "stretch tree of depth {}\t check: {stretch}",
        depth + 1
    ));
    checks.push(stretch);

    let long_lived = trees.keep(&mut main, depth);
    let extra = live.map(|d| (d, trees.keep(&mut main, d)));
    for k in (MIN_DEPTH..=depth).step_by(2) {
        let n = iterations(depth, k);
        let sum = if threads == 1 {
            (0..n).map(|_| trees.temporary(&mut main, k)).sum()
        } else {
            trees.wait(&mut main, || {
                std::thread::scope(|s| {
                    let workers: Vec<_> = (0..threads as u64)
                        .map(|i| {
                            let share = n / threads as u64 + u64::from(i < n % threads as u64);
                            s.spawn(move || {
                                let mut me = trees.thread();
                                (0..share).map(|_| trees.temporary(&mut me, k)).sum::<u64>()
                            })
                        })
                        .collect();
                    workers
                        .into_iter()
                        .map(|w| w.join().expect("a tree thread panicked"))
                        .sum()
                })
            })
        };
        out(format!("{n}\t trees of depth {k}\t check: {sum}"));
        checks.push(sum);
    }

    let long = trees.check_kept(&mut main, &long_lived);
    out(format!("long lived tree of depth {depth}\t check: {long}"));
    checks.push(long);
    trees.release(&mut main, long_lived);
    if let Some((d, extra)) = extra {
        let check = trees.check_kept(&mut main, &extra);
        out(format!("extra live tree of depth {d}\t check: {check}"));
        checks.push(check);
        trees.release(&mut main, extra);
    }
    checks
}

/// The classic program on `Box`: malloc and free for every node.
pub(crate) struct BoxTrees;

/// A `Box` tree node.
pub(crate) struct BoxNode {
    left: Option<Box<BoxNode>>,
    right: Option<Box<BoxNode>>,
}

impl BoxNode {
    fn bottom_up(depth: u32) -> Box<BoxNode> {
        let (left, right) = if depth > 0 {
            (
                Some(Self::bottom_up(depth - 1)),
                Some(Self::bottom_up(depth - 1)),
            )
        } else {
            (None, None)
        };
        Box::new(BoxNode { left, right })
    }

    fn check(&self) -> u64 {
        1 + self.left.as_ref().map_or(0, |n| n.check())
            + self.right.as_ref().map_or(0, |n| n.check())
    }
}

impl Trees for BoxTrees {
    type Thread = ();
    type Kept = Box<BoxNode>;

    fn thread(&self) {}
    fn temporary(&self, _: &mut (), depth: u32) -> u64 {
        BoxNode::bottom_up(depth).check()
    }
    fn keep(&self, _: &mut (), depth: u32) -> Box<BoxNode> {
        BoxNode::bottom_up(depth)
    }
    fn check_kept(&self, _: &mut (), kept: &Box<BoxNode>) -> u64 {
        kept.check()
    }
    fn release(&self, _: &mut (), kept: Box<BoxNode>) {
        drop(kept);
    }
}

/// Each tree in a bump arena of its own (a `Vec` of exactly the tree's
/// size), dropped after its check: one allocation per tree, no collector.
/// Nodes are indices into the arena, 16 bytes each like a node of two
/// pointers.
pub(crate) struct ArenaTrees;

/// An arena node: its children's indices, [`ArenaNode::NONE`] for none.
#[derive(Copy, Clone)]
pub(crate) struct ArenaNode {
    left: usize,
    right: usize,
}

impl ArenaNode {
    const NONE: usize = usize::MAX;
}

/// One tree's arena; the root is the last node.
pub(crate) struct Arena {
    nodes: Vec<ArenaNode>,
}

impl Arena {
    fn tree(depth: u32) -> Arena {
        let mut nodes = Vec::with_capacity(nodes(depth) as usize);
        Self::bottom_up(&mut nodes, depth);
        Arena { nodes }
    }

    fn bottom_up(nodes: &mut Vec<ArenaNode>, depth: u32) -> usize {
        let node = if depth > 0 {
            let left = Self::bottom_up(nodes, depth - 1);
            let right = Self::bottom_up(nodes, depth - 1);
            ArenaNode { left, right }
        } else {
            ArenaNode {
                left: ArenaNode::NONE,
                right: ArenaNode::NONE,
            }
        };
        nodes.push(node);
        nodes.len() - 1
    }

    fn check(&self) -> u64 {
        self.nodes
            .last()
            .map_or(0, |_| self.check_at(self.nodes.len() - 1))
    }

    fn check_at(&self, i: usize) -> u64 {
        let n = self.nodes[i];
        if n.left == ArenaNode::NONE {
            1
        } else {
            1 + self.check_at(n.left) + self.check_at(n.right)
        }
    }
}

impl Trees for ArenaTrees {
    type Thread = ();
    type Kept = Arena;

    fn thread(&self) {}
    fn temporary(&self, _: &mut (), depth: u32) -> u64 {
        Arena::tree(depth).check()
    }
    fn keep(&self, _: &mut (), depth: u32) -> Arena {
        Arena::tree(depth)
    }
    fn check_kept(&self, _: &mut (), kept: &Arena) -> u64 {
        kept.check()
    }
    fn release(&self, _: &mut (), kept: Arena) {
        drop(kept);
    }
}
