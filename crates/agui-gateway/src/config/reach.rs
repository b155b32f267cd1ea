//! How an agent is reached, when the configuration says rather than its
//! card: the binding (`binding = "…"`) and the mode (`mode = "…"`). The
//! card's own choice is `upstream::route`'s.

use std::fmt;
use std::str::FromStr;

/// The A2A protocol bindings the gateway speaks towards agents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Binding {
    JsonRpc,
    /// HTTP+JSON ("REST"), as 1.0 defines it.
    HttpJson,
    Grpc,
}

impl Binding {
    /// The name a card (`protocolBinding`, `transport`) and the
    /// configuration use.
    pub fn as_str(self) -> &'static str {
        match self {
            Binding::JsonRpc => "JSONRPC",
            Binding::HttpJson => "HTTP+JSON",
            Binding::Grpc => "GRPC",
        }
    }

    /// A card's name for a binding, any case; `None` for one the gateway
    /// does not speak.
    pub fn of_card(name: &str) -> Option<Binding> {
        [Binding::JsonRpc, Binding::HttpJson, Binding::Grpc]
            .into_iter()
            .find(|binding| binding.as_str().eq_ignore_ascii_case(name))
    }
}

impl fmt::Display for Binding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether runs stream or poll their task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// `message/stream`, `SendStreamingMessage`: the agent's events as
    /// they happen.
    Stream,
    /// A send that returns at once, then the task read until it ends or
    /// waits: for agents whose card says `streaming: false`.
    Poll,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Stream => "stream",
            Mode::Poll => "poll",
        }
    }
}

/// What the configuration pins of how an agent is reached; `None` leaves
/// it to the card.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reach {
    pub binding: Option<Binding>,
    pub mode: Option<Mode>,
}

/// A value of `binding` or `mode` that is none of the accepted ones.
#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not one of {1}")]
pub struct UnknownValue(String, &'static str);

/// `binding = "auto" | "jsonrpc" | "http+json" | "grpc"`.
pub struct BindingPin(pub Option<Binding>);

impl FromStr for BindingPin {
    type Err = UnknownValue;

    fn from_str(value: &str) -> Result<BindingPin, UnknownValue> {
        match value.to_ascii_lowercase().as_str() {
            "auto" => Ok(BindingPin(None)),
            "jsonrpc" | "json-rpc" => Ok(BindingPin(Some(Binding::JsonRpc))),
            "http+json" | "rest" => Ok(BindingPin(Some(Binding::HttpJson))),
            "grpc" => Ok(BindingPin(Some(Binding::Grpc))),
            _ => Err(UnknownValue(
                value.to_owned(),
                "auto, jsonrpc, http+json, grpc",
            )),
        }
    }
}

/// `mode = "auto" | "stream" | "poll"`.
pub struct ModePin(pub Option<Mode>);

impl FromStr for ModePin {
    type Err = UnknownValue;

    fn from_str(value: &str) -> Result<ModePin, UnknownValue> {
        match value.to_ascii_lowercase().as_str() {
            "auto" => Ok(ModePin(None)),
            "stream" => Ok(ModePin(Some(Mode::Stream))),
            "poll" => Ok(ModePin(Some(Mode::Poll))),
            _ => Err(UnknownValue(value.to_owned(), "auto, stream, poll")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_in_any_case() {
        assert_eq!(Binding::of_card("http+json"), Some(Binding::HttpJson));
        assert_eq!(Binding::of_card("GRPC"), Some(Binding::Grpc));
        assert_eq!(Binding::of_card("websocket"), None);
        assert_eq!(
            "REST".parse::<BindingPin>().ok().and_then(|p| p.0),
            Some(Binding::HttpJson)
        );
        assert!("sometimes".parse::<ModePin>().is_err());
    }
}
