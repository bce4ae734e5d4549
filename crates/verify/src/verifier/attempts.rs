//! A tool's attempts: the argument sets to call it with, from the cases file or generated
//! from its input schema and the database's values.

use hintaudit_core::Policy;
use serde_json::{Map, Value};

use super::Verifier;
use crate::arguments::{self, ArgumentSet, MAX_GENERATED_CASES, Plan, ToolVerb, tool_verb};
use crate::client::ToolInfo;
use crate::db::{Database, Snapshotter};
use crate::error::VerifyError;
use crate::files::{FileWatch, PathField, PathRole, PathValues, path_field};
use crate::ids::id_sources;
use crate::state_args::{TreeState, Variant};

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
    /// database value drawn for the id-like fields (the smallest first), the first with
    /// the state's values (`crate::state_args`) and the watched tree's paths, existing and
    /// new each in a call of their own, the next ones with the watched directory for path
    /// fields. With no attempt, the reason. `notes` gets the state the tool met.
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
        let state = files
            .map(|f| TreeState::read(f.roots()))
            .unwrap_or_default();
        if !state.met.is_empty() {
            notes.push(format!("state met: {}", state.met.join("; ")));
        }
        let schemas = snaps.schemas().to_vec();
        let (candidates, id_from) = ids(snaps.db(), &schemas, &plan, tool, &state).await?;
        if candidates.is_empty() {
            let fields: Vec<&str> = plan.ids.iter().map(|f| f.name.as_str()).collect();
            let why = format!("no value in the database for {}", fields.join(", "));
            return Ok((Vec::new(), Some(why)));
        }
        let probe_sql = probe_statement(snaps.db(), &schemas).await?;
        let fields = path_fields(&plan, tool);
        let paths = files
            .map(|f| f.path_values(&tool.name, &fields))
            .unwrap_or_default();
        let from = Sources {
            probe_sql: probe_sql.as_deref(),
            id_from: &id_from,
            state: &state,
            existing_paths: fields.iter().any(|f| f.role == PathRole::Existing),
        };
        let mut attempts = Vec::new();
        for k in 0..candidates.len().max(paths.len().saturating_sub(1)) {
            let ids = &candidates[k.min(candidates.len() - 1)];
            let expansion = plan.expand(ids);
            if k == 0 && expansion.combinations > expansion.sets.len() {
                notes.push(format!(
                    "generated {} of {} combinations of mode values (limit {MAX_GENERATED_CASES})",
                    expansion.sets.len(),
                    expansion.combinations
                ));
            }
            attempts.push(from.runs(&plan, tool, k, &expansion.sets, &paths));
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
    from: &Sources<'_>,
    paths: Option<&PathValues>,
) -> Run {
    let probe_sql = from.probe_sql;
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
            format!("one past the largest value in {} (a new row)", from.id_from)
        } else {
            format!("a value from {}", from.id_from)
        };
        (f.name.clone(), source)
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

/// Where a tool's generated values come from besides its schema: the probe statement, the
/// database ids are drawn from, the state in the watched trees, whether a path field
/// names an existing file.
struct Sources<'a> {
    probe_sql: Option<&'a str>,
    id_from: &'a str,
    state: &'a TreeState,
    existing_paths: bool,
}

impl Sources<'_> {
    /// The `k`-th attempt's runs, one per argument set: the first attempt with the state's
    /// existing values and the tree's existing paths, then (when a field names state) with
    /// new ones, a tool whose name says it creates trying the new ones first; a later
    /// attempt with the watched directory for path fields.
    fn runs(
        &self,
        plan: &Plan,
        tool: &ToolInfo,
        k: usize,
        sets: &[ArgumentSet],
        paths: &[PathValues],
    ) -> Vec<Run> {
        let variants: &[Variant] = match (k, tool_verb(&tool.name)) {
            (0, Some(ToolVerb::Create)) => &[Variant::New, Variant::Existing],
            (0, _) => &[Variant::Existing, Variant::New],
            _ => &[Variant::Existing],
        };
        let mut runs = Vec::new();
        for variant in variants {
            let path_set = match (k, variant) {
                (0, Variant::Existing) => paths.first(),
                (0, Variant::New) => paths.get(1),
                _ => paths.get(k + 1).or(paths.last()),
            };
            for set in sets {
                let mut run = generated_run(plan, tool, k, set.clone(), self, path_set);
                let Value::Object(args) = &mut run.arguments else {
                    continue;
                };
                let named =
                    self.state
                        .fill(args, tool, *variant, &mut run.generated, &mut run.made_up)
                        || (k == 0 && self.existing_paths && path_set.is_some());
                run.generated.sort();
                if k == 0 && named {
                    run.label.push_str(match variant {
                        Variant::Existing => " (existing state)",
                        Variant::New => " (new state)",
                    });
                } else if *variant == Variant::New {
                    continue;
                }
                runs.push(run);
            }
        }
        runs
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

/// Values for the plan's id-like fields, and what they are drawn from: the database, else
/// (none there, as with no `--database`) the first SQLite file of the watched trees that
/// has them, opened read-only.
async fn ids(
    db: &mut Database,
    schemas: &[String],
    plan: &Plan,
    tool: &ToolInfo,
    state: &TreeState,
) -> Result<(Vec<Map<String, Value>>, String), VerifyError> {
    let found = fill_ids(db, schemas, plan, &tool.name).await?;
    if !found.is_empty() || plan.ids.is_empty() {
        return Ok((found, "the database".to_owned()));
    }
    for file in &state.sqlite {
        let url = format!("sqlite://{}?mode=ro", file.display());
        let Ok(mut db) = Database::connect(&url).await else {
            continue;
        };
        if let Ok(found) = fill_ids(&mut db, &[], plan, &tool.name).await
            && !found.is_empty()
        {
            let name = file
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
            return Ok((found, format!("{name} (a SQLite file in the watched tree)")));
        }
    }
    Ok((Vec::new(), "the database".to_owned()))
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
