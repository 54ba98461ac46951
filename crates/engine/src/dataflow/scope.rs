//! `Scope`: a handle to a scope under construction.
//!
//! A scope is where operators are added and connected. `Scope<T>` is a cheap, cloneable
//! handle that knows only its own timestamp type; the type of its parent is captured in the
//! closure that installs the scope when it is finished. That keeps handles free of
//! lifetimes, so a scope can be held by the Python layer as well as by Rust closures.
//!
//! This module owns scope construction (adding operators, edges, nested scopes, finishing)
//! and the form in which a finished root scope is handed to the worker (a `Dataflow` to
//! schedule); operators themselves live in `dataflow::operators`.

use crate::logging::{self, Event, Logger};
use crate::progress::{
    ByRefines, Nesting, Operate, Progcaster, Refines, ScopeLedger, Source, Subgraph, SubgraphBuilder, Target,
    Timestamp,
};
use crate::scheduling::Activator;
use crate::worker::{Dataflow, WorkerState};
use std::cell::RefCell;
use std::rc::Rc;

type Install<T> = Box<dyn FnOnce(SubgraphBuilder<T>)>;

/// A dataflow's root scope (its outer timestamp is its own: it has no inputs or outputs) as
/// the worker runs it. Each run is one step of the dataflow; when tracing, it is recorded as a
/// run of the root scope, an operator `id` at address `[dataflow index]` (`docs/trace-format.md`),
/// useful when a child's run in it was.
struct RootScope<T: Timestamp> {
    id: usize,
    scope: Subgraph<T, T>,
    logger: Option<Logger>,
}

impl<T: Timestamp + Refines<T>> Dataflow for RootScope<T> {
    fn schedule(&mut self) -> bool {
        let Some(logger) = &self.logger else { return Operate::schedule(&mut self.scope) };
        logger.log(Event::Schedule { id: self.id, start: true, useful: false });
        let incomplete = Operate::schedule(&mut self.scope);
        logger.log(Event::Schedule { id: self.id, start: false, useful: self.scope.worked() });
        incomplete
    }
}

struct ScopeState<T: Timestamp> {
    worker: Rc<WorkerState>,
    name: String,
    address: Vec<usize>,
    /// The scope's children while it is being described; `None` once finished.
    builder: RefCell<Option<SubgraphBuilder<T>>>,
    /// Builds the subgraph and hands it to the parent (or the worker).
    install: RefCell<Option<Install<T>>>,
    activator: Activator,
}

/// A handle to a scope being described. Clones refer to the same scope.
pub struct Scope<T: Timestamp> {
    state: Rc<ScopeState<T>>,
}

impl<T: Timestamp> Clone for Scope<T> {
    fn clone(&self) -> Self {
        Scope { state: self.state.clone() }
    }
}

impl<T: Timestamp> Scope<T> {
    /// The root scope of dataflow `index`, installed into the worker by `install`.
    pub(crate) fn new_root(
        worker: Rc<WorkerState>,
        name: &str,
        index: usize,
        activator: Activator,
        install: Box<dyn FnOnce(Box<dyn Dataflow>)>,
    ) -> Self {
        let address = vec![index];
        let logger = worker.logger();
        let builder = SubgraphBuilder::new(name, address.clone(), activator.clone(), logger.clone());
        let finish_worker = worker.clone();
        let finish_activator = activator.clone();
        let root_name = name.to_owned();
        let install: Install<T> = Box::new(move |builder: SubgraphBuilder<T>| {
            let progcaster = Self::progcaster(&finish_worker, builder.address().to_vec(), &finish_activator);
            let mut scope = builder.build::<T>(progcaster);
            scope.initialize();
            // The root scope is an operator of the trace too (its runs are the dataflow's
            // steps); its identifier comes last, so its children's are those of a dataflow
            // without it.
            let id = finish_worker.new_identifier();
            let logger = finish_worker.logger();
            logging::log(&logger, || Event::Operates { id, address: vec![index], name: root_name });
            install(Box::new(RootScope { id, scope, logger }));
        });
        Self::from_parts(worker, name, address, builder, install, activator)
    }

    fn from_parts(
        worker: Rc<WorkerState>,
        name: &str,
        address: Vec<usize>,
        builder: SubgraphBuilder<T>,
        install: Install<T>,
        activator: Activator,
    ) -> Self {
        let state = ScopeState {
            worker,
            name: name.to_owned(),
            address,
            builder: RefCell::new(Some(builder)),
            install: RefCell::new(Some(install)),
            activator,
        };
        Scope { state: Rc::new(state) }
    }

    fn progcaster<TInner: Timestamp>(
        worker: &WorkerState,
        address: Vec<usize>,
        activator: &Activator,
    ) -> Progcaster<TInner> {
        let channel = worker.new_identifier();
        worker.activate_on_progress(channel, activator.clone());
        let logger = worker.logger();
        logging::log(&logger, || Event::ProgressChannel { id: channel, scope_address: address.clone() });
        let magnitude = worker.received_magnitude();
        let progcaster =
            Progcaster::new(&mut worker.allocator(), channel, address.clone(), logger, magnitude);
        let ledger: Rc<dyn ScopeLedger> = progcaster.ledger().clone();
        worker.rescaling().register_scope(channel, &address, ledger, activator.clone());
        progcaster
    }

    /// The scope's name.
    pub fn name(&self) -> &str {
        &self.state.name
    }

    /// The scope's address: the indices of enclosing scopes and its own.
    pub fn address(&self) -> &[usize] {
        &self.state.address
    }

    /// This worker's index.
    pub fn index(&self) -> usize {
        self.state.worker.index()
    }

