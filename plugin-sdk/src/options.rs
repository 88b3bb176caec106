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
}
