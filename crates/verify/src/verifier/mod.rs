//! The run: list and lint the tools, then call each one between snapshots and let the core
//! judge compare the diffs with the declared hints.
//!
//! A call that times out or loses the server is recorded on its tool and the server is
//! restarted; a run that cannot go on (the restart fails, the database goes away) still
//! returns the report it has, with [`Report::incomplete`] saying why.

mod advice;
mod attempts;
mod case;
mod evidence;
mod reset;
mod session;
mod state;
mod tool;
mod watch;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hintaudit_core::{Confidence, Finding, Hint, Policy, Rule};

use crate::cases::Cases;
use crate::client::{ServerSpec, StderrTail, ToolInfo};

use crate::error::VerifyError;
use crate::files::FileWatch;
use crate::report::{Report, ToolReport};
use crate::secrets::Secrets;

pub(crate) use advice::advice_text;
pub use reset::DatabaseCopy;
use session::Session;
use state::State;
use watch::Watch;

/// The database check's verdict when no database is given.
const NO_DATABASE: &str = "none: no --database; the server's state is the watched directories";

/// Default time one tool call may take, in seconds.
pub const DEFAULT_TIMEOUT_SECS: u64 = 30;

/// Verifies one MCP server against its test database.
///
/// The tools are listed before and after the calls; hints that changed in between are a
/// `hints_changed` finding.
///
/// Build with [`Verifier::new`] and the `with_*` setters, then [`Verifier::run`]. Tools run
/// in the order of a user's session, each class by its declared hints: tools that create
/// (declaring destructiveHint false and readOnlyHint not true; those whose name says they
/// create, such as `add_*` or `git_create_branch`, first), then readers (readOnlyHint
/// true), then the rest (updaters), then tools whose name says they delete, remove or drop,
/// whatever they declare; each class by name. A tool's cases run in file order.
#[derive(Debug, Clone)]
pub struct Verifier {
    server: ServerSpec,
    database: Option<String>,
    watch: Vec<PathBuf>,
    ignored_paths: Vec<String>,
    cases: Cases,
    policy: Policy,
    timeout: Duration,
    progress: bool,
    only: Vec<String>,
    schemas: Vec<String>,
    reset: bool,
    suggest: bool,
    stderr: StderrTail,
}

impl Verifier {
    /// A verifier for `server`, whose test database is at `database` (a sqlx URL).
    pub fn new(server: ServerSpec, database: impl Into<String>) -> Self {
        Verifier {
            database: Some(database.into()),
            ..Verifier::without_database(server)
        }
    }

    /// A verifier for `server` whose state is files only: give it the directories with
    /// [`Verifier::with_watch`] (a run with neither a database nor a watched directory is a
    /// usage error).
    pub fn without_database(server: ServerSpec) -> Self {
        Verifier {
            server,
            database: None,
            watch: Vec::new(),
            ignored_paths: Vec::new(),
            cases: Cases::default(),
            policy: Policy::default(),
            timeout: Duration::from_secs(DEFAULT_TIMEOUT_SECS),
            progress: false,
            only: Vec::new(),
            schemas: Vec::new(),
            reset: false,
            suggest: false,
            stderr: StderrTail::default(),
        }
    }

    /// Argument sets and setup SQL per tool.
    pub fn with_cases(mut self, cases: Cases) -> Self {
        self.cases = cases;
        self
    }

    /// Reads the cases from a TOML or JSON file.
    pub fn with_cases_file(self, path: &Path) -> Result<Self, VerifyError> {
        Ok(self.with_cases(Cases::load(path)?))
    }

    /// Judges under `policy` (from `hintaudit.toml`); later `with_ignored_*` calls add to it.
    pub fn with_policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    /// Watches a directory whose files are the server's state (repeatable): snapshotted
    /// before and after every call and judged on content, restored when the run ends (and
    /// between tools with [`Verifier::with_reset`]).
    pub fn with_watch(mut self, dir: impl Into<PathBuf>) -> Self {
        self.watch.push(dir.into());
        self
    }

    /// A bookkeeping path under the watched directories, as a glob relative to each
    /// (`cache/**`): its changes are no effect.
    pub fn with_ignored_path(mut self, glob: impl Into<String>) -> Self {
        self.ignored_paths.push(glob.into());
        self
    }

