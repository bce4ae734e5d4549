//! Evidence: one line of text and its confidence, written only when a rule can use it.

use crate::finding::Confidence;
use crate::hints::DeclaredHints;

/// One piece of evidence: a line of text and how strong it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evidence {
    /// One line, without argument values or SQL literals.
    pub text: String,
    /// How strong it is.
    pub confidence: Confidence,
}

/// `1 row`, `n rows`.
pub(super) fn rows(n: usize) -> impl std::fmt::Display {
    struct Rows(usize);
    impl std::fmt::Display for Rows {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            match self.0 {
                1 => f.write_str("1 row"),
                n => write!(f, "{n} rows"),
            }
        }
    }
    Rows(n)
}

/// Which evidence texts to write. The judge asks only for those its rules can use with the
/// declared hints; the others are recorded with an empty text, which allocates nothing, so
/// that their presence still counts (advice, `is_empty`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Wanted {
    pub(crate) writes: bool,
    pub(crate) attempts: bool,
    pub(crate) destructive: bool,
    pub(crate) net_changes: bool,
}

impl Wanted {
    /// Every text: [`Facts::from_effect`](crate::Facts::from_effect).
    pub(crate) const ALL: Wanted = Wanted {
        writes: true,
        attempts: true,
        destructive: true,
        net_changes: true,
    };

    /// The texts the judge's rules can use with `hints`
    /// ([design: rules](../../../../docs/design.md#2-rules)): writes and attempts for
    /// a read-only tool, destructive evidence for `destructiveHint: false`, net changes for
    /// `idempotentHint: true`, the last two only when readOnlyHint is not true.
    pub(crate) fn for_hints(hints: DeclaredHints) -> Wanted {
        let read_only = hints.read_only == Some(true);
        Wanted {
            writes: read_only,
            attempts: read_only,
            destructive: !read_only && hints.destructive == Some(false),
            net_changes: !read_only && hints.idempotent == Some(true),
        }
    }
}

/// Records one piece of evidence, writing its text only when it is wanted.
pub(super) fn push(
    evidence: &mut Vec<Evidence>,
    wanted: bool,
    confidence: Confidence,
    text: impl FnOnce() -> String,
) {
    let text = if wanted { text() } else { String::new() };
    evidence.push(Evidence { text, confidence });
}

/// Joins evidence into one line: at most three texts, then `(+N more)`; the confidence is
/// confirmed when any piece is.
pub fn summarize(evidence: &[Evidence]) -> Option<Evidence> {
    if evidence.is_empty() {
        return None;
    }
    let confidence = evidence
        .iter()
        .map(|e| e.confidence)
        .max()
        .unwrap_or(Confidence::Likely);
    // Confirmed pieces first: they are the stronger story.
    let mut ordered: Vec<&Evidence> = evidence.iter().collect();
    ordered.sort_by_key(|e| std::cmp::Reverse(e.confidence));
    let mut text = ordered
        .iter()
        .take(3)
        .map(|e| e.text.as_str())
        .collect::<Vec<_>>()
        .join("; ");
    if evidence.len() > 3 {
        text.push_str(&format!(" (+{} more)", evidence.len() - 3));
    }
    Some(Evidence { text, confidence })
}
