//! The words for a session's `--until-decided` record (`session.json`'s `sequential`): printed
//! by the launcher when the session ends and shown on the report page.

use decode_baseline_wire::{
    row::Quantity,
    sequential::{SequentialCell, SequentialEnd, SequentialRecord, SequentialVerdict},
};

/// The lines for `record` (the launcher's output and the report page): one per cell (its rows
/// named as the table names them, `<cell> TTFT` when the looks decided the time to the first
/// token), then the rule.
pub fn lines(record: &SequentialRecord) -> Vec<String> {
    let mut lines: Vec<String> = record.cells.iter().map(|c| cell_line(c, record.quantity)).collect();
    lines.push(format!(
        "until-decided: the session's false-alarm rate {} is split over its {} tested row(s) (Bonferroni), each \
         row's looks held to the Pocock level of its share; the table's verdicts are the fixed-sample test of the \
         pairs that ran",
        record.alpha, record.rows
    ));
    lines
}

fn cell_line(c: &SequentialCell, quantity: Quantity) -> String {
    let cell = quantity.label(&c.cell);
    let Some(level) = c.nominal_level else {
        return format!("until-decided: {cell}: stopped after {} look(s), undecided (budget spent)", c.looks_done);
    };
    let error = c.profile_sd.map_or("own error".to_owned(), |sd| format!("noise profile sd {sd:.4}"));
    let (look, k, pairs) = (c.looks_done, c.looks_planned, c.pairs);
    match c.end {
        SequentialEnd::Decided => {
            let said: Vec<String> = c
                .rows
                .iter()
                .map(|r| {
                    let ratio = r.ratio.map_or(String::new(), |x| format!("ratio {x:.3}"));
                    match r.verdict {
                        SequentialVerdict::NoDifference => format!("{} no difference ({ratio})", r.adapter.as_str()),
                        v => format!(
                            "{} {} ({ratio}, p = {:.4})",
                            r.adapter.as_str(),
                            v.words(),
                            r.p_value.unwrap_or(1.0)
                        ),
                    }
                })
                .collect();
            format!(
                "until-decided: {cell}: decided after look {look} of {k} ({pairs} pairs; Pocock level {level:.4} per \
                 look, {error}): {}",
                said.join("; ")
            )
        }
        end => format!(
            "until-decided: {cell}: not decided after look {look} of {k} ({pairs} pairs; {}, {error}): no row \
             crossed the Pocock level {level:.4}",
            if end == SequentialEnd::LastLook { "the planned last look" } else { "time budget spent" }
        ),
    }
}
