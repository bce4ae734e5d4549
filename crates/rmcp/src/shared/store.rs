//! The Redis or Valkey side of the shared history: the keys, the scripts (call.lua,
//! hints.lua, corrections.lua) and their answers. One script call per finished call or tools/list answer:
//! one round trip (two the first time a server sees the script: `EVALSHA`, then `EVAL`).
//!
//! Keys, all under one hash tag so that a cluster keeps them on one slot:
//!
//! | key | type | holds |
//! |---|---|---|
//! | `{hintaudit}:epoch` | string | a counter ordering the fleet's call ends |
//! | `{hintaudit}:calls` | sorted set | entry id → end of the call (ms, the server's clock) |
//! | `{hintaudit}:entries` | hash | entry id → `epoch\|end ms\|replica\|summary` |
//! | `{hintaudit}:tables` | hash | table → epoch of its last write |
//! | `{hintaudit}:hints` | hash | tool → hint sets served, oldest first |
//! | `{hintaudit}:corrections` | hash | tool → corrected hints served and until when (`correct_hints`) |
//!
//! An entry id is the tool name and the arguments' keyed hash (32 hex digits): arguments
//! are never stored. Entries are bounded by `history_size` and `history_ttl_seconds`, tables
//! by [`MAX_TRACKED_TABLES`], tools by [`MAX_TRACKED_TOOLS`]; every key expires after the TTL
//! once the fleet stops calling.

use std::fmt::Write as _;
use std::time::Duration;

use hintaudit_core::{
    DeclaredHints, MAX_TRACKED_TABLES, MAX_TRACKED_TOOLS, Previous, Repeat, SharedAnswer,
    SharedCall, SharedHistorySettings,
};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{RedisResult, Script};
use tokio::sync::OnceCell;

/// The default key prefix: a hash tag, so a Redis Cluster keeps every key on one slot.
pub(crate) const DEFAULT_PREFIX: &str = "{hintaudit}";

/// How long a connection attempt or a command may take before it counts as failed.
const NETWORK_TIMEOUT: Duration = Duration::from_millis(1000);

pub(crate) struct Store {
    client: redis::Client,
    conn: OnceCell<ConnectionManager>,
    keys: Keys,
    replica: String,
    ttl_ms: u64,
    entries: u64,
    call: Script,
    hints: Script,
    corrections: Script,
}

struct Keys {
    epoch: String,
    calls: String,
    entries: String,
    tables: String,
    hints: String,
    corrections: String,
}

impl Keys {
    fn new(prefix: &str) -> Self {
        Keys {
            epoch: format!("{prefix}:epoch"),
            calls: format!("{prefix}:calls"),
            entries: format!("{prefix}:entries"),
            tables: format!("{prefix}:tables"),
            hints: format!("{prefix}:hints"),
            corrections: format!("{prefix}:corrections"),
        }
    }
}

impl Store {
    /// A store on `settings.url` (not connected yet: the first call connects).
    pub(crate) fn open(
        settings: &SharedHistorySettings,
        prefix: &str,
        replica: &str,
    ) -> RedisResult<Self> {
        Ok(Store {
            client: redis::Client::open(settings.url.as_str())?,
            conn: OnceCell::new(),
            keys: Keys::new(prefix),
            // `|` separates an entry's fields.
            replica: replica.replace('|', "_"),
            ttl_ms: u64::try_from(settings.ttl.as_millis()).unwrap_or(u64::MAX),
            entries: settings.entries.get() as u64,
            call: Script::new(include_str!("call.lua")),
            hints: Script::new(include_str!("hints.lua")),
            corrections: Script::new(include_str!("corrections.lua")),
        })
    }

