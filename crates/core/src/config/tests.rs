//! Config tests: defaults, every error with its key and position, and the README's table.

use super::*;
use crate::closed_world::{ClosedWorld, OpenWorldReading};
use std::num::NonZeroUsize;

/// A file made of every setting at its documented default parses to the defaults.
#[test]
fn documented_defaults_are_the_defaults() {
    let text: String = SETTINGS
        .iter()
        .map(|(k, v, _)| format!("{} = {v}\n", k.replace("<name>", "some_tool")))
        .collect();
    let c = Config::parse(&text, "defaults.toml").unwrap();
    assert_eq!(
        c,
        Config::default().with_tool_mode("some_tool", Mode::Observe)
    );
}

/// One row per bad file: the key, line and column named, and a word of the message.
#[test]
fn errors_name_the_key_and_position() {
    for (text, key, line, column, word) in [
        ("moed = \"observe\"\n", "moed", 1, 1, "unknown field"),
        ("mode = \"strict\"\n", "mode", 1, 8, "unknown variant"),
        ("history_size = 0\n", "history_size", 1, 16, "zero"),
        (
            "history_url = \"http://cache:6379\"\n",
            "history_url",
            1,
            15,
            "not a Redis or Valkey URL",
        ),
        (
            "history_ttl_seconds = 0\n",
            "history_ttl_seconds",
            1,
            23,
            "zero",
        ),
        (
            "advice_after_calls = \"x\"\n",
            "advice_after_calls",
            1,
            22,
            "invalid type",
        ),
        (
            "[closed_world]\nhosts = [\n  \"ok.internal\",\n  \"10.0.0.0/99\",\n]\n",
            "closed_world.hosts",
            4,
            3,
            "CIDR",
        ),
        (
            "[closed_world]\noutside = [\"a b\"]\n",
            "closed_world.outside",
            2,
            12,
            "host name",
        ),
        (
            "[closed_world]\nhost = []\n",
            "closed_world.host",
            2,
            1,
            "unknown field",
        ),
        (
            "[labels]\nmax_tools = -1\n",
            "labels.max_tools",
            2,
            13,
            "invalid value",
        ),
        (
            "[tools.get_slot]\nreadonly = true\n",
            "tools.get_slot.readonly",
            2,
            1,
            "unknown field",
        ),
        (
            "open_world_alert = \"writes\"\n",
            "open_world_alert",
            1,
            20,
            "unknown variant",
        ),
        (
            "read_only_requests = [\n  \"POST api.example.com/v1/search\",\n  \"api.example.com/x\",\n]\n",
            "read_only_requests",
            3,
            3,
            "METHOD HOST/PATH",
        ),
        (
            "ignored_tables = [\n",
            "ignored_tables",
            1,
            19,
            "unclosed array",
        ),
    ] {
        let e = Config::parse(text, "h.toml").unwrap_err();
        assert_eq!(
            (e.key.as_str(), e.line, e.column),
            (key, line, column),
            "{text}: {e}"
        );
        assert!(e.message.contains(word), "{text}: {e}");
        assert!(
            e.to_string()
                .starts_with(&format!("h.toml:{line}:{column}: {key}: ")),
            "{e}"
        );
    }
}

#[test]
fn a_file_sets_every_setting() {
    let c = Config::parse(
        r#"
        mode = "observe"
        ignored_tables = ["audit_log"]
        ignored_columns = ["updated_at", "appointments.last_viewed_at"]
        open_world_alert = "state_change"
        advice_after_calls = 5
        history_size = 100
        [closed_world]
        hosts = ["db.internal:5432", ".corp", "10.0.0.0/8"]
        outside = ["127.0.0.1:9"]
        [labels]
        max_tools = 50
        max_tables = 10
        [tools.notify_patient]
        mode = "observe"
        "#,
        "h.toml",
    )
    .unwrap();
    let want = Config::default()
        .with_ignored_table("audit_log")
        .with_ignored_column("updated_at")
        .with_ignored_column("appointments.last_viewed_at")
        .with_open_world_alert(OpenWorldReading::StateChange)
        .with_advice_after_calls(5)
        .with_history_size(NonZeroUsize::new(100).unwrap())
        .with_closed_world(
            ClosedWorld::default()
                .with_entry("db.internal:5432")
                .and_then(|w| w.with_entry(".corp"))
                .and_then(|w| w.with_entry("10.0.0.0/8"))
                .and_then(|w| w.with_outside("127.0.0.1:9"))
                .unwrap(),
        )
        .with_label_caps(50, 10)
        .with_tool_mode("notify_patient", Mode::Observe);
    assert_eq!(c, want);
    let p = c.policy();
    assert!(p.is_ignored_column("appointments", "last_viewed_at"));
    assert_eq!(p.open_world_reading(), OpenWorldReading::StateChange);
    assert_eq!(p.advice_after_calls(), 5);
    assert!(!p.closed_world().contains("127.0.0.1", Some(9)));
    assert_eq!(c.label_caps(), (50, 10));
    let listed = ["get_slot"];
    assert_eq!(
        c.unknown_tools(&listed).collect::<Vec<_>>(),
        ["notify_patient"]
    );
    assert!(
        Config::default()
            .with_mode(Mode::Enforce)
            .validate()
            .is_ok()
    );
    assert!(c.validate().is_ok());
    assert!(!c.enforces_any());
}

