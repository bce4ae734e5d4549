//! Every key of `hintaudit.toml`, with its default and meaning: the README's table is
//! checked against [`SETTINGS`].

/// Every setting as `(key, default as TOML, meaning)`: the README's table is checked against
/// it, and a file made of these lines parses to [`Config::default`].
pub const SETTINGS: &[(&str, &str, &str)] = &[
    (
        "mode",
        "\"observe\"",
        "`observe` judges and reports; `enforce` also makes the database and the HTTP middleware refuse what the declared hints rule out (see *Enforce mode*)",
    ),
    (
        "ignored_tables",
        "[]",
        "bookkeeping tables: changes to them are no effect",
    ),
    (
        "ignored_columns",
        "[]",
        "bookkeeping columns, `column` or `table.column`",
    ),
    (
        "watch",
        "[]",
        "`hintaudit verify` and `hintaudit proxy`: directories whose files are the server's state, snapshotted around every call (verify) or watched live through inotify (proxy), as `--watch` does (relative to the current directory)",
    ),
    (
        "ignored_paths",
        "[]",
        "bookkeeping paths under a watched directory, as globs relative to it (`cache/**`, `**/*.log`; a path under a matching directory is ignored too): changes to them are no effect",
    ),
    (
        "closed_world.hosts",
        "[]",
        "hosts, `.suffixes` and CIDR blocks (optionally `:port`) added to the closed world, besides loopback",
    ),
    (
        "closed_world.outside",
        "[]",
        "entries outside the closed world even when loopback or listed (a local stand-in for an outside service)",
    ),
    (
        "open_world_alert",
        "\"interaction\"",
        "which reading of `openWorldHint: false` alerts: `interaction` (the spec's) or `state_change` (the directory reading)",
    ),
    (
        "read_only_requests",
        "[]",
        "requests that read though their method says otherwise, as `METHOD HOST/PATH` (`POST api.example.com/v1/search`; `*` for any method or one path segment, a final `**` for the rest, `*.suffix` for a host's subdomains), matched against the egress proxy's path templates, in addition to the built-in ones of well-known APIs (docs/design.md, *Judging requests*)",
    ),
    (
        "advice_after_calls",
        "20",
        "calls without contrary evidence before advice",
    ),
    (
        "history_size",
        "10000",
        "(tool, arguments) entries the idempotency history keeps",
    ),
    (
        "history_url",
        "\"\"",
        "a Redis or Valkey server the replicas share the idempotency history on (`redis://host:6379/0`, `rediss://` for TLS; needs `HINTAUDIT_HISTORY_KEY`); empty: each process keeps its own",
    ),
    (
        "history_ttl_seconds",
        "86400",
        "how long the shared history remembers a call",
    ),
    (
        "correct_hints",
        "false",
        "serve corrected annotations: once a tool has a finding at warning or above, every tools/list carries its hints tightened to what the evidence shows, and open sessions get `notifications/tools/list_changed` (see *Corrected annotations* in docs/design.md)",
    ),
    (
        "correct_hints_seconds",
        "0",
        "how long a correction is served, seconds; 0: until the process restarts (or the server's own hints are at least as cautious)",
    ),
    (
        "disclose_effects",
        "false",
        "each tools/call result carries what was observed of the call (tables with rows inserted, updated, deleted; files; outbound hosts; its findings) in `_meta[\"io.hintaudit/effects\"]`; no row data, no argument values (see *Observed effects disclosed* in docs/design.md)",
    ),
    (
        "labels.max_tools",
        "1000",
        "distinct `tool` label values; later tools count as `__unknown__`",
    ),
    (
        "labels.max_tables",
        "200",
        "distinct `table` label values; later tables count as `__other__`",
    ),
    (
        "tools.<name>.mode",
        "\"observe\"",
        "per-tool override of `mode`",
    ),
];
