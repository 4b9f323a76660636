//! PLACEHOLDER (lead): helper-3 replaces this file with the real sorts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortMode {
    Bfs = 0,
    #[default]
    Dfs = 1,
    Rdfs = 2,
    StableRdfs = 3,
}
#[derive(Debug, Clone, Default)]
pub struct SortOptions {
    pub mode: SortMode,
    pub memory_priority: bool,
    pub dfs_reverse: bool,
    pub inputs_order: Option<Vec<String>>,
}
