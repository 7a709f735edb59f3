//! What every row of one comparison is tested with: the decision's settings and the host noise
//! profiles, and the profile of one row (its pairs' entry, or one entry per side).

use decode_baseline_wire::Adapter;

use super::rule;
use crate::noise_profiles::Profiles;
use crate::session::CellData;
use crate::stats::{DecisionConfig, NoiseProfile};

/// The settings and the noise profiles every row of one comparison is tested with.
#[derive(Debug, Clone, Copy)]
pub struct Settings<'a> {
    pub config: DecisionConfig,
    /// The host noise profiles of the cells' designs (`noise_profiles::resolve`).
    pub profiles: Option<&'a Profiles>,
}

impl Settings<'_> {
    /// The profile of the row `adapter` against `reference` over `cells` (one per session, all of
    /// one quantity): the entry of their pairs when the sessions paired them, else one entry per
    /// side (the same adapter's own, for a raw row), each of the cells' quantity and sized to the
    /// fewest runs and units of any session.
    pub(super) fn row_profile(
        &self,
        cells: &[&CellData],
        adapter: &Adapter,
        reference: &Adapter,
    ) -> Option<NoiseProfile> {
        let profiles = self.profiles?;
        let quantity = cells.first()?.quantity;
        if cells.iter().any(|c| c.quantity != quantity) {
            return None;
        }
        let paired = adapter != reference && cells.iter().all(|c| c.pairs.contains_key(adapter));
        let sides: Vec<(&Adapter, Option<&Adapter>)> = match (adapter == reference, paired) {
            (true, _) => vec![(adapter, None)],
            (false, true) => vec![(adapter, Some(reference))],
            (false, false) => vec![(adapter, None), (reference, None)],
        };
        let parts = sides
            .into_iter()
            .map(|(side, against)| {
                let sizes: Vec<(usize, f64)> = cells
                    .iter()
                    .map(|c| {
                        let runs = rule::units_by_run(c, side, against)?;
                        let units = runs.iter().map(Vec::len).sum::<usize>() as f64 / runs.len().max(1) as f64;
                        Some((runs.len(), units))
                    })
                    .collect::<Option<_>>()?;
                Some(crate::noise_profiles::Part {
                    key: crate::noise_profiles::row_key(side, against),
                    runs: sizes.iter().map(|s| s.0).min()?,
                    units: sizes.iter().map(|s| s.1).fold(f64::INFINITY, f64::min),
                })
            })
            .collect::<Option<Vec<_>>>()?;
        profiles.for_row(&cells.first()?.cell, quantity, &parts)
    }
}
