//! Groups of ranks (HCCL's `group` attribute): `hccl_world_group` is every rank; other groups
//! are named lists of world ranks (`--comm-group NAME=0,2`), checked against the world size
//! when defined. Ranks inside a collective (`root_rank`, `dest_rank`, `src_rank`) count within
//! the group, in the order the group lists them.

use std::collections::BTreeMap;

use crate::error::{CommError, CommResult};

/// The group of every rank (HCCL's name for it).
pub const WORLD_GROUP: &str = "hccl_world_group";

/// The groups of a world.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Groups {
    world: usize,
    named: BTreeMap<String, Vec<usize>>,
}

impl Groups {
    /// Only the world group, of `world` ranks.
    pub fn world(world: usize) -> Groups {
        Groups {
            world: world.max(1),
            named: BTreeMap::new(),
        }
    }

    /// The world size.
    pub fn world_size(&self) -> usize {
        self.world
    }

    /// Defines group `name` of world `ranks` (each once, each existing).
    pub fn define(&mut self, name: &str, ranks: &[usize]) -> CommResult<()> {
        let bad = |msg: String| CommError::BadGroup {
            group: name.into(),
            msg,
        };
        if name.is_empty() || name == WORLD_GROUP {
            return Err(bad(format!(
                "a group needs a name other than `{WORLD_GROUP}`"
            )));
        }
        if name.len() > 128 {
            return Err(bad("group names are limited to 128 characters".into()));
        }
        if ranks.is_empty() {
            return Err(bad("a group needs at least one rank".into()));
        }
        if let Some(&r) = ranks.iter().find(|&&r| r >= self.world) {
            return Err(CommError::NoSuchRank {
                group: name.into(),
                rank: r,
                size: self.world,
            });
        }
        let mut seen = vec![false; self.world];
        for &r in ranks {
            if std::mem::replace(&mut seen[r], true) {
                return Err(bad(format!("rank {r} is listed twice")));
            }
        }
        self.named.insert(name.into(), ranks.to_vec());
        Ok(())
    }

    /// Parses `NAME=R0,R1,…` and defines it.
    pub fn define_spec(&mut self, spec: &str) -> CommResult<()> {
        let Some((name, list)) = spec.split_once('=') else {
            return Err(CommError::Invalid(format!(
                "--comm-group `{spec}`: expected NAME=RANK,RANK,…"
            )));
        };
        let ranks = list
            .split(',')
            .map(|r| r.trim().parse::<usize>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| {
                CommError::Invalid(format!("--comm-group `{spec}`: ranks must be numbers ≥ 0"))
            })?;
        self.define(name.trim(), &ranks)
    }

    /// The world ranks of group `name`, in group order.
    pub fn ranks(&self, name: &str) -> CommResult<Vec<usize>> {
        if name == WORLD_GROUP {
            return Ok((0..self.world).collect());
        }
        self.named
            .get(name)
            .cloned()
            .ok_or_else(|| CommError::UnknownGroup {
                group: name.into(),
                known: std::iter::once(WORLD_GROUP)
                    .chain(self.named.keys().map(String::as_str))
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }

    /// The named groups (not the world), in name order.
    pub fn named(&self) -> impl Iterator<Item = (&str, &[usize])> {
        self.named.iter().map(|(k, v)| (k.as_str(), v.as_slice()))
    }

    /// `rank`'s place in group `name` and the group's size.
    pub fn member(&self, name: &str, rank: usize) -> CommResult<(usize, usize)> {
        let ranks = self.ranks(name)?;
        let i = ranks
            .iter()
            .position(|&r| r == rank)
            .ok_or_else(|| CommError::NotMember {
                group: name.into(),
                rank,
            })?;
        Ok((i, ranks.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_checked_against_the_world() {
        let mut g = Groups::world(2);
        assert_eq!(g.ranks(WORLD_GROUP).unwrap(), [0, 1]);
        let e = g.define("pair", &[0, 3]).unwrap_err().to_string();
        assert!(e.contains("rank 3, which does not exist"), "{e}");
        assert!(g.define("dup", &[1, 1]).is_err());
        g.define_spec("solo=1").unwrap();
        assert_eq!(g.member("solo", 1).unwrap(), (0, 1));
        assert!(g.member("solo", 0).is_err());
        let e = g.ranks("nope").unwrap_err().to_string();
        assert!(e.contains("hccl_world_group, solo"), "{e}");
    }
}
