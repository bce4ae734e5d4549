//! The correction's decisions: what is served over a listing, when it lifts, how two merge.

use super::*;

const RO: DeclaredHints = DeclaredHints::new(Some(true), Some(false), Some(true), Some(false));

fn caught_writing() -> Correction {
    Correction {
        tightened: vec![
            (Hint::ReadOnly, Some(false)),
            (Hint::Destructive, Some(true)),
        ],
    }
}

#[test]
fn served_tightens_over_the_listing_and_lifts_when_the_listing_is_as_cautious() {
    // (listed, served): `None` is lifted.
    let rows = [
        (
            RO,
            Some(DeclaredHints::new(
                Some(false),
                Some(true),
                Some(true),
                Some(false),
            )),
        ),
        // Unset destructiveHint is served as the evidenced true.
        (
            DeclaredHints::new(Some(true), None, None, None),
            Some(DeclaredHints::new(Some(false), Some(true), None, None)),
        ),
        // The server now says it writes, but still not destructive: destructive stays.
        (
            DeclaredHints::new(Some(false), Some(false), None, Some(false)),
            Some(DeclaredHints::new(
                Some(false),
                Some(true),
                None,
                Some(false),
            )),
        ),
        // At least as cautious everywhere the correction tightens: lifted.
        (
            DeclaredHints::new(Some(false), Some(true), None, Some(false)),
            None,
        ),
        (DeclaredHints::default(), None),
        // A new lie (openWorldHint false where it was unset) is not the correction's to fix.
        (DeclaredHints::new(None, None, None, Some(false)), None),
    ];
    for (listed, served) in rows {
        assert_eq!(caught_writing().served(listed), served, "{listed:?}");
    }
}

#[test]
fn merging_keeps_the_more_cautious_value_of_each_hint() {
    let later = Correction {
        tightened: vec![(Hint::Idempotent, Some(false)), (Hint::Destructive, None)],
    };
    let merged = caught_writing().merged(&later);
    assert_eq!(
        merged.tightened,
        [
            (Hint::ReadOnly, Some(false)),
            (Hint::Destructive, Some(true)),
            (Hint::Idempotent, Some(false)),
        ]
    );
}

#[test]
fn caution_reads_unset_as_the_spec_default() {
    let rows = [
        (Hint::ReadOnly, None, 1),
        (Hint::ReadOnly, Some(true), 0),
        (Hint::Destructive, None, 1),
        (Hint::Destructive, Some(false), 0),
        (Hint::Idempotent, Some(false), 1),
        (Hint::OpenWorld, Some(false), 0),
        (Hint::OpenWorld, None, 1),
    ];
    for (hint, value, want) in rows {
        assert_eq!(caution(hint, value), want, "{hint:?} {value:?}");
    }
}
