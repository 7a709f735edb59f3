//! How an error is written on one line: the worker's stderr and a failed report's `error`, and
//! the launcher's messages (the guard's, the manifest tools').

/// An error and its sources, on one line: `error: source: source of source`. A worker's report
/// has one string for why it failed, so nothing of the chain may be lost.
pub fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("failed to build the model from /m")]
    struct Outer {
        #[source]
        source: Middle,
    }

    #[derive(Debug, thiserror::Error)]
    #[error("failed to read the weights")]
    struct Middle {
        #[source]
        source: std::io::Error,
    }

    #[test]
    fn every_source_is_written_in_order() {
        let inner = std::io::Error::other("disk on fire");
        assert_eq!(chain(&inner), "disk on fire");
        let outer = Outer { source: Middle { source: inner } };
        assert_eq!(chain(&outer), "failed to build the model from /m: failed to read the weights: disk on fire");
    }
}
