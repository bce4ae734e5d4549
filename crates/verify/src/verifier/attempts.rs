//! A tool's attempts: the argument sets to call it with, from the cases file or generated
//! from its input schema and the database's values.

use hintaudit_core::Policy;
use serde_json::{Map, Value};

use super::Verifier;
use crate::arguments::{self, ArgumentSet, MAX_GENERATED_CASES, Plan};
use crate::client::ToolInfo;
use crate::db::{Database, Snapshotter};
use crate::error::VerifyError;
use crate::files::{FileWatch, PathField, PathValues, path_field};
use crate::ids::id_sources;

/// How many database values an id-like field is tried with before a tool whose calls all
/// fail is reported as not exercised.
pub const ID_CANDIDATES: usize = 3;

/// One case to run.
pub(super) struct Run {
    pub label: String,
    pub from_file: bool,
    pub setup: Vec<String>,
    pub arguments: Value,
    pub made_up: Vec<String>,
    pub generated: Vec<(String, String)>,
}

impl Verifier {
    /// The attempts for a tool, run in order until one exercises it (a call succeeds or
    /// writes): the cases file is one attempt; generated arguments are one attempt per
    /// database value drawn for the id-like fields (the smallest first) and per set of path
    /// values drawn from the watched trees (`files`). With no attempt, the reason.
    pub(super) async fn attempts(
        &self,
        snaps: &mut Snapshotter,
        files: Option<&FileWatch>,
        tool: &ToolInfo,
        notes: &mut Vec<String>,
    ) -> Result<(Vec<Vec<Run>>, Option<String>), VerifyError> {
        let file_runs = self.file_runs(tool);
        if !file_runs.is_empty() {
            return Ok((vec![file_runs], None));
        }
        let plan = match arguments::plan(&tool.input_schema) {
            Ok(plan) => plan,
            Err(why) => return Ok((Vec::new(), Some(why))),
        };
        let schemas = snaps.schemas().to_vec();
        let db = snaps.db();
        let candidates = fill_ids(db, &schemas, &plan, &tool.name).await?;
        if candidates.is_empty() {
            let fields: Vec<&str> = plan.ids.iter().map(|f| f.name.as_str()).collect();
            let why = format!("no value in the database for {}", fields.join(", "));
            return Ok((Vec::new(), Some(why)));
        }
        let probe_sql = probe_statement(db, &schemas).await?;
        let paths = files
            .map(|f| f.path_values(&tool.name, &path_fields(&plan, tool)))
            .unwrap_or_default();
        let mut attempts = Vec::new();
        for k in 0..candidates.len().max(paths.len()) {
            let ids = &candidates[k.min(candidates.len() - 1)];
            let paths = paths.get(k.min(paths.len().saturating_sub(1)));
            let expansion = plan.expand(ids);
            if k == 0 && expansion.combinations > expansion.sets.len() {
                notes.push(format!(
                    "generated {} of {} combinations of mode values (limit {MAX_GENERATED_CASES})",
                    expansion.sets.len(),
                    expansion.combinations
                ));
            }
            let generated = |set| generated_run(&plan, tool, k, set, probe_sql.as_deref(), paths);
            attempts.push(expansion.sets.into_iter().map(generated).collect());
        }
        Ok((attempts, None))
    }

    /// The tool's cases from the cases file, in file order.
    fn file_runs(&self, tool: &ToolInfo) -> Vec<Run> {
        self.cases
            .for_tool(&tool.name)
            .enumerate()
            .map(|(i, c)| Run {
                label: c.name.clone().unwrap_or_else(|| format!("case {}", i + 1)),
                from_file: true,
                setup: c.setup.clone(),
                arguments: c.arguments.clone(),
                made_up: Vec::new(),
                generated: Vec::new(),
            })
            .collect()
    }
}

