//! Rayon pools shared by every instance of a plugin in a process.
//!
//! Two instances opened with the same thread count (say, A and B of `bellhop ab` that
//! differ only in a strategy option) must run on the same threads: separate pools of the
//! same size are not equally fast on a small shared machine (where the scheduler places
//! a pool's threads sticks), and that difference would be measured as the variants'.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex, PoisonError},
};

use crate::{ErrorKind, PluginError};

static POOLS: Mutex<BTreeMap<(String, usize), Arc<rayon::ThreadPool>>> = Mutex::new(BTreeMap::new());

/// The process-wide pool called `name` with `threads` threads (0: one per core), started
/// on first use. Its threads are named `name-<i>`.
pub fn shared(name: &str, threads: usize) -> Result<Arc<rayon::ThreadPool>, PluginError> {
    let mut pools = POOLS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(pool) = pools.get(&(name.to_string(), threads)) {
        return Ok(Arc::clone(pool));
    }
    let thread_name = name.to_string();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(move |i| format!("{thread_name}-{i}"))
        .build()
        .map_err(|e| PluginError::new(ErrorKind::INTERNAL, format!("cannot start the thread pool: {e}")))?;
    let pool = Arc::new(pool);
    pools.insert((name.to_string(), threads), Arc::clone(&pool));
    Ok(pool)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_pool_per_name_and_size() {
        let a = shared("test-pool", 2).unwrap();
        assert!(Arc::ptr_eq(&a, &shared("test-pool", 2).unwrap()));
        assert!(!Arc::ptr_eq(&a, &shared("test-pool", 1).unwrap()));
        assert!(!Arc::ptr_eq(&a, &shared("other-pool", 2).unwrap()));
        assert_eq!(a.current_num_threads(), 2);
    }
}