    /// Ignores a bookkeeping table: it is not snapshotted.
    pub fn with_ignored_table(mut self, table: impl AsRef<str>) -> Self {
        self.policy = self.policy.with_ignored_table(table);
        self
    }

    /// Ignores a bookkeeping column (`column` in every table, or `table.column`).
    pub fn with_ignored_column(mut self, column: impl AsRef<str>) -> Self {
        self.policy = self.policy.with_ignored_column(column);
        self
    }

    /// How long one call may take (default 30 s; the handshake gets at least 30 s).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Verifies only this tool (repeatable; default: every listed tool). A name the server
    /// does not list ends the run with a usage error.
    pub fn with_tool(mut self, tool: impl Into<String>) -> Self {
        self.only.push(tool.into());
        self
    }

    /// Watches only this PostgreSQL schema (repeatable; default: every non-system schema).
    pub fn with_schema(mut self, schema: impl Into<String>) -> Self {
        self.schemas.push(schema.into());
        self
    }

    /// Runs against a pristine copy of the database instead of the database itself (see
    /// [`DatabaseCopy`]) when the server's `--stdio` command names the database as
    /// `--database` does (verify substitutes the copy); otherwise resets a test database in
    /// place, from a pristine copy, between tools and at the end.
    pub fn with_reset(mut self, reset: bool) -> Self {
        self.reset = reset;
        self
    }

    /// Adds to each tool report the annotations its evidence supports
    /// ([`ToolReport::suggestion`]).
    pub fn with_suggest(mut self, suggest: bool) -> Self {
        self.suggest = suggest;
        self
    }

    /// Prints progress lines on stderr once the run has taken more than 2 s.
    pub fn with_progress(mut self, progress: bool) -> Self {
        self.progress = progress;
        self
    }

    /// The last lines the server wrote on stderr so far (at most 20), secrets masked.
    pub fn server_stderr(&self) -> Vec<String> {
        let secrets = self.secrets();
        let t = self.stderr.lock();
        t.iter().map(|l| secrets.mask(l)).collect()
    }

    fn secrets(&self) -> Secrets {
        let server = match &self.server {
            ServerSpec::Stdio(c) | ServerSpec::Url(c) => c,
        };
        Secrets::collect(server, self.database.as_deref().unwrap_or(""))
    }

    /// Runs the verification. An error ends the run before any tool is judged: the
    /// server could not be started or listed, the database could not be used, or it is not
    /// the server's (see the database check in the crate docs). Once tools are called,
    /// failures are recorded in the report, and a run that cannot go on returns what it
    /// has with [`Report::incomplete`] set. Secrets are masked in the report and in errors.
    pub async fn run(&self) -> Result<Report, VerifyError> {
        let started = Instant::now();
        let secrets = self.secrets();
        let mask = |e: VerifyError| e.map_text(|t| secrets.mask(t));
        let mut files = self.start_watching().map_err(mask)?;
        let copy = match (&self.database, self.reset) {
            (Some(db), true) => Some(DatabaseCopy::make(&self.server, db).await.map_err(mask)?),
            _ => None,
        };
        let (server, database) = match &copy {
            Some(c) => (c.server.clone(), Some(c.url.clone())),
            None => (self.server.clone(), self.database.clone()),
        };
        let result = self
            .run_on(&server, database.as_deref(), copy.as_ref(), files.as_mut())
            .await;
        // Reset in place: the original is made pristine again, and the pristine copy
        // dropped, whatever the run's outcome; the watched trees put back likewise, with
        // the server stopped.
        let finished = match &copy {
            Some(c) => c.finish().await,
            None => Ok(()),
        };
        let restored = files.as_mut().map_or(Ok(0), FileWatch::restore);
        let mut report = result.map_err(mask)?;
        finished.map_err(mask)?;
        restored.map_err(mask)?;
        report.server = match &self.server {
            ServerSpec::Stdio(c) => secrets.mask_command(c),
            ServerSpec::Url(u) => secrets.mask(u),
        };
        report.database = self
            .database
            .as_deref()
            .map_or_else(String::new, |d| secrets.mask(d));
        report.database_copy = copy.map(|c| c.pristine.unwrap_or(c.url));
        report.server_stderr = self.stderr.lock().iter().cloned().collect();
        report.mask_with(|t| secrets.mask(t));
        // After the server has shut down: the time a user waits.
        report.elapsed_seconds = started.elapsed().as_secs_f64();
        Ok(report)
    }