    /// The number of workers.
    pub fn peers(&self) -> usize {
        self.state.worker.peers()
    }

    /// The worker's shared state.
    pub fn worker(&self) -> &Rc<WorkerState> {
        &self.state.worker
    }

    /// The worker's logger, if one is installed.
    pub fn logger(&self) -> Option<Logger> {
        self.state.worker.logger()
    }

    /// Applies `func` to the scope's builder; panics if the scope was finished.
    pub(crate) fn with_builder<R>(&self, func: impl FnOnce(&mut SubgraphBuilder<T>) -> R) -> R {
        let mut builder = self.state.builder.borrow_mut();
        match builder.as_mut() {
            Some(builder) => func(builder),
            None => panic!(
                "scope {:?} ({}) is already finished: operators can only be added while it is described",
                self.state.address, self.state.name
            ),
        }
    }

    /// True while operators can still be added.
    pub fn is_open(&self) -> bool {
        self.state.builder.borrow().is_some()
    }

    /// Reserves the index of an operator named `name`, to be added with `add_operator`.
    pub fn allocate_operator_index(&self, name: &str) -> usize {
        self.with_builder(|b| b.allocate_child_index(name))
    }

    /// An activator for the operator at `index`.
    pub fn activator_for(&self, index: usize) -> Activator {
        self.with_builder(|b| b.child_activator(index))
    }

    /// Adds an operator at a reserved index; returns its worker-unique identifier.
    pub fn add_operator(&self, index: usize, operator: Box<dyn Operate<T>>) -> usize {
        let id = self.state.worker.new_identifier();
        self.with_builder(|b| b.add_child(index, id, operator));
        id
    }

    /// Connects an operator output to an operator input.
    pub fn add_edge(&self, source: Source, target: Target) {
        self.with_builder(|b| b.connect(source, target));
    }

    /// Finishes describing the scope and installs it into its parent (or the worker).
    /// Panics if it was finished before.
    pub fn finish(&self) {
        let builder = self.state.builder.borrow_mut().take();
        let install = self.state.install.borrow_mut().take();
        match (builder, install) {
            (Some(builder), Some(install)) => install(builder),
            _ => panic!("scope {:?} ({}) was finished twice", self.state.address, self.state.name),
        }
    }

    /// Starts a nested scope with timestamp `TInner`; `finish` it to add it to `self`.
    /// Prefer `scoped`; this form serves callers that cannot pass a closure.
    pub fn new_child<TInner: Timestamp + Refines<T>>(&self, name: &str) -> Scope<TInner> {
        self.new_nested(name, ByRefines)
    }

    /// Starts a nested scope whose timestamps relate to this scope's by `nesting` (pass the
    /// same to `enter_nested` and `leave_nested`); `finish` it to add it to `self`.
    pub fn new_nested<TInner: Timestamp, N: Nesting<T, TInner>>(
        &self,
        name: &str,
        nesting: N,
    ) -> Scope<TInner> {
        let index = self.allocate_operator_index(name);
        let activator = self.activator_for(index);
        let mut address = self.state.address.clone();
        address.push(index);
        let builder = SubgraphBuilder::new(name, address.clone(), activator.clone(), self.logger());
        let parent = self.clone();
        let finish_activator = activator.clone();
        let install: Install<TInner> = Box::new(move |builder: SubgraphBuilder<TInner>| {
            let worker = parent.state.worker.clone();
            let progcaster = Self::progcaster(&worker, builder.address().to_vec(), &finish_activator);
            let subgraph = builder.build_nested::<T, N>(progcaster, nesting);
            parent.add_operator(index, Box::new(subgraph));
        });
        Scope::from_parts(self.state.worker.clone(), name, address, builder, install, activator)
    }

    /// Describes a nested scope with timestamp `TInner` and adds it to `self`.
    pub fn scoped<TInner: Timestamp + Refines<T>, R>(
        &self,
        name: &str,
        func: impl FnOnce(&Scope<TInner>) -> R,
    ) -> R {
        let child = self.new_child::<TInner>(name);
        let result = func(&child);
        child.finish();
        result
    }

    /// A nested scope with the same timestamp, to group operators.
    pub fn region<R>(&self, func: impl FnOnce(&Scope<T>) -> R) -> R {
        self.scoped::<T, R>("Region", func)
    }

    /// A nested loop scope whose timestamps are `(outer, iteration)`.
    pub fn iterative<TInner: Timestamp, R>(
        &self,
        func: impl FnOnce(&Scope<crate::order::Product<T, TInner>>) -> R,
    ) -> R {
        self.scoped::<crate::order::Product<T, TInner>, R>("Iterative", func)
    }

    /// True when `child`'s address extends this scope's by one index.
    pub(crate) fn is_parent_of<TInner: Timestamp>(&self, child: &Scope<TInner>) -> bool {
        let (p, c) = (&self.state.address, &child.state.address);
        c.len() == p.len() + 1 && c.starts_with(p)
    }

    /// This scope's index in its parent.
    pub(crate) fn index_in_parent(&self) -> usize {
        *self.state.address.last().expect("a scope has an address")
    }

    /// Adds an input to this (nested) scope, counting entering records in `counts`.
    pub(crate) fn new_scope_input(&self, counts: Rc<RefCell<crate::progress::ChangeBatch<T>>>) -> usize {
        self.with_builder(|b| b.new_input(counts))
    }

    /// Adds an output to this (nested) scope.
    pub(crate) fn new_scope_output(&self) -> usize {
        self.with_builder(|b| b.new_output())
    }

    /// The scope's own activator.
    pub(crate) fn activator(&self) -> &Activator {
        &self.state.activator
    }
}
