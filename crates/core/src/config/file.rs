//! The shape of `hintaudit.toml` (serde, unknown keys refused) and the checks serde cannot
//! make, each error placed at its key's line and column.

use std::collections::BTreeMap;
use std::num::{NonZeroU64, NonZeroUsize};
use std::ops::Range;

use serde::Deserialize;
use toml::Spanned;

use super::{Config, ConfigError, Mode, check_history_url};
use crate::closed_world::{ClosedWorld, OpenWorldReading};
use crate::outbound::ReadOnlyRequests;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    mode: Option<Spanned<ModeValue>>,
    #[serde(default)]
    ignored_tables: Vec<String>,
    #[serde(default)]
    ignored_columns: Vec<String>,
    #[serde(default)]
    watch: Vec<std::path::PathBuf>,
    #[serde(default)]
    ignored_paths: Vec<String>,
    #[serde(default)]
    closed_world: ClosedWorldFile,
    open_world_alert: Option<ReadingValue>,
    #[serde(default)]
    read_only_requests: Vec<Spanned<String>>,
    advice_after_calls: Option<u64>,
    history_size: Option<NonZeroUsize>,
    history_url: Option<Spanned<String>>,
    history_ttl_seconds: Option<NonZeroU64>,
    correct_hints: Option<bool>,
    correct_hints_seconds: Option<u64>,
    disclose_effects: Option<bool>,
    #[serde(default)]
    labels: LabelsFile,
    #[serde(default)]
    tools: BTreeMap<String, ToolFile>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ClosedWorldFile {
    #[serde(default)]
    hosts: Vec<Spanned<String>>,
    #[serde(default)]
    outside: Vec<Spanned<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct LabelsFile {
    max_tools: Option<usize>,
    max_tables: Option<usize>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolFile {
    mode: Option<Spanned<ModeValue>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum ModeValue {
    Observe,
    Enforce,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ReadingValue {
    Interaction,
    StateChange,
}

/// 1-based line and column of byte `offset` in `text`.
fn position(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// The dotted key whose statement holds byte `offset`: the last `[table]` header before it,
/// and the key of the last `key = …` line at or before it (a multi-line array's lines
/// belong to the key above them).
fn key_at(text: &str, offset: usize) -> String {
    let before = &text[..offset.min(text.len())];
    let mut table = String::new();
    let mut key = String::new();
    // The line holding `offset` counts whole: the key of `key = bad` starts before it.
    let end = text[before.len()..]
        .find('\n')
        .map_or(text.len(), |i| before.len() + i);
    for line in text[..end].lines() {
        let t = line.trim();
        if let Some(h) = t.strip_prefix('[').and_then(|h| h.split(']').next()) {
            table = h.trim_matches('[').trim().to_owned();
            key.clear();
        } else if let Some((k, _)) = t.split_once('=')
            && !t.starts_with('#')
            && !t.starts_with('"')
        {
            key = k.trim().to_owned();
        }
    }
    match (table.is_empty(), key.is_empty()) {
        (true, _) => key,
        (false, true) => table,
        (false, false) => format!("{table}.{key}"),
    }
}

fn error(
    text: &str,
    source: &str,
    key: String,
    span: Option<Range<usize>>,
    message: String,
) -> ConfigError {
    let (line, column) = span.map_or((0, 0), |s| position(text, s.start));
    ConfigError {
        source_name: source.to_owned(),
        key,
        line,
        column,
        message,
    }
}

/// Adds each entry to `world` with `add`; the first bad entry is an error at its position.
fn entries(
    text: &str,
    source: &str,
    key: &str,
    world: ClosedWorld,
    list: &[Spanned<String>],
    add: fn(ClosedWorld, &str) -> Result<ClosedWorld, crate::ClosedWorldError>,
) -> Result<ClosedWorld, ConfigError> {
    list.iter().try_fold(world, |w, e| {
        add(w, e.get_ref()).map_err(|err| {
            error(
                text,
                source,
                key.to_owned(),
                Some(e.span()),
                err.to_string(),
            )
        })
    })
}

/// The built-in read-only requests with each of `list` added; the first bad pattern is an
/// error at its position.
fn read_only_requests(
    text: &str,
    source: &str,
    list: &[Spanned<String>],
) -> Result<ReadOnlyRequests, ConfigError> {
    list.iter()
        .try_fold(ReadOnlyRequests::default(), |reads, p| {
            reads.with_pattern(p.get_ref()).map_err(|err| {
                let key = "read_only_requests".to_owned();
                error(text, source, key, Some(p.span()), err.to_string())
            })
        })
}

fn mode(v: &Spanned<ModeValue>) -> Mode {
    match v.get_ref() {
        ModeValue::Observe => Mode::Observe,
        ModeValue::Enforce => Mode::Enforce,
    }
}

/// Parses and checks `text`.
pub(super) fn parse(text: &str, source: &str) -> Result<Config, ConfigError> {
    let f: File = toml::from_str(text).map_err(|e| {
        let key = e.span().map_or_else(String::new, |s| key_at(text, s.start));
        error(text, source, key, e.span(), e.message().trim().to_owned())
    })?;
    let d = Config::default();
    let world = entries(
        text,
        source,
        "closed_world.hosts",
        ClosedWorld::default(),
        &f.closed_world.hosts,
        ClosedWorld::with_entry,
    )?;
    let world = entries(
        text,
        source,
        "closed_world.outside",
        world,
        &f.closed_world.outside,
        ClosedWorld::with_outside,
    )?;
    let read_only_requests = read_only_requests(text, source, &f.read_only_requests)?;
    let history_url = match &f.history_url {
        Some(url) if !url.get_ref().is_empty() => {
            check_history_url(url.get_ref()).map_err(|message| {
                error(
                    text,
                    source,
                    "history_url".to_owned(),
                    Some(url.span()),
                    message,
                )
            })?;
            Some(url.get_ref().clone())
        }
        _ => None,
    };
    let mut tools = BTreeMap::new();
    for (name, t) in &f.tools {
        if let Some(m) = &t.mode {
            tools.insert(name.clone(), mode(m));
        }
    }
    Ok(Config {
        mode: match &f.mode {
            Some(m) => mode(m),
            None => d.mode,
        },
        ignored_tables: f.ignored_tables,
        ignored_columns: f.ignored_columns,
        watch: f.watch,
        ignored_paths: f.ignored_paths,
        closed_world: world,
        open_world_alert: match f.open_world_alert {
            Some(ReadingValue::Interaction) | None => OpenWorldReading::Interaction,
            Some(ReadingValue::StateChange) => OpenWorldReading::StateChange,
        },
        read_only_requests,
        advice_after_calls: f.advice_after_calls.unwrap_or(d.advice_after_calls).max(1),
        history_size: f.history_size.unwrap_or(d.history_size),
        history_url,
        history_ttl: f
            .history_ttl_seconds
            .map_or(d.history_ttl, |s| std::time::Duration::from_secs(s.get())),
        history_secret: None,
        correct_hints: f.correct_hints.unwrap_or(d.correct_hints),
        correct_hints_for: f
            .correct_hints_seconds
            .filter(|s| *s > 0)
            .map(std::time::Duration::from_secs),
        disclose_effects: f.disclose_effects.unwrap_or(d.disclose_effects),
        label_max_tools: f.labels.max_tools.unwrap_or(d.label_max_tools),
        label_max_tables: f.labels.max_tables.unwrap_or(d.label_max_tables),
        tools,
    })
}