    async fn run_on(
        &self,
        server: &ServerSpec,
        database: Option<&str>,
        reset: Option<&DatabaseCopy>,
        files: Option<&mut FileWatch>,
    ) -> Result<Report, VerifyError> {
        let started = Instant::now();
        let mut session = Session::start(server, self.timeout, self.stderr.clone()).await?;
        let result = self
            .run_with(&mut session, database, reset, files, started)
            .await;
        session.close().await;
        result
    }

    /// The run on a started server: the tools to run, the database, each tool in turn,
    /// tools/list again, the database check, advice withheld when no state was found.
    async fn run_with(
        &self,
        session: &mut Session,
        database: Option<&str>,
        reset: Option<&DatabaseCopy>,
        files: Option<&mut FileWatch>,
        started: Instant,
    ) -> Result<Report, VerifyError> {
        let tools = self.tools_to_run(session).await?;
        let shown_db = database.map(crate::db::redact);
        let (mut snaps, mut watch) = self
            .open_database(session, database, shown_db.as_deref())
            .await?;
        let mut files = files;
        if let (Some(f), Ok(Some(db))) = (files.as_deref_mut(), snaps.db().sqlite_file().await) {
            // `--database`'s own file is judged by its snapshots, not twice.
            f.skip_database(db);
        }
        let watched = files
            .as_ref()
            .map(|f| f.roots().iter().map(|r| r.display().to_string()).collect())
            .unwrap_or_default();
        let mut state = State { db: snaps, files };
        let mut run = self
            .verify_tools(session, &mut state, &mut watch, &tools, reset, started)
            .await;
        if run.incomplete.is_none() {
            // tools/list again: hints that changed during the run are `hints_changed`.
            match session.list_tools().await {
                Ok(relisted) => hints_changed(&mut run.reports, &relisted),
                Err(e) => run.incomplete = Some(e.to_string()),
            }
        }
        run.name_tools_not_run(&tools);
        let database_check = match (&shown_db, watch.verdict(shown_db.as_deref().unwrap_or(""))) {
            (None, _) => NO_DATABASE.to_owned(),
            (Some(_), Ok(text)) => text,
            (Some(_), Err(e)) if run.incomplete.is_none() => return Err(e),
            (Some(_), Err(e)) => format!("failed: {e}"),
        };
        self.withhold_unseen(&mut run.reports, &tools, &database_check);
        Ok(Report {
            server: String::new(),
            database: String::new(),
            tools: run.reports,
            stats: state.db.stats(),
            elapsed_seconds: started.elapsed().as_secs_f64(),
            incomplete: run.incomplete,
            database_check,
            database_copy: None,
            database_resets: run.resets,
            server_stderr: Vec::new(),
            outbound_watched: session.watches_outbound(),
            unattributed_outbound: session.unattributed_outbound(),
            watched,
        })
    }

    /// The tools the server lists, less those `--tool` leaves out, in run order; an error
    /// when the cases file or `--tool` names a tool the server does not list.
    async fn tools_to_run(&self, session: &mut Session) -> Result<Vec<ToolInfo>, VerifyError> {
        let mut tools = session.list_tools().await?;
        let listed = |name: &str| tools.iter().any(|x| x.name == name);
        if let Some(unknown) = self.cases.tools().find(|t| !listed(t)) {
            return Err(VerifyError::Usage(format!(
                "the cases file names tool {unknown:?}, which the server does not list"
            )));
        }
        if let Some(unknown) = self.only.iter().find(|t| !listed(t)) {
            return Err(VerifyError::Usage(format!(
                "--tool {unknown:?}: the server does not list it"
            )));
        }
        if !self.only.is_empty() {
            tools.retain(|t| self.only.contains(&t.name));
        }
        tools.sort_by(|a, b| group(a).cmp(&group(b)).then(a.name.cmp(&b.name)));
        Ok(tools)
    }

