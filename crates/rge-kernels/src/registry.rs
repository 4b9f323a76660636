//! The kernel registry: (domain, op type) → kernel factory. Built in a builder, then frozen
//! and shared (ARCHITECTURE.md decision 4).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::error::{KernelError, KernelResult};
use crate::kernel::{Kernel, KernelInit};

/// Builds a kernel for one node.
pub type KernelFactory = fn(&KernelInit<'_>) -> KernelResult<Box<dyn Kernel>>;

/// The default ONNX domain; "ai.onnx" is an alias of it.
pub const ONNX_DOMAIN: &str = "";

fn norm_domain(d: &str) -> &str {
    if d == "ai.onnx" {
        ""
    } else {
        d
    }
}

/// A registry under construction.
#[derive(Default, Clone)]
pub struct KernelRegistryBuilder {
    map: BTreeMap<(String, String), KernelFactory>,
    overridable: bool,
}

impl KernelRegistryBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `factory` for `op_type` in `domain`; a second registration is an error unless
    /// the override window is open.
    pub fn register(
        &mut self,
        domain: &str,
        op_type: &str,
        factory: KernelFactory,
    ) -> KernelResult<&mut Self> {
        let key = (norm_domain(domain).to_string(), op_type.to_string());
        if self.map.contains_key(&key) && !self.overridable {
            return Err(KernelError::invalid(format!(
                "a kernel for {op_type} (domain '{domain}') is already registered"
            )));
        }
        self.map.insert(key, factory);
        Ok(self)
    }

    /// Registers `factory` for several op types of the default domain (panics never: a
    /// duplicate among built-ins is reported as an error).
    pub fn register_all(
        &mut self,
        op_types: &[&str],
        factory: KernelFactory,
    ) -> KernelResult<&mut Self> {
        for op in op_types {
            self.register(ONNX_DOMAIN, op, factory)?;
        }
        Ok(self)
    }

    /// Opens or closes the override window.
    pub fn set_overridable(&mut self, on: bool) -> &mut Self {
        self.overridable = on;
        self
    }

    /// Freezes the registry.
    pub fn build(self) -> KernelRegistry {
        KernelRegistry {
            map: Arc::new(self.map),
        }
    }
}

/// A frozen, shareable kernel registry.
#[derive(Clone, Default)]
pub struct KernelRegistry {
    map: Arc<BTreeMap<(String, String), KernelFactory>>,
}

impl KernelRegistry {
    /// The factory for `op_type` in `domain`.
    pub fn get(&self, domain: &str, op_type: &str) -> Option<KernelFactory> {
        self.map
            .get(&(norm_domain(domain).to_string(), op_type.to_string()))
            .copied()
    }

    /// True when a kernel is registered.
    pub fn contains(&self, domain: &str, op_type: &str) -> bool {
        self.get(domain, op_type).is_some()
    }

    /// Builds the kernel for a node; errors name the op when none is registered.
    pub fn create(&self, init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
        let f = self.get(init.domain, init.op_type).ok_or_else(|| {
            KernelError::unsupported(format!(
                "no kernel for op type {} (domain '{}')",
                init.op_type, init.domain
            ))
        })?;
        f(init)
    }

    /// (domain, op type) of every registered kernel, sorted.
    pub fn op_types(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        self.map.keys().map(|(d, o)| (d.as_str(), o.as_str()))
    }

    /// The number of registered kernels.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

impl std::fmt::Debug for KernelRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KernelRegistry({} kernels)", self.map.len())
    }
}
