//! SQLite hooks: every row change with its table, buffered per connection until the
//! transaction commits or rolls back (row changes as evidence:
//! [design: evidence](../../../../docs/design.md#3-evidence)).
//!
//! When the hooks fire: the update hook once per row inserted, updated or deleted in a rowid
//! table, including rows written by triggers, while the statement steps; the commit hook when
//! a transaction commits, including the implicit transaction of an autocommit statement
//! (before the statement returns); the rollback hook on `ROLLBACK` or an implicit rollback.
//! The update hook is blind to `DELETE` without `WHERE` (truncate optimisation), to rows
//! `REPLACE` deletes on conflict, and to `WITHOUT ROWID` tables. Rows of the `temp` schema
//! (temporary tables, the session's own objects) are left out.
//!
//! The hooks run on sqlx's worker thread, where the caller's task-locals are invisible, so
//! each connection has a [`Slot`], and every row change is tagged with the binding current
//! when it happened:
//! - a held connection (an audited connection or transaction, or one pooled statement on a
//!   pool hintaudit did not open) binds its slot to (the call's effects, the statement's
//!   index), or to nothing when unscoped;
//! - an idle connection's slot is unbound and falls back to the pool's [`Writer`]: the one
//!   pooled statement that may write and has claimed it. On a pool hintaudit opened, the hooks
//!   are installed when a connection connects, so a pooled write that finds the writer free
//!   claims it instead of binding its connection, and needs no round trip to the connection's
//!   worker thread; one that finds it claimed binds its own connection's slot, like a held
//!   connection.

use parking_lot::{Mutex, MutexGuard};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use hintaudit_core::{AuditStage, RowChange, RowOperation, stats};
use sqlx::sqlite::{LockedSqliteHandle, SqliteOperation};

use crate::execute::Sink;

use super::columns::{Columns, Image};

/// A row change waiting for its transaction to end.
#[derive(Debug)]
struct Pending {
    sink: Option<Sink>,
    table: Box<str>,
    row_id: i64,
    operation: RowOperation,
    image: Image,
    nested: Option<bool>,
}

/// What a connection's row changes are attributed to.
#[derive(Debug, Default)]
pub(crate) enum Binding {
    /// Idle in the pool, or held but not yet bound: the pool's current [`Writer`], if any.
    #[default]
    Pool,
    /// Held: this statement of this call, or nobody (an unscoped statement).
    Held(Option<Sink>),
    /// Handed out raw for set-up work (migrations): its rows are no call's and not
    /// unattributed; they are not buffered.
    SetUp,
}

#[derive(Debug, Default)]
struct SlotState {
    binding: Binding,
    pending: Vec<Pending>,
    /// The buffer `pending` had before the last flush, emptied, kept for the next one (up to
    /// [`MAX_SPARE_ROWS`]): a connection's row changes then need no allocation of their own.
    spare: Vec<Pending>,
    /// Row changes the update hook reported while held, since the last bind.
    seen: u64,
    /// Row images from the preupdate hook, consumed by the update hook for the same row.
    #[cfg(feature = "preupdate-hook")]
    image: Option<(Image, Option<bool>)>,
}

/// One connection's binding and its buffered row changes.
#[derive(Debug)]
pub(crate) struct Slot {
    state: Mutex<SlotState>,
    columns: Arc<Columns>,
    writer: Arc<Writer>,
}

/// The pool-wide binding of pooled statements that may write, which every unbound
/// connection's hooks fall back to. One statement at a time claims it, through
/// [`Writer::try_claim`], which never waits: a pooled statement that finds it claimed binds
/// its own connection instead. (Waiting would hang a caller that writes through the pool
/// while it reads a stream whose statement holds the claim, where plain sqlx does not.)
#[derive(Debug, Default)]
pub(crate) struct Writer {
    state: Mutex<WriterState>,
}

#[derive(Debug, Default)]
struct WriterState {
    /// A statement holds the writer ([`WriterGuard`]).
    claimed: bool,
    sink: Option<Sink>,
    /// Row changes attributed through the writer since the last bind.
    seen: u64,
    /// The claiming statement was dropped before SQLite finished it (a cancelled call):
    /// sqlx's worker still runs it, so the claim stays until the transaction it runs in ends
    /// ([`Writer::settle`]), and its late rows reach its own call, never the next writer's.
    dangling: bool,
    /// The connection (its slot's address) whose rows came through the dangling claim.
    owner: Option<usize>,
}

/// A pool's writer, claimed by one pooled statement; dropping it unbinds and frees the writer.
#[derive(Debug)]
pub(crate) struct WriterGuard {
    writer: Arc<Writer>,
}

impl WriterGuard {
    /// Row changes attributed through the writer since it was bound.
    pub(crate) fn seen(&self) -> u64 {
        self.writer.state().seen
    }

    /// The statement is dropped while SQLite may still run it: the claim outlives the guard
    /// until that statement's transaction ends (see `WriterState::dangling`).
    pub(crate) fn dangle(self) {
        self.writer.state().dangling = true;
    }
}

