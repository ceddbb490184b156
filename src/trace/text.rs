//! [`Text`]: a trace entry's words, kept typed while a step runs and rendered only when shown.
//!
//! Gates and calls record on the hot path of every step; formatting their details there cost more than
//! the decisions themselves. A [`Text`] holds a static string, a number, an owned string or a typed value
//! (any `Display + PartialEq` type, behind an `Arc`), and turns into words only when displayed,
//! serialized or compared with words.

use std::any::Any;
use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A typed detail: what it judged, rendered on demand. Any `Display + PartialEq` type is one.
pub trait Render: fmt::Display + Send + Sync + 'static {
    /// The value, to compare with another of the same type.
    fn as_any(&self) -> &dyn Any;
    /// Whether `other` is a value of the same type and equal to this one.
    fn same(&self, other: &dyn Render) -> bool;
}

impl<T: fmt::Display + PartialEq + Send + Sync + 'static> Render for T {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn same(&self, other: &dyn Render) -> bool {
        other
            .as_any()
            .downcast_ref::<T>()
            .is_some_and(|other| other == self)
    }
}

/// The most bytes [`Text::copy_of`] keeps in place (extension, kernel and device names are shorter).
const SHORT: usize = 22;

#[derive(Clone)]
enum Repr {
    Words(Cow<'static, str>),
    /// A short copied string: its length and bytes (valid UTF-8, copied whole from a `str`).
    Short(u8, [u8; SHORT]),
    Number(u32),
    Typed(Arc<dyn Render>),
}

/// Words in a trace entry (a gate's detail, a call's device or detail), rendered only when shown.
///
/// Two texts are equal when they read the same, whatever they hold; `Debug` shows the words as a string
/// does, and serde reads and writes a string.
#[derive(Clone)]
pub struct Text(Repr);

impl Text {
    /// A static string.
    pub const fn fixed(words: &'static str) -> Self {
        Text(Repr::Words(Cow::Borrowed(words)))
    }

    /// A decimal number (a device ordinal).
    pub const fn number(n: u32) -> Self {
        Text(Repr::Number(n))
    }

    /// The most bytes [`Text::in_place`] holds.
    pub const IN_PLACE_BYTES: usize = SHORT;

    /// A copy of borrowed words held in place, allocating nothing; `None` when they are longer than
    /// [`Text::IN_PLACE_BYTES`].
    pub fn in_place(words: &str) -> Option<Self> {
        let len = u8::try_from(words.len())
            .ok()
            .filter(|_| words.len() <= SHORT)?;
        let mut bytes = [0; SHORT];
        bytes[..words.len()].copy_from_slice(words.as_bytes());
        Some(Text(Repr::Short(len, bytes)))
    }

    /// A copy of borrowed words: in place when short ([`Text::in_place`]), so recording a name allocates
    /// nothing.
    pub fn copy_of(words: &str) -> Self {
        Self::in_place(words).unwrap_or_else(|| Text(Repr::Words(Cow::Owned(words.to_string()))))
    }

    /// A typed value, rendered through its `Display` when shown.
    pub fn typed(value: impl Render) -> Self {
        Text(Repr::Typed(Arc::new(value)))
    }

    /// The words, borrowed when they are already words.
    pub fn words(&self) -> Cow<'_, str> {
        match &self.0 {
            Repr::Words(words) => Cow::Borrowed(words),
            Repr::Short(len, bytes) => Cow::Borrowed(short(*len, bytes)),
            _ => Cow::Owned(self.to_string()),
        }
    }
}

/// The words a [`Repr::Short`] holds.
fn short(len: u8, bytes: &[u8; SHORT]) -> &str {
    // Always whole: the bytes were copied from a `str`, all of it.
    std::str::from_utf8(bytes.get(..usize::from(len)).unwrap_or_default()).unwrap_or_default()
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::Words(words) => f.write_str(words),
            Repr::Short(len, bytes) => f.write_str(short(*len, bytes)),
            Repr::Number(n) => write!(f, "{n}"),
            Repr::Typed(value) => value.fmt(f),
        }
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.words().as_ref(), f)
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Repr::Words(a), Repr::Words(b)) => a == b,
            (Repr::Short(a, x), Repr::Short(b, y)) => a == b && x == y,
            (Repr::Number(a), Repr::Number(b)) => a == b,
            (Repr::Typed(a), Repr::Typed(b)) if Arc::ptr_eq(a, b) || a.same(b.as_ref()) => true,
            // Different holdings can still read the same.
            _ => self.words() == other.words(),
        }
    }
}

impl Eq for Text {}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        self.words() == other
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        self.words() == *other
    }
}

impl From<String> for Text {
    fn from(words: String) -> Self {
        Text(Repr::Words(Cow::Owned(words)))
    }
}

impl From<&'static str> for Text {
    fn from(words: &'static str) -> Self {
        Text::fixed(words)
    }
}

impl From<Cow<'static, str>> for Text {
    fn from(words: Cow<'static, str>) -> Self {
        Text(Repr::Words(words))
    }
}

impl From<Text> for String {
    fn from(text: Text) -> Self {
        match text.0 {
            Repr::Words(words) => words.into_owned(),
            _ => text.to_string(),
        }
    }
}

impl Serialize for Text {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Text::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(PartialEq)]
    struct Pair(u32, u32);

    impl fmt::Display for Pair {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "{} and {}", self.0, self.1)
        }
    }

    #[test]
    fn texts_that_read_the_same_are_equal_whatever_they_hold() {
        assert_eq!(Text::typed(Pair(1, 2)), Text::from("1 and 2".to_string()));
        assert_eq!(Text::typed(Pair(1, 2)), Text::typed(Pair(1, 2)));
        assert_ne!(Text::typed(Pair(1, 2)), Text::typed(Pair(2, 1)));
        assert_eq!(Text::number(7), Text::fixed("7"));
        assert_ne!(Text::number(7), Text::number(8));
        assert_eq!(Text::typed(Pair(3, 4)), "3 and 4");
    }

    #[test]
    fn a_copy_reads_as_its_words_short_or_long() {
        for words in [
            "",
            "marlin",
            "é",
            &"x".repeat(SHORT),
            &"x".repeat(SHORT + 1),
            "gptq_marlin_kernels_ext",
        ] {
            let text = Text::copy_of(words);
            assert_eq!(text.words(), words);
            assert_eq!(text.to_string(), words);
            assert_eq!(text, Text::from(words.to_string()));
            assert_eq!(String::from(text), words);
        }
        assert_ne!(Text::copy_of("a"), Text::copy_of("b"));
        assert!(Text::in_place(&"x".repeat(SHORT + 1)).is_none());
        assert!(matches!(Text::copy_of("marlin").0, Repr::Short(6, _)));
    }

    #[test]
    fn debug_and_serde_show_the_words_as_a_string() {
        let text = Text::typed(Pair(1, 2));
        assert_eq!(format!("{text:?}"), format!("{:?}", "1 and 2"));
        assert_eq!(
            serde_json::to_string(&Some(Text::number(3))).expect("json"),
            "\"3\""
        );
        let back: Text = serde_json::from_str("\"1 and 2\"").expect("json");
        assert_eq!(back, text);
    }
}
