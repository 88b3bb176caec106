//! Typed plugin options: a plugin names a `serde` struct as its `Options`, and the seam
//! parses the operator's `[backend.options]` / `[synthesis.options]` table into it before
//! `open` sees it, with the host's own config-error wording.

use serde::{de::DeserializeOwned, Deserialize};

use crate::{ErrorKind, PluginError};

/// The options of a plugin that takes none: any key is refused.
#[derive(Deserialize, Debug, Default, Clone, Copy, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct NoOptions {}

/// Parses `text`, the TOML of the options table `section` (e.g. `[backend.options]`), into
/// `T`. A bad value or an unknown key (with `#[serde(deny_unknown_fields)]`, which every
/// options struct should carry) is an [`ErrorKind::OPTIONS`] error naming the section and,
/// in the words of the host's config errors, the key and the keys `T` takes. (The text is
/// the host's re-serialization of the table, so its line numbers are left out.)
pub fn parse<T: DeserializeOwned>(section: &str, text: &str) -> Result<T, PluginError> {
    toml::from_str(text).map_err(|e: toml::de::Error| {
        PluginError::new(ErrorKind::OPTIONS, format!("{section}: {}", e.message().trim_end()))
    })
}

/// A size written as humans do: `"96GiB"`, `"512 MiB"`, `"2TB"`, or bytes.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let split = trimmed.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let unit = unit.trim();
    let scale: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1_000,
        "m" | "mb" => 1_000_000,
        "g" | "gb" => 1_000_000_000,
        "t" | "tb" => 1_000_000_000_000,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        "tib" => 1 << 40,
        _ => return Err(format!("`{text}` is not a size such as \"96GiB\" or \"512MiB\" (unit `{unit}`)")),
    };
    let value: f64 = number.parse().map_err(|_| format!("`{text}` is not a size such as \"96GiB\" or \"512MiB\""))?;
    Ok((value * scale as f64) as u64)
}

/// `#[serde(deserialize_with = "size")]`: a [`parse_size`] string.
pub fn size<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    parse_size(&String::deserialize(deserializer)?).map_err(serde::de::Error::custom)
}

/// `#[serde(default, deserialize_with = "optional_size")]`: a [`parse_size`] string, or
/// nothing; zero is refused.
pub fn optional_size<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<u64>, D::Error> {
    match size(deserializer)? {
        0 => Err(serde::de::Error::custom("a size of zero; give one such as \"20GiB\", or leave the key out")),
        bytes => Ok(Some(bytes)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize, Debug, Default, PartialEq)]
    #[serde(default, deny_unknown_fields)]
    struct Example {
        device_name: Option<String>,
        depth: u32,
    }

    #[test]
    fn options_parse_into_their_struct_and_refuse_what_it_lacks() {
        let parsed: Example = parse("[backend.options]", "depth = 3").unwrap();
        assert_eq!(parsed, Example { device_name: None, depth: 3 });
        assert_eq!(parse::<Example>("[backend.options]", "").unwrap(), Example::default());

        let e = parse::<Example>("[backend.options]", "dept = 3").unwrap_err();
        assert_eq!(e.kind, ErrorKind::OPTIONS);
        assert_eq!(e.message, "[backend.options]: unknown field `dept`, expected `device_name` or `depth`");

        let e = parse::<Example>("[backend.options]", "device_name = 4").unwrap_err();
        assert!(e.message.contains("invalid type: integer `4`, expected a string"), "{e}");

        let e = parse::<NoOptions>("[synthesis.options]", "threads = 2").unwrap_err();
        assert!(e.message.contains("unknown field `threads`"), "{e}");
        assert_eq!(parse::<NoOptions>("[synthesis.options]", "").unwrap(), NoOptions {});
    }

    #[derive(Deserialize, Debug, Default, PartialEq)]
    #[serde(default, deny_unknown_fields)]
    struct WithSize {
        #[serde(deserialize_with = "optional_size")]
        memory: Option<u64>,
    }

    #[test]
    fn sizes_parse_as_written_and_zero_or_nonsense_is_refused() {
        assert_eq!(parse_size("20GiB"), Ok(20 << 30));
        assert_eq!(parse_size(" 512 MiB "), Ok(512 << 20));
        assert_eq!(parse_size("2TB"), Ok(2_000_000_000_000));
        assert_eq!(parse_size("1.5GiB"), Ok(3 << 29));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("20 parsecs").unwrap_err().contains("unit `parsecs`"));
        assert!(parse_size("GiB").is_err());
        assert_eq!(parse::<WithSize>("[backend.options]", "memory = \"12MiB\"").unwrap().memory, Some(12 << 20));
        assert_eq!(parse::<WithSize>("[backend.options]", "").unwrap().memory, None);
        let e = parse::<WithSize>("[backend.options]", "memory = \"0GiB\"").unwrap_err();
        assert!(e.message.contains("a size of zero") && e.message.contains("leave the key out"), "{e}");
    }
}