impl Drop for WriterGuard {
    fn drop(&mut self) {
        let mut s = self.writer.state();
        if s.dangling {
            return;
        }
        s.claimed = false;
        s.sink = None;
        s.seen = 0;
    }
}

impl Writer {
    fn state(&self) -> MutexGuard<'_, WriterState> {
        self.state.lock()
    }

    /// Claims the writer and binds it to `sink` (or to nobody, for an unscoped statement)
    /// until the guard drops; `None`, at once, when another statement holds it.
    pub(crate) fn try_claim(self: &Arc<Self>, sink: Option<Sink>) -> Option<WriterGuard> {
        let mut s = self.state();
        if s.claimed {
            return None;
        }
        s.claimed = true;
        s.sink = sink;
        s.seen = 0;
        drop(s);
        Some(WriterGuard {
            writer: self.clone(),
        })
    }

    /// The writer's sink for one row change on the connection whose slot is at `slot`,
    /// counting it.
    fn take_row(&self, slot: usize) -> Option<Sink> {
        let mut s = self.state();
        s.seen += 1;
        if s.dangling && s.owner.is_none() {
            s.owner = Some(slot);
        }
        s.sink.clone()
    }

    /// A transaction ended on an unbound connection (its slot at `slot`): when it is the one
    /// a dangling claim's statement ran in, the claim ends.
    fn settle(&self, slot: usize) {
        let mut s = self.state();
        if s.dangling && s.owner.is_none_or(|o| o == slot) {
            *s = WriterState::default();
        }
    }
}

/// Most row changes buffered per connection before further ones are only counted: a
/// transaction that changes more rows reports the first this many (memory bound,
/// [design: behaviour under trouble](../../../../docs/design.md#6-behaviour-under-trouble)).
pub(crate) const MAX_PENDING_ROWS: usize = 100_000;

/// The largest emptied row buffer a connection keeps for its next transaction (rows): a
/// bulk write's buffer is freed, not held by an idle connection.
const MAX_SPARE_ROWS: usize = 64;

impl Slot {
    fn lock(&self) -> MutexGuard<'_, SlotState> {
        self.state.lock()
    }

    /// Binds the connection: to a statement of a call or to nobody while held, or back to the
    /// pool's writer ([`Binding::Pool`]) when released. Resets the count of rows seen.
    pub(crate) fn bind(&self, binding: Binding) {
        let mut s = self.lock();
        s.binding = binding;
        s.seen = 0;
    }

    /// Row changes the update hook reported since the last [`Slot::bind`].
    pub(crate) fn seen(&self) -> u64 {
        self.lock().seen
    }

    fn on_update(&self, operation: &SqliteOperation, table: &str, row_id: i64) {
        let operation = match operation {
            SqliteOperation::Insert => RowOperation::Insert,
            SqliteOperation::Update => RowOperation::Update,
            SqliteOperation::Delete => RowOperation::Delete,
            SqliteOperation::Unknown(_) => return,
        };
        let mut s = self.lock();
        let sink = match &s.binding {
            Binding::Held(sink) => {
                let sink = sink.clone();
                s.seen += 1;
                sink
            }
            Binding::Pool => self.writer.take_row(self as *const Slot as usize),
            Binding::SetUp => return,
        };
        #[cfg(feature = "preupdate-hook")]
        let (image, nested) = s.image.take().unwrap_or((Image::Unknown, None));
        #[cfg(not(feature = "preupdate-hook"))]
        let (image, nested) = (Image::Unknown, None);
        if s.pending.len() >= MAX_PENDING_ROWS {
            drop(s);
            stats().audit_error(AuditStage::Hook, &"too many pending SQLite row changes");
            return;
        }
        s.pending.push(Pending {
            sink,
            table: if table.chars().any(char::is_uppercase) {
                table.to_lowercase().into()
            } else {
                table.into()
            },
            row_id,
            operation,
            image,
            nested,
        });
    }

    #[cfg(feature = "preupdate-hook")]
    fn on_preupdate(&self, image: Image, nested: bool) {
        // The update hook for this very row follows at once.
        self.lock().image = Some((image, Some(nested)));
    }

    /// Records buffered changes as committed (`true`) or rolled back.
    fn flush(&self, committed: bool) {
        let (mut pending, unbound) = {
            let mut s = self.lock();
            let spare = std::mem::take(&mut s.spare);
            (
                std::mem::replace(&mut s.pending, spare),
                matches!(s.binding, Binding::Pool),
            )
        };
        if !pending.is_empty() {
            record(&self.columns, pending.drain(..), committed);
            if pending.capacity() <= MAX_SPARE_ROWS {
                self.lock().spare = pending;
            }
        }
        if unbound {
            self.writer.settle(self as *const Slot as usize);
        }
    }

    /// A statement failed: its buffered changes were undone by SQLite's statement rollback.
    /// They are recorded as rolled back now.
    pub(crate) fn abort_statement(&self, sink: &Sink) {
        let mut s = self.lock();
        if s.pending.is_empty() {
            return;
        }
        let (mine, rest): (Vec<Pending>, Vec<Pending>) = std::mem::take(&mut s.pending)
            .into_iter()
            .partition(|p| p.sink.as_ref().is_some_and(|x| same(x, sink)));
        s.pending = rest;
        drop(s);
        record(&self.columns, mine.into_iter(), false);
    }
}

