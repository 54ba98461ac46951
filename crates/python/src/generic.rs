//! Generic operators from Python: `source`, `sink`, `unary`, `unary_frontier`,
//! `unary_notify`, `binary`, `binary_frontier`, `binary_notify`, with capabilities,
//! input and output ports, frontiers and notificators exposed as Python objects.

use crate::scope::ScopeHandle;
use crate::stream::StreamHandle;
use crate::time::PyTime;

/// Generic operators on a stream of any timestamp depth.
pub trait GenericStream {}

/// Generic operators on a scope of any timestamp depth.
pub trait GenericScope {}

impl<T: PyTime> GenericStream for StreamHandle<T> {}
impl<T: PyTime> GenericScope for ScopeHandle<T> {}