#[test]
fn load_reads_the_file_or_names_it() {
    let dir = std::env::temp_dir().join(format!("hintaudit-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("hintaudit.toml");
    std::fs::write(&path, "ignored_tables = [\"audit_log\"]\nbogus = 1\n").unwrap();
    let e = Config::load(&path).unwrap_err();
    assert_eq!((e.key.as_str(), e.line), ("bogus", 2));
    assert_eq!(e.source_name, path.display().to_string());
    let missing = Config::load(&dir.join("absent.toml")).unwrap_err();
    assert!(missing.message.starts_with("cannot read"), "{missing}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `mode = "enforce"` is taken per server and per tool; a tool override wins.
#[test]
fn enforce_mode_per_server_and_per_tool() {
    let c = Config::parse(
        "mode = \"enforce\"\n[tools.get_slot]\nmode = \"observe\"\n",
        "h.toml",
    )
    .unwrap();
    assert_eq!(c.mode_for("get_slot"), Mode::Observe);
    assert_eq!(c.mode_for("cancel_slot"), Mode::Enforce);
    let c = Config::parse("[tools.cancel_slot]\nmode = \"enforce\"\n", "h.toml").unwrap();
    assert_eq!(c.mode_for("cancel_slot"), Mode::Enforce);
    assert_eq!(c.mode_for("get_slot"), Mode::Observe);
    assert!(c.enforces_any());
}

/// `read_only_requests` adds to the built-in read-only requests, which the policy carries.
#[test]
fn read_only_requests_add_to_the_builtin_ones() {
    let c = Config::parse(
        "read_only_requests = [\"POST api.example.com/v2/*/lookup\"]\n",
        "h.toml",
    )
    .unwrap();
    let reads = c.policy().read_only_requests().clone();
    assert!(
        reads
            .find("POST", "api.example.com", "/v2/{id}/lookup")
            .is_some()
    );
    assert!(reads.find("POST", "api.notion.com", "/v1/search").is_some());
    assert_eq!(
        reads.patterns().len(),
        crate::BUILTIN_READ_ONLY_REQUESTS.len() + 1
    );
}

/// The README's settings table lists exactly [`SETTINGS`], keys and defaults, in order.
#[test]
fn readme_table_matches_the_code() {
    let readme = include_str!("../../../../README.md");
    let start = readme
        .find("<!-- config-table -->")
        .expect("the README's config table");
    let end = readme.find("<!-- /config-table -->").expect("its end");
    let rows: Vec<(String, String)> = readme[start..end]
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<&str> = l.split(" | ").collect();
            let strip = |s: &str| s.trim_matches(['|', ' ', '`']).to_owned();
            (strip(cells[0]), strip(cells[1]))
        })
        .collect();
    let want: Vec<(String, String)> = SETTINGS
        .iter()
        .map(|(k, v, _)| (k.to_string(), v.to_string()))
        .collect();
    assert_eq!(rows, want);
}

/// A shared history needs a URL of its schemes and the secret the replicas share; its
/// settings come out as given, the secret never printed.
#[test]
fn the_shared_history_needs_its_secret() {
    let text = "history_url = \"redis://127.0.0.1:6379/2\"\nhistory_ttl_seconds = 60\n";
    let c = Config::parse(text, "h.toml").unwrap();
    let short = c.clone().with_history_secret("too short");
    let err = short.shared_history().unwrap_err();
    assert_eq!(err.key, "history_url");
    assert!(err.message.contains(HISTORY_KEY_ENV), "{err}");
    assert!(short.validate().is_err());
    let secret = "0123456789abcdef0123456789abcdef";
    let s = c
        .with_history_secret(secret)
        .shared_history()
        .unwrap()
        .unwrap();
    assert_eq!(s.url, "redis://127.0.0.1:6379/2");
    assert_eq!(s.ttl, std::time::Duration::from_secs(60));
    assert_eq!(s.secret.expose(), secret);
    assert!(!format!("{s:?}").contains(secret));
    // No URL, no shared history; a bad URL given in code is refused too.
    assert_eq!(Config::default().shared_history(), Ok(None));
    let bad = Config::default()
        .with_history_url("memcached://x")
        .with_history_secret(secret);
    assert!(
        bad.shared_history()
            .unwrap_err()
            .message
            .contains("memcached://x")
    );
}

#[test]
fn watched_directories_and_ignored_paths() {
    let text = "watch = [\"notes\", \"/srv/files\"]\nignored_paths = [\"cache/**\"]\n";
    let c = Config::parse(text, "h.toml").unwrap();
    let want: Vec<std::path::PathBuf> = vec!["notes".into(), "/srv/files".into()];
    assert_eq!(c.watch(), want.as_slice());
    assert_eq!(c.ignored_paths(), ["cache/**".to_owned()].as_slice());
    let err = Config::parse("watch = \"notes\"\n", "h.toml").unwrap_err();
    assert_eq!((err.key.as_str(), err.line), ("watch", 1));
    assert_eq!(
        Config::default().with_watch("d").watch(),
        [std::path::PathBuf::from("d")].as_slice()
    );
}
