//! `Deserialize` for the format's integer-or-string values ([`SelectorValue`], [`IntOrWord`]).
//!
//! Each reads like `#[serde(untagged)]` with an `i64` variant first and a `String` variant second, and
//! refuses anything else with the same message, but straight from the value: serde's untagged enums buffer
//! every value into an intermediate tree first, which cost more than the rest of a step's decoding.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserializer, Visitor};

use super::{IntOrWord, SelectorValue};

/// A value that is an integer or a string.
trait IntOrText: Sized {
    /// The message of serde's untagged enums when no variant matched.
    const MISMATCH: &'static str;
    /// The integer variant.
    fn int(n: i64) -> Self;
    /// The string variant.
    fn text(text: String) -> Self;
}

impl IntOrText for SelectorValue {
    const MISMATCH: &'static str = "data did not match any variant of untagged enum SelectorValue";

    fn int(n: i64) -> Self {
        SelectorValue::Int(n)
    }

    fn text(text: String) -> Self {
        SelectorValue::Text(text)
    }
}

impl IntOrText for IntOrWord {
    const MISMATCH: &'static str = "data did not match any variant of untagged enum IntOrWord";

    fn int(n: i64) -> Self {
        IntOrWord::Int(n)
    }

    fn text(text: String) -> Self {
        IntOrWord::Word(text)
    }
}

/// Reads an [`IntOrText`] from whatever the value is.
struct Either<T>(PhantomData<T>);

impl<T: IntOrText> Either<T> {
    fn mismatch<E: de::Error>() -> Result<T, E> {
        Err(E::custom(T::MISMATCH))
    }
}

impl<'de, T: IntOrText> Visitor<'de> for Either<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an integer or a string")
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<T, E> {
        Ok(T::int(n))
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<T, E> {
        i64::try_from(n).map_or_else(|_| Self::mismatch(), |n| Ok(T::int(n)))
    }

    fn visit_i128<E: de::Error>(self, _: i128) -> Result<T, E> {
        Self::mismatch()
    }

    fn visit_u128<E: de::Error>(self, _: u128) -> Result<T, E> {
        Self::mismatch()
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<T, E> {
        Ok(T::text(text.to_string()))
    }

    fn visit_string<E: de::Error>(self, text: String) -> Result<T, E> {
        Ok(T::text(text))
    }

    fn visit_char<E: de::Error>(self, c: char) -> Result<T, E> {
        Ok(T::text(c.to_string()))
    }

    fn visit_bytes<E: de::Error>(self, bytes: &[u8]) -> Result<T, E> {
        std::str::from_utf8(bytes).map_or_else(|_| Self::mismatch(), |text| self.visit_str(text))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<T, E> {
        Self::mismatch()
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<T, E> {
        Self::mismatch()
    }

    fn visit_unit<E: de::Error>(self) -> Result<T, E> {
        Self::mismatch()
    }

    fn visit_none<E: de::Error>(self) -> Result<T, E> {
        Self::mismatch()
    }

    fn visit_some<D: Deserializer<'de>>(self, _: D) -> Result<T, D::Error> {
        Self::mismatch()
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, _: D) -> Result<T, D::Error> {
        Self::mismatch()
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, _: A) -> Result<T, A::Error> {
        Self::mismatch()
    }

    fn visit_map<A: de::MapAccess<'de>>(self, _: A) -> Result<T, A::Error> {
        Self::mismatch()
    }

    fn visit_enum<A: de::EnumAccess<'de>>(self, _: A) -> Result<T, A::Error> {
        Self::mismatch()
    }
}

impl<'de> serde::Deserialize<'de> for SelectorValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Either(PhantomData))
    }
}

impl<'de> serde::Deserialize<'de> for IntOrWord {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Either(PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    /// The derive this module replaces, to compare against.
    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(untagged)]
    enum Untagged {
        Int(i64),
        Text(String),
    }

    #[derive(Debug, Deserialize)]
    struct Hand {
        v: toml::Spanned<SelectorValue>,
    }

    #[derive(Debug, Deserialize)]
    struct Derived {
        v: toml::Spanned<Untagged>,
    }

    #[test]
    fn values_and_refusals_read_as_the_untagged_derive_reads_them() {
        for value in [
            "1",
            "-3",
            "0x10",
            "\"cuda:1\"",
            "'rocm'",
            "\"\"",
            "true",
            "1.5",
            "[1]",
            "{ a = 1 }",
            "1979-05-27",
            "9223372036854775807",
        ] {
            let text = format!("v = {value}\n");
            let hand = toml::from_str::<Hand>(&text);
            let derived = toml::from_str::<Derived>(&text);
            match (hand, derived) {
                (Ok(hand), Ok(derived)) => {
                    let read = match hand.v.get_ref() {
                        SelectorValue::Int(n) => Untagged::Int(*n),
                        SelectorValue::Text(text) => Untagged::Text(text.clone()),
                    };
                    assert_eq!(read, *derived.v.get_ref(), "{value}");
                    assert_eq!(hand.v.span(), derived.v.span(), "{value}");
                }
                (Err(hand), Err(derived)) => {
                    let derived = derived.to_string().replace("Untagged", "SelectorValue");
                    assert_eq!(hand.to_string(), derived, "{value}");
                }
                (hand, derived) => panic!("{value}: {hand:?} against {derived:?}"),
            }
        }
    }
}
