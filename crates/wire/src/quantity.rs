//! What a tested row's ratio is a ratio of: time per token, or time to the first token. Its own
//! module, beneath both the rows and the noise profiles (a profile entry is of one quantity).

use serde::{Deserialize, Serialize};

/// What a row's ratio is a ratio of. Both are judged the same way (the rule of the session's
/// design, one Holm family with the other rows); a row of each kind per cell and adapter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Quantity {
    /// Each measured request's median decode-step time (time per token).
    #[default]
    PerToken,
    /// Each measured request's time to the first token: from the request's start to its first
    /// generated token known, the prefill included. Tested in headline cells only, where stock
    /// is `stream_generate` itself.
    FirstToken,
}

impl Quantity {
    /// The short name views put after a row's cell: empty for per token, which every row was
    /// before there were two.
    pub fn tag(self) -> &'static str {
        match self {
            Quantity::PerToken => "",
            Quantity::FirstToken => "TTFT",
        }
    }

    /// `name` as views print a row of this quantity: the name alone per token, the name and
    /// the tag for the first token (`<cell> TTFT`, `controlled/stock TTFT`).
    pub fn label(self, name: &str) -> String {
        match self.tag() {
            "" => name.to_owned(),
            tag => format!("{name} {tag}"),
        }
    }

    /// `per_token` or `first_token`, as serialized (CSV's column).
    pub fn as_str(self) -> &'static str {
        match self {
            Quantity::PerToken => "per_token",
            Quantity::FirstToken => "first_token",
        }
    }

    /// The quantity a flag names: `per-token` (or `per_token`), `first-token` (or
    /// `first_token`, `ttft`); `Err` says what is expected.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "per-token" | "per_token" => Ok(Quantity::PerToken),
            "first-token" | "first_token" | "ttft" => Ok(Quantity::FirstToken),
            other => Err(format!("expected per-token or first-token (ttft), found {other:?}")),
        }
    }
}
