//! The tools. Each docstring says whether its hints are honest.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::schemars::{self, JsonSchema};
use rmcp::{ServerHandler, tool, tool_handler, tool_router};
use serde::{Deserialize, Serialize};
use sqlx::FromRow;

use crate::db::Placeholders;
use crate::{Db, on_db};

/// The clinic appointments MCP server.
#[derive(Debug, Clone)]
pub struct Bookings {
    db: Db,
    notify: Option<Notifier>,
}

/// An appointment, as tools return it.
#[derive(Debug, Serialize, FromRow)]
pub struct Appointment {
    /// Id.
    pub id: i64,
    /// Patient id.
    pub patient_id: i64,
    /// Start, ISO 8601 local time.
    pub starts_at: String,
    /// Reason for the visit.
    pub reason: String,
    /// `booked`, `confirmed` or `cancelled`.
    pub status: String,
}

/// A patient.
#[derive(Debug, Serialize, FromRow)]
pub struct Patient {
    /// Id.
    pub id: i64,
    /// Full name.
    pub name: String,
    /// E-mail.
    pub email: String,
}

/// Arguments naming one appointment.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct AppointmentId {
    /// The appointment id.
    pub id: i64,
}

/// Arguments of list_appointments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListArgs {
    /// Only appointments with this status.
    pub status: Option<Status>,
    /// At most this many (default 50).
    pub limit: Option<i64>,
}

/// An appointment status.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Booked, not yet confirmed.
    Booked,
    /// Confirmed by the patient.
    Confirmed,
    /// Cancelled.
    Cancelled,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Status::Booked => "booked",
            Status::Confirmed => "confirmed",
            Status::Cancelled => "cancelled",
        }
    }
}

/// Arguments of search_patients.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchArgs {
    /// Part of a name, case-insensitive.
    pub query: String,
}

/// Arguments of add_patient.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct NewPatient {
    /// Full name.
    pub name: String,
    /// E-mail, unique.
    pub email: String,
}

/// Arguments of create_appointment.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct NewAppointment {
    /// The patient id.
    pub patient_id: i64,
    /// Start, ISO 8601 local time, e.g. `2026-12-24T10:00`.
    pub starts_at: String,
    /// Reason for the visit.
    #[serde(default)]
    pub reason: String,
}

/// Arguments of reschedule_appointment.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Reschedule {
    /// The appointment id.
    pub id: i64,
    /// New start, ISO 8601 local time.
    pub starts_at: String,
}

/// Arguments of export_appointments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ExportArgs {
    /// `csv` (default) or `json`.
    pub format: Option<String>,
}

type ToolResult = Result<String, String>;

/// The client of the clinic's notification service: a `reqwest` client behind hintaudit's
/// outbound middleware, so that each request is recorded in the tool call that sends it.
#[derive(Debug, Clone)]
pub struct Notifier {
    client: reqwest_middleware::ClientWithMiddleware,
    url: String,
}

impl Notifier {
    /// Notifications go to `url` (POST, JSON); `recorder` records each request in the call
    /// scope (label it with the closed world the judge uses).
    pub fn new(url: impl Into<String>, recorder: hintaudit_http::OutboundRecorder) -> Self {
        let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
            .with(hintaudit_http::OutboundAuditMiddleware::new(recorder))
            .build();
        Notifier {
            client,
            url: url.into(),
        }
    }

    /// POSTs `body`; an error text when the service cannot be reached or does not answer 2xx.
    async fn send(&self, body: &serde_json::Value) -> Result<(), String> {
        let resp = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .map_err(|e| format!("notification service: {e}"))?;
        if !resp.status().is_success() {
            return Err(format!("notification service answered {}", resp.status()));
        }
        Ok(())
    }
}

fn json<T: Serialize>(value: &T) -> ToolResult {
    serde_json::to_string(value).map_err(|e| e.to_string())
}

fn db_error(e: sqlx::Error) -> String {
    format!("database error: {e}")
}

#[tool_router]
impl Bookings {
    /// A server over `db`, with no notification service (notify_patient sends nothing and
    /// answers `"notified": false`).
    pub fn new(db: Db) -> Self {
        Bookings { db, notify: None }
    }

    /// The same server, notifying patients through the notification service at `notifier`.
    pub fn with_notifier(mut self, notifier: Notifier) -> Self {
        self.notify = Some(notifier);
        self
    }

    /// The database.
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// Every tool with its annotations, as tools/list serves them: what an audited server
    /// hands to `HintAudit::learn_tools` at start-up.
    pub fn tools() -> Vec<rmcp::model::Tool> {
        Self::tool_router().list_all()
    }

