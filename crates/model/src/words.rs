//! The one error of a word that names none of the values it may: a status, an operation class,
//! a run kind. It keeps the word and what is accepted, so a caller can say both.

/// A word that names no known value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} `{word}`; accepted: {}", accepted.join(", "))]
pub struct UnknownWord {
    /// What the word should have named (`status`, `operation class`, `run kind`).
    pub what: &'static str,
    pub word: String,
    pub accepted: Vec<&'static str>,
}

impl UnknownWord {
    pub fn new(what: &'static str, word: &str, accepted: impl IntoIterator<Item = &'static str>) -> UnknownWord {
        UnknownWord { what, word: word.to_string(), accepted: accepted.into_iter().collect() }
    }
}
