//! rge runtime (engines.md §4.6).