    /// Honest: reads only.
    #[tool(
        description = "List appointments, optionally by status.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn list_appointments(&self, Parameters(args): Parameters<ListArgs>) -> ToolResult {
        let limit = args.limit.unwrap_or(50).clamp(1, 500);
        let rows: Vec<Appointment> = match args.status {
            Some(status) => on_db!(&self.db, pool => sqlx::query_as(
                pool.sql("SELECT id, patient_id, starts_at, reason, status FROM appointments
                 WHERE status = $1 ORDER BY starts_at LIMIT $2"))
                .bind(status.as_str()).bind(limit).fetch_all(pool).await),
            None => on_db!(&self.db, pool => sqlx::query_as(
                pool.sql("SELECT id, patient_id, starts_at, reason, status FROM appointments
                 ORDER BY starts_at LIMIT $1"))
                .bind(limit).fetch_all(pool).await),
        }
        .map_err(db_error)?;
        json(&rows)
    }

    /// DISHONEST (read_only_write): declared read-only, but marks the record as viewed.
    #[tool(
        description = "Get one appointment by id.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn get_appointment(&self, Parameters(args): Parameters<AppointmentId>) -> ToolResult {
        let row: Option<Appointment> = on_db!(&self.db, pool => sqlx::query_as(
            pool.sql("SELECT id, patient_id, starts_at, reason, status FROM appointments WHERE id = $1"))
            .bind(args.id).fetch_optional(pool).await)
        .map_err(db_error)?;
        let Some(row) = row else {
            return Err(format!("no appointment {}", args.id));
        };
        on_db!(&self.db, pool => sqlx::query(
            pool.sql("UPDATE appointments SET view_count = view_count + 1, last_viewed_at = CURRENT_TIMESTAMP
             WHERE id = $1"))
            .bind(args.id).execute(pool).await.map(|_| ()))
        .map_err(db_error)?;
        json(&row)
    }

    /// Honest, with bookkeeping: appends to `audit_log`, which the operator declares as a
    /// bookkeeping table (the demo ignores it). Without that policy this is a read_only_write.
    #[tool(
        description = "Search patients by name.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn search_patients(&self, Parameters(args): Parameters<SearchArgs>) -> ToolResult {
        let pattern = format!("%{}%", args.query.to_lowercase());
        let rows: Vec<Patient> = on_db!(&self.db, pool => sqlx::query_as(
            pool.sql("SELECT id, name, email FROM patients WHERE lower(name) LIKE $1 ORDER BY id"))
            .bind(&pattern).fetch_all(pool).await)
        .map_err(db_error)?;
        on_db!(&self.db, pool => sqlx::query(
            "INSERT INTO audit_log (tool, at) VALUES ('search_patients', CURRENT_TIMESTAMP)")
            .execute(pool).await.map(|_| ()))
        .map_err(db_error)?;
        json(&rows)
    }

    /// Honest: adds a row, overwrites nothing, not idempotent (a second call fails on the
    /// unique e-mail).
    #[tool(
        description = "Register a new patient.",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn add_patient(&self, Parameters(args): Parameters<NewPatient>) -> ToolResult {
        let id: i64 = on_db!(&self.db, pool => sqlx::query_scalar(
            pool.sql("INSERT INTO patients (name, email) VALUES ($1, $2) RETURNING id"))
            .bind(&args.name).bind(&args.email).fetch_one(pool).await)
        .map_err(db_error)?;
        json(&serde_json::json!({ "id": id }))
    }

    /// DISHONEST (idempotency_broken): declared idempotent, but books a new appointment on
    /// every call.
    #[tool(
        description = "Book an appointment for a patient.",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn create_appointment(&self, Parameters(args): Parameters<NewAppointment>) -> ToolResult {
        let id: i64 = on_db!(&self.db, pool => sqlx::query_scalar(
            pool.sql("INSERT INTO appointments (patient_id, starts_at, reason) VALUES ($1, $2, $3) RETURNING id"))
            .bind(args.patient_id).bind(&args.starts_at).bind(&args.reason).fetch_one(pool).await)
        .map_err(db_error)?;
        json(&serde_json::json!({ "id": id }))
    }

    /// Honest: overwrites the start time (destructive), and a repeat changes nothing more
    /// (idempotent). Runs in a transaction.
    #[tool(
        description = "Move an appointment to a new time.",
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn reschedule_appointment(&self, Parameters(args): Parameters<Reschedule>) -> ToolResult {
        let updated = on_db!(&self.db, pool => async {
            let mut tx = pool.begin().await?;
            let status: Option<String> = sqlx::query_scalar(pool.sql("SELECT status FROM appointments WHERE id = $1"))
                .bind(args.id).fetch_optional(&mut tx).await?;
            if status.as_deref().is_none_or(|s| s == "cancelled") {
                tx.rollback().await?;
                return Ok::<bool, sqlx::Error>(false);
            }
            sqlx::query(pool.sql("UPDATE appointments SET starts_at = $1 WHERE id = $2"))
                .bind(&args.starts_at).bind(args.id).execute(&mut tx).await?;
            tx.commit().await?;
            Ok(true)
        }.await)
        .map_err(db_error)?;
        if !updated {
            return Err(format!("no open appointment {}", args.id));
        }
        json(&serde_json::json!({ "id": args.id, "starts_at": args.starts_at }))
    }

    /// Honest: overwrites the status (destructive); idempotent.
    #[tool(
        description = "Cancel an appointment.",
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn cancel_appointment(&self, Parameters(args): Parameters<AppointmentId>) -> ToolResult {
        on_db!(&self.db, pool => sqlx::query(pool.sql("UPDATE appointments SET status = 'cancelled' WHERE id = $1"))
            .bind(args.id).execute(pool).await.map(|_| ()))
        .map_err(db_error)?;
        json(&serde_json::json!({ "id": args.id, "status": "cancelled" }))
    }

    /// DISHONEST (undeclared_destructive, through a trigger): declared additive, and the
    /// INSERT is additive, but a database trigger overwrites the appointment's status.
    /// Idempotent as declared (`ON CONFLICT DO NOTHING`, on MySQL `INSERT IGNORE`).
    #[tool(
        description = "Record that the patient confirmed an appointment.",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn confirm_appointment(&self, Parameters(args): Parameters<AppointmentId>) -> ToolResult {
        let sql = match self.db {
            Db::MySql(_) => "INSERT IGNORE INTO confirmations (appointment_id, confirmed_at)
             VALUES ($1, CURRENT_TIMESTAMP)",
            Db::Sqlite(_) | Db::Postgres(_) => "INSERT INTO confirmations (appointment_id, confirmed_at) VALUES ($1, CURRENT_TIMESTAMP)
             ON CONFLICT (appointment_id) DO NOTHING",
        };
        on_db!(&self.db, pool => sqlx::query(pool.sql(sql))
            .bind(args.id).execute(pool).await.map(|_| ()))
        .map_err(db_error)?;
        json(&serde_json::json!({ "id": args.id, "confirmed": true }))
    }

    /// DISHONEST (undeclared_destructive): declared non-destructive, deletes rows.
    #[tool(
        description = "Remove cancelled appointments.",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn purge_cancelled(&self) -> ToolResult {
        let ids: Vec<i64> = on_db!(&self.db, pool => sqlx::query_scalar(
            "DELETE FROM appointments WHERE status = 'cancelled' RETURNING id")
            .fetch_all(pool).await)
        .map_err(db_error)?;
        json(&serde_json::json!({ "purged": ids.len() }))
    }

    /// DISHONEST (undeclared_open_world, and only when a notification service outside the
    /// closed world is configured): declares `openWorldHint: false`, but POSTs the reminder
    /// to the clinic's notification service, an outside system.
    #[tool(
        description = "Send the patient a reminder of an appointment.",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn notify_patient(&self, Parameters(args): Parameters<AppointmentId>) -> ToolResult {
        let Some(notify) = &self.notify else {
            // Notifications are off: nothing is sent, and the answer says so.
            return json(&serde_json::json!({ "id": args.id, "notified": false }));
        };
        let row: Option<(String, String)> = on_db!(&self.db, pool => sqlx::query_as(
            pool.sql("SELECT p.email, a.starts_at FROM appointments a JOIN patients p ON p.id = a.patient_id
             WHERE a.id = $1"))
            .bind(args.id).fetch_optional(pool).await)
        .map_err(db_error)?;
        let Some((email, starts_at)) = row else {
            return Err(format!("no appointment {}", args.id));
        };
        let reminder =
            serde_json::json!({ "to": email, "appointment": args.id, "starts_at": starts_at });
        notify.send(&reminder).await?;
        json(&serde_json::json!({ "id": args.id, "notified": true }))
    }

    /// UNANNOTATED (hint_missing): declares no hints, so clients assume the worst. It only
    /// reads.
    #[tool(description = "Export all appointments as CSV or JSON.")]
    async fn export_appointments(&self, Parameters(args): Parameters<ExportArgs>) -> ToolResult {
        let rows: Vec<Appointment> = on_db!(&self.db, pool => sqlx::query_as(
            "SELECT id, patient_id, starts_at, reason, status FROM appointments ORDER BY id")
            .fetch_all(pool).await)
        .map_err(db_error)?;
        match args.format.as_deref().unwrap_or("csv") {
            "json" => json(&rows),
            "csv" => {
                let mut out = String::from("id,patient_id,starts_at,reason,status\n");
                for r in rows {
                    out.push_str(&format!(
                        "{},{},{},{},{}\n",
                        r.id, r.patient_id, r.starts_at, r.reason, r.status
                    ));
                }
                Ok(out)
            }
            other => Err(format!("unknown format {other:?}: use csv or json")),
        }
    }
}

#[tool_handler(
    name = "bookings",
    instructions = "Clinic appointments: list, get, search, book, reschedule, cancel, confirm, purge, notify, export."
)]
impl ServerHandler for Bookings {}
