//! The bisection itself, apart from sessions: which two commits the next step compares, and what
//! the outcomes so far say. Commits are oldest first; the first is the known good one, the last
//! the bad one.
//!
//! The first step compares the last commit against the first: `same` ends it with no change to
//! find, `unknown` ends it undecided. After a `different`, each step compares the midpoint of the
//! range against the last good commit (never against the bad one: the question is whether the
//! change has entered yet), and halves the range: `different` makes the midpoint the new bad
//! end, `same` the new good one. An `unknown` that the session's budget could not turn into a
//! decision ends it with the range narrowed so far. A change that enters and leaves again within
//! the range is outside what halving can find (as with `git bisect`).

/// What one step's session decided about the tested commit against the base.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Faster or slower, at the test's error rate.
    Different,
    /// Shown within the equivalence margin.
    Same,
    /// Neither, within the budget.
    Unknown,
}

/// Where a bisection stands or ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Still comparing.
    Open,
    /// The commit at this index is the first that differs from the good one.
    FirstBad(usize),
    /// The bad end is the same as the good one within the margin: nothing to find.
    NoChange,
    /// A step stayed unknown: the change lies after `good` and at or before `bad`.
    Undecided { good: usize, bad: usize },
}

/// A bisection over `n` commits.
#[derive(Debug, Clone)]
pub struct Bisection {
    n: usize,
    good: usize,
    bad: usize,
    /// Whether the bad end was shown to differ from the good one.
    confirmed: bool,
    verdict: Verdict,
}

impl Bisection {
    /// A bisection of `n` commits (`n ≥ 2`: the good one, the bad one and those between).
    pub fn new(n: usize) -> Bisection {
        assert!(n >= 2, "a bisection needs a good and a bad commit");
        Bisection { n, good: 0, bad: n - 1, confirmed: false, verdict: Verdict::Open }
    }

    /// The next step: (base, tested) commit indices, or `None` when it has ended.
    pub fn next(&self) -> Option<(usize, usize)> {
        match self.verdict {
            Verdict::Open if !self.confirmed => Some((0, self.n - 1)),
            Verdict::Open => Some((self.good, (self.good + self.bad) / 2)),
            _ => None,
        }
    }

    /// Takes the outcome of the step [`Self::next`] gave.
    pub fn record(&mut self, outcome: Outcome) {
        let Some((_, tested)) = self.next() else { return };
        match (self.confirmed, outcome) {
            (false, Outcome::Different) => self.confirmed = true,
            (false, Outcome::Same) => self.verdict = Verdict::NoChange,
            (_, Outcome::Unknown) => self.verdict = Verdict::Undecided { good: self.good, bad: self.bad },
            (true, Outcome::Different) => self.bad = tested,
            (true, Outcome::Same) => self.good = tested,
        }
        if self.confirmed && self.verdict == Verdict::Open && self.bad - self.good == 1 {
            self.verdict = Verdict::FirstBad(self.bad);
        }
    }

    pub fn verdict(&self) -> Verdict {
        self.verdict
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a bisection of `n` commits against an oracle; returns the verdict and the steps.
    fn bisect(n: usize, oracle: impl Fn(usize, usize) -> Outcome) -> (Verdict, Vec<(usize, usize)>) {
        let mut b = Bisection::new(n);
        let mut steps = Vec::new();
        while let Some((base, tested)) = b.next() {
            steps.push((base, tested));
            b.record(oracle(base, tested));
        }
        (b.verdict(), steps)
    }

    #[test]
    fn finds_the_first_bad_commit_wherever_it_is() {
        for n in 2..=12 {
            for first_bad in 1..n {
                let oracle = |base: usize, tested: usize| {
                    assert!(base < first_bad, "the base is always a good commit");
                    if tested >= first_bad {
                        Outcome::Different
                    } else {
                        Outcome::Same
                    }
                };
                let (verdict, steps) = bisect(n, oracle);
                assert_eq!(verdict, Verdict::FirstBad(first_bad), "n {n}, first bad {first_bad}");
                let most = 1 + (n as f64 - 1.0).log2().ceil() as usize;
                assert!(steps.len() <= most, "n {n}: {} steps, at most {most}", steps.len());
            }
        }
    }

    #[test]
    fn eight_commits_with_the_change_at_the_fifth_take_four_steps() {
        let (verdict, steps) = bisect(9, |_, tested| if tested >= 5 { Outcome::Different } else { Outcome::Same });
        assert_eq!(verdict, Verdict::FirstBad(5));
        assert_eq!(steps, vec![(0, 8), (0, 4), (4, 6), (4, 5)]);
    }

    #[test]
    fn no_change_and_unknown_end_it() {
        let (verdict, steps) = bisect(9, |_, _| Outcome::Same);
        assert_eq!((verdict, steps.len()), (Verdict::NoChange, 1));
        let (verdict, _) = bisect(9, |_, _| Outcome::Unknown);
        assert_eq!(verdict, Verdict::Undecided { good: 0, bad: 8 });
        let (verdict, steps) = bisect(9, |_, tested| {
            if tested == 8 {
                Outcome::Different
            } else if tested == 4 {
                Outcome::Same
            } else {
                Outcome::Unknown
            }
        });
        assert_eq!(verdict, Verdict::Undecided { good: 4, bad: 8 }, "{steps:?}");
    }
}