/// A generated case of the `k`-th database value (and set of path values): the set's
/// arguments, SQL-taking fields given the probe statement, path-like fields the watched
/// tree's paths (no longer made up), and where each generated argument came from.
fn generated_run(
    plan: &Plan,
    tool: &ToolInfo,
    k: usize,
    set: ArgumentSet,
    probe_sql: Option<&str>,
    paths: Option<&PathValues>,
) -> Run {
    let mut args = set.arguments;
    let mut made_up = set.made_up;
    let mut generated = set.sources;
    for field in &plan.sql {
        if let (Some(sql), Some(v)) = (probe_sql, args.get_mut(field.as_str())) {
            *v = Value::String(sql.to_owned());
        }
    }
    for (name, value) in paths.map(|(v, _)| v.iter()).into_iter().flatten() {
        if let Some(slot) = args.get_mut(name.as_str()) {
            *slot = value.clone();
            made_up.retain(|m| m != name);
            generated.retain(|(n, _)| n != name);
        }
    }
    generated.extend(
        paths
            .map(|(_, s)| s.iter())
            .into_iter()
            .flatten()
            .filter(|(n, _)| args.get(n.as_str()).is_some())
            .cloned(),
    );
    generated.extend(plan.ids.iter().map(|f| {
        let source = if fresh_id(&tool.name, &f.name, &f.ty) {
            "one past the largest value in the database (a new row)"
        } else {
            "a value from the database"
        };
        (f.name.clone(), source.to_owned())
    }));
    generated.sort();
    Run {
        label: match (k, plan.ids.is_empty()) {
            (0, _) => set.label,
            (_, false) => format!("{} (database value #{})", set.label, k + 1),
            (_, true) => format!("{} (path values #{})", set.label, k + 1),
        },
        from_file: false,
        setup: Vec::new(),
        arguments: args,
        made_up,
        generated,
    }
}

/// The path-like fields among those a plan fills (required, or optional when none is).
fn path_fields(plan: &Plan, tool: &ToolInfo) -> Vec<PathField> {
    let Some(props) = tool
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
    else {
        return Vec::new();
    };
    props
        .iter()
        .filter(|(name, _)| plan.base.contains_key(*name) || plan.optional.contains_key(*name))
        .filter_map(|(name, schema)| path_field(name, schema))
        .collect()
}

/// Whether an id-like field gets a fresh value (one past the largest): a non-string `id`
/// of a tool whose name says it creates rows.
fn fresh_id(tool: &str, field: &str, ty: &str) -> bool {
    creates(tool) && field.eq_ignore_ascii_case("id") && ty != "string"
}

/// Whether a tool's name says it creates rows (`create_*`, `add_*`, `insert_*`, `new_*`,
/// `register_*`): its own `id` argument gets a fresh value.
fn creates(tool: &str) -> bool {
    matches!(
        arguments::name_verb(tool).as_str(),
        "create" | "add" | "insert" | "new" | "register"
    )
}

/// A harmless statement for SQL-taking fields: a one-row read of the first watched table.
async fn probe_statement(
    db: &mut Database,
    schemas: &[String],
) -> Result<Option<String>, VerifyError> {
    let tables = db
        .tables(&Policy::default(), schemas)
        .await
        .map_err(|e| VerifyError::db("listing tables", e))?;
    Ok(tables
        .first()
        .map(|t| format!("SELECT * FROM {} LIMIT 1", t.sql_name)))
}

/// Candidate values for the plan's id-like fields, drawn from the database: the k-th
/// candidate takes each field's k-th smallest value (up to [`ID_CANDIDATES`]). One empty
/// map when the plan has no id-like field; none when a field has no value at all.
async fn fill_ids(
    db: &mut Database,
    schemas: &[String],
    plan: &Plan,
    tool: &str,
) -> Result<Vec<Map<String, Value>>, VerifyError> {
    if plan.ids.is_empty() {
        return Ok(vec![Map::new()]);
    }
    let tables = db
        .tables(&Policy::default(), schemas)
        .await
        .map_err(|e| VerifyError::db("listing tables", e))?;
    let mut per_field: Vec<Vec<Value>> = Vec::new();
    for field in &plan.ids {
        let mut values = Vec::new();
        if fresh_id(tool, &field.name, &field.ty) {
            // The id of the row a create-style tool makes: one past the largest.
            if let Some((table, column)) = id_sources(&field.name, tool, &tables).first() {
                let max = db
                    .max_value(table, column)
                    .await
                    .map_err(|e| VerifyError::db(&format!("reading {}", table.name), e))?;
                let next = max
                    .and_then(|m| m.parse::<f64>().ok())
                    .unwrap_or(0.0)
                    .floor() as i64
                    + 1;
                per_field.push(vec![Value::from(next)]);
                continue;
            }
        }
        for (table, column) in id_sources(&field.name, tool, &tables) {
            let got = db
                .sample(table, &column, ID_CANDIDATES as u32)
                .await
                .map_err(|e| VerifyError::db(&format!("sampling {}", table.name), e))?;
            if !got.is_empty() {
                values = got.iter().map(|v| arguments::typed(v, &field.ty)).collect();
                break;
            }
        }
        if values.is_empty() {
            return Ok(Vec::new());
        }
        per_field.push(values);
    }
    let n = per_field.iter().map(Vec::len).max().unwrap_or(1);
    Ok((0..n)
        .map(|k| {
            plan.ids
                .iter()
                .zip(&per_field)
                .map(|(f, vals)| (f.name.clone(), vals[k.min(vals.len() - 1)].clone()))
                .collect()
        })
        .collect())
}
