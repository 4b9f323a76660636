//! Sets and maps for the bookkeeping of one patch: a vector searched in order while small, a
//! hash table past that. Most patches name a handful of nodes and links, and a fusion pass
//! applies tens of thousands of them: a hash table per set (allocated, hashed, freed) was a
//! third of applying such a patch. No crate keeps this shape with hashbrown's tables behind
//! it (`smallvec`-backed maps stay linear however large they grow).

use std::hash::Hash;

use hashbrown::{HashMap, HashSet};
use smallvec::SmallVec;

/// Entries kept in the inline vector before moving to a hash table.
const INLINE: usize = 16;

/// A set of small `Copy` keys.
#[derive(Debug, Clone)]
pub(crate) enum SmallSet<T: Copy + Eq + Hash> {
    Few(SmallVec<[T; INLINE]>),
    Many(HashSet<T>),
}

impl<T: Copy + Eq + Hash> Default for SmallSet<T> {
    fn default() -> Self {
        SmallSet::Few(SmallVec::new())
    }
}

impl<T: Copy + Eq + Hash> SmallSet<T> {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Adds `x`; false when it was there already.
    pub(crate) fn insert(&mut self, x: T) -> bool {
        match self {
            SmallSet::Few(v) => {
                if v.contains(&x) {
                    return false;
                }
                if v.len() < INLINE {
                    v.push(x);
                } else {
                    let mut set: HashSet<T> = v.iter().copied().collect();
                    set.insert(x);
                    *self = SmallSet::Many(set);
                }
                true
            }
            SmallSet::Many(s) => s.insert(x),
        }
    }

    pub(crate) fn contains(&self, x: &T) -> bool {
        match self {
            SmallSet::Few(v) => v.contains(x),
            SmallSet::Many(s) => s.contains(x),
        }
    }

    /// The keys (in insertion order while few).
    pub(crate) fn iter(&self) -> impl Iterator<Item = T> + '_ {
        let (few, many) = match self {
            SmallSet::Few(v) => (Some(v.iter().copied()), None),
            SmallSet::Many(s) => (None, Some(s.iter().copied())),
        };
        few.into_iter().flatten().chain(many.into_iter().flatten())
    }
}

impl<T: Copy + Eq + Hash> FromIterator<T> for SmallSet<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let mut s = SmallSet::new();
        for x in iter {
            s.insert(x);
        }
        s
    }
}

/// A map from small `Copy` keys.
#[derive(Debug, Clone)]
pub(crate) enum SmallMap<K: Copy + Eq + Hash, V> {
    Few(SmallVec<[(K, V); INLINE]>),
    Many(HashMap<K, V>),
}

impl<K: Copy + Eq + Hash, V> Default for SmallMap<K, V> {
    fn default() -> Self {
        SmallMap::Few(SmallVec::new())
    }
}

impl<K: Copy + Eq + Hash, V> SmallMap<K, V> {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    pub(crate) fn get(&self, k: &K) -> Option<&V> {
        match self {
            SmallMap::Few(v) => v.iter().find(|(x, _)| x == k).map(|(_, v)| v),
            SmallMap::Many(m) => m.get(k),
        }
    }

    /// Sets `k` to `value`; the value it had, if any.
    pub(crate) fn insert(&mut self, k: K, value: V) -> Option<V> {
        match self.get_mut(&k) {
            Some(slot) => Some(std::mem::replace(slot, value)),
            None => {
                self.push_new(k, value);
                None
            }
        }
    }

    pub(crate) fn get_mut(&mut self, k: &K) -> Option<&mut V> {
        match self {
            SmallMap::Few(v) => v.iter_mut().find(|(x, _)| x == k).map(|(_, v)| v),
            SmallMap::Many(m) => m.get_mut(k),
        }
    }

    /// The value of `k`, inserted by `f` when absent.
    pub(crate) fn get_or_insert_with(&mut self, k: K, f: impl FnOnce() -> V) -> &mut V {
        if self.get(&k).is_none() {
            self.push_new(k, f());
        }
        self.get_mut(&k).expect("present: just inserted")
    }

    fn push_new(&mut self, k: K, value: V) {
        match self {
            SmallMap::Few(v) if v.len() < INLINE => v.push((k, value)),
            SmallMap::Few(v) => {
                let mut m: HashMap<K, V> = std::mem::take(v).into_iter().collect();
                m.insert(k, value);
                *self = SmallMap::Many(m);
            }
            SmallMap::Many(m) => {
                m.insert(k, value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_grows_past_inline_and_keeps_every_key() {
        let mut s = SmallSet::new();
        for i in 0..100u32 {
            assert!(s.insert(i));
            assert!(!s.insert(i));
        }
        assert!(matches!(s, SmallSet::Many(_)));
        assert!((0..100).all(|i| s.contains(&i)));
        assert!(!s.contains(&100));
        let mut all: Vec<u32> = s.iter().collect();
        all.sort_unstable();
        assert_eq!(all, (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn map_grows_past_inline_and_replaces_values() {
        let mut m = SmallMap::new();
        for i in 0..40u32 {
            assert_eq!(m.insert(i, i * 2), None);
        }
        assert_eq!(m.insert(7, 0), Some(14));
        assert!(matches!(m, SmallMap::Many(_)));
        assert_eq!(m.get(&7), Some(&0));
        assert_eq!(m.get(&39), Some(&78));
        m.get_or_insert_with(50, || 1);
        *m.get_or_insert_with(50, || 2) += 10;
        assert_eq!(m.get(&50), Some(&11));
        assert_eq!(m.get(&51), None);
    }
}
