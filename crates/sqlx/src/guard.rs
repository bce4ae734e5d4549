//! [`Guard`]: what must still happen when a future is dropped part-way (a cancelled tool
//! call), unless the code got there itself and defused it. The one drop guard of the crate:
//! a statement's attribution finished as the caller left it, a connection counted as maybe
//! left read-only, a transaction recorded as rolled back.

use std::ops::{Deref, DerefMut};

/// Holds `value` and runs `on_drop` on it when dropped, unless [`Guard::defuse`] ran first.
pub(crate) struct Guard<T, F: FnOnce(&mut T)> {
    value: T,
    on_drop: Option<F>,
}

impl<T, F: FnOnce(&mut T)> Guard<T, F> {
    /// Armed: `on_drop` runs when the guard drops.
    pub(crate) fn new(value: T, on_drop: F) -> Self {
        Guard {
            value,
            on_drop: Some(on_drop),
        }
    }

    /// The code finished what the guard stood for: nothing runs on drop.
    pub(crate) fn defuse(&mut self) {
        self.on_drop = None;
    }

    /// What the guard stands for changed: `on_drop` runs when the guard drops instead.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) fn rearm(&mut self, on_drop: F) {
        self.on_drop = Some(on_drop);
    }
}

impl<T, F: FnOnce(&mut T)> Deref for Guard<T, F> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T, F: FnOnce(&mut T)> DerefMut for Guard<T, F> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.value
    }
}

impl<T: std::fmt::Debug, F: FnOnce(&mut T)> std::fmt::Debug for Guard<T, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.value.fmt(f)
    }
}

impl<T, F: FnOnce(&mut T)> Drop for Guard<T, F> {
    fn drop(&mut self) {
        if let Some(on_drop) = self.on_drop.take() {
            on_drop(&mut self.value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Guard;

    #[test]
    fn runs_on_drop_unless_defused() {
        let mut ran = 0;
        drop(Guard::new(&mut ran, |r| **r += 1));
        assert_eq!(ran, 1);
        let mut g = Guard::new(&mut ran, |r| **r += 1);
        g.defuse();
        drop(g);
        assert_eq!(ran, 1);
    }
}
