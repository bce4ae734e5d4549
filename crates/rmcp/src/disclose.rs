//! Observed effects disclosed (`disclose_effects`,
//! [design: observed effects disclosed](../../../docs/design.md#observed-effects-disclosed)):
//! a judged call's result gets, in its `_meta` under `io.hintaudit/effects`, what the call
//! was seen to do ([`Disclosure`]). Only a complete result (`CallToolResult`, tool errors
//! included): a JSON-RPC error, a task or an input request has no `_meta` of the call's own.

use hintaudit_core::{DISCLOSURE_META_KEY, Disclosure, Effect, Finding};
use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolResponse, MetaObject};

/// Puts the disclosure of a call with `effect` and `findings` into `result`'s `_meta`,
/// replacing whatever the server put under the same key (a server does not vouch for
/// itself); every other `_meta` key, and the rest of the result, is left as it is.
pub(crate) fn disclose(
    result: &mut Result<CallToolResponse, McpError>,
    effect: &Effect,
    findings: &[Finding],
) {
    let Ok(CallToolResponse::Complete(r)) = result else {
        return;
    };
    let json = Disclosure::of(effect, findings).to_json();
    r.meta
        .get_or_insert_with(MetaObject::new)
        .0
        .insert(DISCLOSURE_META_KEY.to_owned(), json);
}
