//! The contract (docs/design.md) and the code say the same: its list of built-in read-only
//! requests is `BUILTIN_READ_ONLY_REQUESTS`, row for row, with the same sources.

use std::path::Path;

use hintaudit_core::BUILTIN_READ_ONLY_REQUESTS;

#[test]
fn the_builtin_read_only_requests_are_listed_with_their_sources() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/design.md");
    let design =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let start = design
        .find("<!-- read-only-requests -->")
        .expect("the list's start");
    let end = design
        .find("<!-- /read-only-requests -->")
        .expect("the list's end");
    let rows: Vec<(String, String)> = design[start..end]
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
            (cells[0].trim_matches('`').to_owned(), cells[1].to_owned())
        })
        .collect();
    let want: Vec<(String, String)> = BUILTIN_READ_ONLY_REQUESTS
        .iter()
        .map(|(p, s)| (p.to_string(), s.to_string()))
        .collect();
    assert_eq!(rows, want);
}