/// Hands row changes to the calls they were bound to, each run of one call's changes under
/// one lock of its effects; counts the unbound ones.
fn record(columns: &Columns, pending: impl Iterator<Item = Pending>, committed: bool) {
    let mut unbound = 0u64;
    let mut pending = pending.peekable();
    while let Some(first) = pending.next() {
        let Some(effects) = first.sink.as_ref().map(|s| s.effects.clone()) else {
            unbound += 1;
            continue;
        };
        let same_call = |p: &Pending| {
            p.sink
                .as_ref()
                .is_some_and(|s| Arc::ptr_eq(&s.effects, &effects))
        };
        let run = std::iter::once(first).chain(std::iter::from_fn(|| pending.next_if(same_call)));
        effects.record_row_changes(run.map(|p| {
            let image = columns.resolve(&p.table, p.image);
            RowChange {
                table: p.table.into(),
                operation: p.operation,
                statement: p.sink.and_then(|s| s.index),
                committed,
                image,
                nested: p.nested,
                row_id: Some(p.row_id),
            }
        }));
    }
    if unbound > 0 {
        stats().unattributed_rows(unbound);
    }
}

/// The slots of one pool's connections, keyed by the address of the `sqlite3` handle. The
/// hooks own their slot; the registry holds it weakly, so a closed connection's entry dies
/// with its hooks and an address SQLite reuses is hooked afresh.
#[derive(Debug, Default)]
pub struct Registry {
    slots: Mutex<HashMap<usize, Weak<Slot>>>,
    pub(crate) columns: Arc<Columns>,
    pub(crate) writer: Arc<Writer>,
    /// Every connection of the pool gets its hooks when it connects (the pool was opened by
    /// hintaudit), so pooled statements bind the [`Writer`] instead of their connection.
    at_connect: AtomicBool,
}

impl Registry {
    /// Whether hooks are installed at connect time (see [`Registry::install_at_connect`]).
    pub(crate) fn at_connect(&self) -> bool {
        self.at_connect.load(Ordering::Relaxed)
    }

    /// From now on every connection of the pool is hooked when it connects.
    pub(crate) fn install_at_connect(&self) {
        self.at_connect.store(true, Ordering::Relaxed);
    }

    /// A failed statement's buffered row changes, on whichever connection ran it, are
    /// recorded as rolled back (see [`Slot::abort_statement`]).
    pub(crate) fn abort_statement(&self, sink: &Sink) {
        let slots: Vec<Arc<Slot>> = self
            .slots
            .lock()
            .values()
            .filter_map(Weak::upgrade)
            .collect();
        for slot in slots {
            slot.abort_statement(sink);
        }
    }

    /// The slot of the connection behind `handle`, installing the hooks the first time.
    pub(crate) fn slot(&self, handle: &mut LockedSqliteHandle<'_>) -> Arc<Slot> {
        let key = handle.as_raw_handle().as_ptr() as usize;
        let mut slots = self.slots.lock();
        if let Some(slot) = slots.get(&key).and_then(Weak::upgrade) {
            return slot;
        }
        let slot = Arc::new(Slot {
            state: Mutex::default(),
            columns: self.columns.clone(),
            writer: self.writer.clone(),
        });
        install(handle, &slot);
        slots.retain(|_, w| w.strong_count() > 0);
        slots.insert(key, Arc::downgrade(&slot));
        slot
    }
}

/// Installs the update, commit and rollback hooks (and the preupdate hook with the
/// `preupdate-hook` feature). Any hooks set before on this connection are replaced.
fn install(handle: &mut LockedSqliteHandle<'_>, slot: &Arc<Slot>) {
    let s = slot.clone();
    // Rows of the `temp` schema are the session's own objects (temporary tables), no
    // effect on the environment: not buffered.
    handle.set_update_hook(move |r| {
        if r.database != "temp" {
            s.on_update(&r.operation, r.table, r.rowid);
        }
    });
    let s = slot.clone();
    handle.set_commit_hook(move || {
        s.flush(true);
        true // never veto the commit
    });
    let s = slot.clone();
    handle.set_rollback_hook(move || s.flush(false));
    #[cfg(feature = "preupdate-hook")]
    {
        let s = slot.clone();
        handle.set_preupdate_hook(move |r| {
            if r.database == "temp" {
                return;
            }
            let (image, nested) = super::images::image(&r);
            s.on_preupdate(image, nested);
        });
    }
}

/// Whether `a` and `b` are the same statement of the same call.
fn same(a: &Sink, b: &Sink) -> bool {
    Arc::ptr_eq(&a.effects, &b.effects) && a.index == b.index
}
