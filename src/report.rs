//! Helpers shared by human and JSON output.

/// Serializes any `Display` value as its string form (torch devices, targets).
pub fn display<T: std::fmt::Display, S: serde::Serializer>(
    value: &T,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_str(value)
}
