//! Trees laid out in post-order, as the forest-distance DP needs them, in
//! both orientations: left (children in order) and right (children
//! reversed, i.e. the mirrored tree, whose leftmost paths are the original's
//! rightmost paths).

use crate::tree::OpTree;

/// Orientation index: left paths.
pub(crate) const L: usize = 0;
/// Orientation index: right paths (mirrored layout).
pub(crate) const R: usize = 1;

/// One tree in one orientation's post-order.
pub(crate) struct Post {
    /// Post-order index -> arena index.
    pub arena: Vec<usize>,
    /// Arena index -> post-order index.
    pub index: Vec<usize>,
    /// Leftmost leaf descendant of each node (post-order indices).
    pub lld: Vec<usize>,
    /// Key roots, ascending: the highest node for each distinct `lld`.
    pub keyroots: Vec<usize>,
}

impl Post {
    /// `mirror` visits children right to left, i.e. lays out the mirrored tree.
    pub fn new(t: &OpTree, mirror: bool) -> Post {
        let n = t.len();
        let mut arena = Vec::with_capacity(n);
        let mut lld = Vec::with_capacity(n);
        // Iterative post-order: (node, next child position, lld so far).
        let mut stack: Vec<(usize, usize, Option<usize>)> = vec![(0, 0, None)];
        while let Some(top) = stack.last_mut() {
            let (node, pos) = (top.0, top.1);
            let kids = &t.node(node).children;
            if pos < kids.len() {
                top.1 += 1;
                let c = if mirror {
                    kids[kids.len() - 1 - pos]
                } else {
                    kids[pos]
                };
                stack.push((c, 0, None));
            } else {
                let me = arena.len();
                let my_lld = top.2.unwrap_or(me);
                arena.push(node);
                lld.push(my_lld);
                stack.pop();
                if let Some(parent) = stack.last_mut() {
                    // The first finished child carries the parent's lld.
                    parent.2.get_or_insert(my_lld);
                }
            }
        }
        let mut index = vec![0; n];
        for (p, &a) in arena.iter().enumerate() {
            index[a] = p;
        }
        let mut highest = vec![usize::MAX; n];
        for (i, &l) in lld.iter().enumerate() {
            highest[l] = i; // post-order: later = higher
        }
        let mut keyroots: Vec<usize> = highest.into_iter().filter(|&k| k != usize::MAX).collect();
        keyroots.sort_unstable();
        Post {
            arena,
            index,
            lld,
            keyroots,
        }
    }

    /// Σ of key-root subtree sizes: the factor by which a single-path pass
    /// of the other tree against this whole tree multiplies.
    pub fn keyroot_work(&self) -> u64 {
        self.keyroots
            .iter()
            .map(|&k| (k - self.lld[k] + 1) as u64)
            .sum()
    }
}

/// A tree in both orientations.
pub(crate) struct Layout {
    pub post: [Post; 2],
    /// `cross[o][x]`: the post-order index, in the other orientation, of the
    /// node at post-order index `x` in orientation `o`.
    pub cross: [Vec<usize>; 2],
}

impl Layout {
    pub fn new(t: &OpTree) -> Layout {
        let post = [Post::new(t, false), Post::new(t, true)];
        let cross = |o: usize| {
            post[o]
                .arena
                .iter()
                .map(|&a| post[1 - o].index[a])
                .collect()
        };
        let cross = [cross(L), cross(R)];
        Layout { post, cross }
    }
}