    /// The connection, shared by every request (redis' multiplexed `ConnectionManager`, which
    /// pipelines concurrent requests on one socket and reconnects after a failure).
    async fn conn(&self) -> RedisResult<ConnectionManager> {
        self.conn
            .get_or_try_init(|| async {
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(NETWORK_TIMEOUT))
                    .set_response_timeout(Some(NETWORK_TIMEOUT))
                    // A reconnection needs at least one attempt (0 never reconnects); the
                    // caller pauses its requests after a failure (RETRY_AFTER).
                    .set_number_of_retries(1);
                ConnectionManager::new_lazy_with_config(self.client.clone(), config)
            })
            .await
            .cloned()
    }

    /// Records a finished call, answering what the fleet knew of the previous identical call.
    pub(crate) async fn record_call(&self, call: &SharedCall) -> RedisResult<SharedAnswer> {
        let mut id = String::with_capacity(call.tool.len() + 33);
        id.push_str(&call.tool);
        id.push(':');
        for b in call.key.as_bytes() {
            let _ = write!(id, "{b:02x}");
        }
        let mut invocation = self.call.prepare_invoke();
        let k = &self.keys;
        invocation
            .key(&k.epoch)
            .key(&k.calls)
            .key(&k.entries)
            .key(&k.tables)
            .arg(&id)
            .arg(&self.replica)
            .arg(&call.summary)
            .arg(self.ttl_ms)
            .arg(self.entries)
            .arg(MAX_TRACKED_TABLES)
            .arg(call.touched.len());
        for table in call.touched.iter().chain(&call.written) {
            invocation.arg(table);
        }
        let mut conn = self.conn().await?;
        let (seen, disturbed, age_ms, replica, summary): (u8, u8, u64, String, String) =
            invocation.invoke_async(&mut conn).await?;
        Ok(SharedAnswer {
            repeat: match (seen, disturbed) {
                (0, _) => Repeat::First,
                (_, 0) => Repeat::Clean,
                _ => Repeat::Disturbed,
            },
            previous: (seen != 0).then(|| Previous {
                replica,
                age: Duration::from_millis(age_ms),
                summary,
            }),
        })
    }

    /// Records the hints a tools/list answer served: per tool, the hints the fleet served
    /// before when these are new for it, else `None`.
    pub(crate) async fn record_hints(
        &self,
        tools: &[(String, DeclaredHints)],
    ) -> RedisResult<Vec<Option<DeclaredHints>>> {
        let mut invocation = self.hints.prepare_invoke();
        invocation
            .key(&self.keys.hints)
            .arg(MAX_TRACKED_TOOLS)
            .arg(self.ttl_ms);
        for (tool, hints) in tools {
            invocation.arg(tool).arg(encode(hints));
        }
        let mut conn = self.conn().await?;
        let from: Vec<String> = invocation.invoke_async(&mut conn).await?;
        Ok(from.iter().map(|f| decode(f)).collect())
    }

    /// Puts a tool's correction (4 letters, see corrections.lua) in force for `lasts` (the
    /// history's TTL when `None`), merged with the fleet's; the letters in force after it
    /// (empty when the fleet has too many tools corrected).
    pub(crate) async fn put_correction(
        &self,
        tool: &str,
        letters: &str,
        lasts: Option<Duration>,
    ) -> RedisResult<String> {
        let lasts_ms = lasts.map_or(self.ttl_ms, |d| {
            u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
        });
        let mut invocation = self.corrections.prepare_invoke();
        invocation
            .key(&self.keys.corrections)
            .arg("put")
            .arg(self.ttl_ms)
            .arg(tool)
            .arg(letters)
            .arg(lasts_ms)
            .arg(crate::correct::MAX_CORRECTED_TOOLS);
        invocation.invoke_async(&mut self.conn().await?).await
    }

    /// Every correction in force in the fleet: (tool, 4 letters).
    pub(crate) async fn corrections(&self) -> RedisResult<Vec<(String, String)>> {
        let mut invocation = self.corrections.prepare_invoke();
        invocation
            .key(&self.keys.corrections)
            .arg("all")
            .arg(self.ttl_ms);
        let flat: Vec<String> = invocation.invoke_async(&mut self.conn().await?).await?;
        Ok(flat
            .chunks_exact(2)
            .map(|p| (p[0].clone(), p[1].clone()))
            .collect())
    }

    /// Lifts a tool's correction fleet-wide; whether one was in force.
    pub(crate) async fn lift_correction(&self, tool: &str) -> RedisResult<bool> {
        let mut invocation = self.corrections.prepare_invoke();
        invocation
            .key(&self.keys.corrections)
            .arg("lift")
            .arg(self.ttl_ms)
            .arg(tool);
        let removed: u8 = invocation.invoke_async(&mut self.conn().await?).await?;
        Ok(removed != 0)
    }
}

/// A hint set as 4 letters, one per hint in MCP's order: `t` true, `f` false, `u` unset.
fn encode(hints: &DeclaredHints) -> String {
    [
        hints.read_only,
        hints.destructive,
        hints.idempotent,
        hints.open_world,
    ]
    .iter()
    .map(|h| match h {
        Some(true) => 't',
        Some(false) => 'f',
        None => 'u',
    })
    .collect()
}

/// [`encode`]'s inverse; `None` for anything else (no change reported).
fn decode(text: &str) -> Option<DeclaredHints> {
    let mut values = [None; 4];
    if text.len() != 4 {
        return None;
    }
    for (value, c) in values.iter_mut().zip(text.chars()) {
        *value = match c {
            't' => Some(true),
            'f' => Some(false),
            'u' => None,
            _ => return None,
        };
    }
    let [read_only, destructive, idempotent, open_world] = values;
    Some(DeclaredHints::new(
        read_only,
        destructive,
        idempotent,
        open_world,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hint_sets_round_trip_through_four_letters() {
        let hints = DeclaredHints::new(Some(true), None, Some(false), Some(true));
        assert_eq!(encode(&hints), "tufT".to_lowercase());
        assert_eq!(decode(&encode(&hints)), Some(hints));
        assert_eq!(decode(""), None);
        assert_eq!(decode("tuxf"), None);
    }
}