    /// Verifies the tools in order, with `--reset` resetting the database copy and putting
    /// the watched trees back after a tool that changed them; stops at the first error,
    /// saying where.
    async fn verify_tools(
        &self,
        session: &mut Session,
        state: &mut State<'_>,
        watch: &mut Watch,
        tools: &[ToolInfo],
        reset: Option<&DatabaseCopy>,
        started: Instant,
    ) -> ToolsRun {
        let mut run = ToolsRun::default();
        for (i, tool) in tools.iter().enumerate() {
            match self
                .reset_between(session, state, reset, run.reports.last())
                .await
            {
                Ok(reset) => run.resets += u32::from(reset),
                Err(e) => {
                    run.incomplete = Some(format!("before {}: {e}", tool.name));
                    break;
                }
            }
            if self.progress && started.elapsed() > Duration::from_secs(2) {
                eprintln!(
                    "hintaudit verify: [{}/{}] {} ({:.1} s)",
                    i + 1,
                    tools.len(),
                    tool.name,
                    started.elapsed().as_secs_f64()
                );
            }
            match self.verify_tool(session, state, watch, tool).await {
                Ok((report, stop)) => {
                    run.reports.push(report);
                    if let Some(e) = stop {
                        run.incomplete = Some(e.to_string());
                        break;
                    }
                }
                Err(e) => {
                    run.incomplete = Some(format!("while verifying {}: {e}", tool.name));
                    break;
                }
            }
        }
        run
    }
}

/// The tools verified so far, why the run ended early (if it did), and how many times the
/// database copy was made again.
#[derive(Default)]
struct ToolsRun {
    reports: Vec<ToolReport>,
    incomplete: Option<String>,
    resets: u32,
}

impl ToolsRun {
    /// A run that ended early names the tools it did not get to.
    fn name_tools_not_run(&mut self, tools: &[ToolInfo]) {
        let left: Vec<&str> = tools[self.reports.len()..]
            .iter()
            .map(|t| t.name.as_str())
            .collect();
        if !left.is_empty() {
            self.incomplete = self
                .incomplete
                .take()
                .map(|m| format!("{m}; not run: {}", left.join(", ")));
        }
    }
}

/// Run order: creators (those named so first), readers, updaters, then tools named as
/// deleting, those whose arguments address a part of a record (more fields: a relation's
/// `from`, `to` and `relationType`) before those addressing whole records (a name); the
/// state a reader, an updater or a finer deletion needs exists by the time it runs.
fn group(t: &ToolInfo) -> (u8, u8, std::cmp::Reverse<usize>) {
    use crate::arguments::{ToolVerb, tool_verb};
    let verb = tool_verb(&t.name);
    let class = match (t.hints.read_only, t.hints.destructive) {
        _ if verb == Some(ToolVerb::Delete) => 3,
        (Some(true), _) => 1,
        (_, Some(false)) => 0,
        _ => 2,
    };
    let fields = match class {
        3 => leaf_fields(&t.input_schema, &t.input_schema, 0),
        _ => 0,
    };
    (
        class,
        u8::from(verb != Some(ToolVerb::Create)),
        std::cmp::Reverse(fields),
    )
}

/// How many scalar fields a schema's arguments carry, through objects and arrays.
fn leaf_fields(root: &serde_json::Value, schema: &serde_json::Value, depth: usize) -> usize {
    let schema = crate::arguments::resolve(root, schema);
    if depth > 8 {
        return 0;
    }
    if let Some(props) = schema
        .get("properties")
        .and_then(serde_json::Value::as_object)
    {
        return props
            .values()
            .map(|p| leaf_fields(root, p, depth + 1))
            .sum();
    }
    match schema.get("items") {
        Some(items) => leaf_fields(root, items, depth + 1),
        None => 1,
    }
}

/// Adds a `hints_changed` finding to every tool whose hints differ in `relisted`.
fn hints_changed(reports: &mut [ToolReport], relisted: &[ToolInfo]) {
    for report in reports {
        if let Some(now) = relisted.iter().find(|t| t.name == report.name)
            && now.hints != report.hints
        {
            let hint = Hint::ALL
                .into_iter()
                .find(|h| now.hints.get(*h) != report.hints.get(*h))
                .unwrap_or(Hint::ReadOnly);
            report.findings.push(Finding::new(
                report.name.clone(),
                Rule::HintsChanged,
                hint,
                Confidence::Confirmed,
                format!(
                    "tools/list changed the hints during the run from {} to {}",
                    report.hints.compact(),
                    now.hints.compact()
                ),
            ));
            report
                .findings
                .sort_by(|a, b| b.severity.cmp(&a.severity).then(a.rule.cmp(&b.rule)));
        }
    }
}
