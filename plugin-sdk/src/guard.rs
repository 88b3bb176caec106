//! Catching panics at the ABI boundary.

use std::panic::{catch_unwind, AssertUnwindSafe};

use abi_stable::std_types::RResult;

use crate::{ErrorKind, PluginError};

/// Runs `f`, turning a panic into an [`ErrorKind::PANIC`] error instead of unwinding
/// across the boundary (which is undefined behaviour for `extern "C"` functions).
pub(crate) fn guard<T>(call: &str, f: impl FnOnce() -> Result<T, PluginError>) -> RResult<T, PluginError> {
    // AssertUnwindSafe: after a panic the plugin object may hold broken invariants; the
    // error tells the host so, and the host drops the context rather than reuse it.
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(result) => result.into(),
        Err(payload) => RResult::RErr(PluginError::new(
            ErrorKind::PANIC,
            format!("the plugin panicked in `{call}`: {}", panic_message(&*payload)),
        )),
    }
}

/// The message a caught panic carries (`panic!`'s text), for an error that replaces it.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panics_become_errors() {
        let r: RResult<(), _> = guard("demo", || panic!("boom"));
        let e = r.unwrap_err();
        assert_eq!(e.kind, ErrorKind::PANIC);
        assert!(e.message.contains("`demo`") && e.message.contains("boom"), "{e}");
    }

    #[test]
    fn results_pass_through() {
        assert_eq!(guard("ok", || Ok(7)).unwrap(), 7);
        let e = guard::<()>("bad", || Err(PluginError::invalid_input("x"))).unwrap_err();
        assert_eq!(e.kind, ErrorKind::INVALID_INPUT);
    }
}
