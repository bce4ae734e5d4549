//! Tools that answer with a task (SEP-2663): what the layer sees of them.
//!
//! rmcp's `TaskManager::spawn` calls `make_future` inside `call_tool` (inside the scope) but
//! polls the future in a plain `tokio::spawn`: the future sees no scope unless it was wrapped
//! in `CallScope::carry` inside `make_future`. The layer reports the call when the
//! `CreateTaskResult` is returned.

use std::sync::{Arc, Mutex};

use hintaudit_rmcp::{CallScope, CallStatus};
use rmcp::model::*;
use rmcp::service::RequestContext;
use rmcp::task_manager::{TaskManager, TaskOptions};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use tokio::sync::oneshot;
use tower::Layer;

use crate::common::*;

/// `task_plain` and `task_carried` answer with a task whose future reports the scope it sees.
#[derive(Clone)]
struct TaskTools {
    tasks: TaskManager,
    seen: Arc<Mutex<Vec<(String, String)>>>,
    done: Arc<Mutex<Option<oneshot::Sender<()>>>>,
}

impl ServerHandler for TaskTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        let carried = name == "task_carried";
        let seen = self.seen.clone();
        let done = self.done.lock().unwrap().take();
        let task = self.tasks.spawn(TaskOptions::new(), move |_ctx| {
            let work = async move {
                // Give the call time to answer first, as a long-running task would.
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                let scope = CallScope::current()
                    .map_or_else(|| "none".to_owned(), |s| s.effects().tool().to_owned());
                seen.lock().unwrap().push((name, scope));
                if let Some(done) = done {
                    let _ = done.send(());
                }
                Ok(CallToolResult::success(vec![]))
            };
            if carried {
                Box::pin(CallScope::carry(work))
            } else {
                Box::pin(work)
            }
        });
        Ok(CallToolResponse::Task(CreateTaskResult::new(task)))
    }
}

fn tasks_client() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::builder().enable_tasks().build(),
        Implementation::new("tasks-test", "0.0.0"),
    )
}

#[tokio::test]
async fn task_results_are_reported_at_creation_and_run_outside_the_scope_unless_carried() {
    let (layer, recorded) = recording_layer();
    let seen = Arc::new(Mutex::new(Vec::new()));
    for tool in ["task_plain", "task_carried"] {
        let (tx, rx) = oneshot::channel();
        let server = TaskTools {
            tasks: TaskManager::new(),
            seen: seen.clone(),
            done: Arc::new(Mutex::new(Some(tx))),
        };
        let client = connect_with(layer.layer(server), tasks_client()).await;
        let answer = client
            .call_tool_once(CallToolRequestParams::new(tool))
            .await
            .unwrap();
        assert!(matches!(answer, CallToolResponse::Task(_)), "{answer:?}");
        // Reported when the task was created, before its future ran.
        assert!(seen.lock().unwrap().iter().all(|(t, _)| t != tool));
        assert!(
            recorded.lock().unwrap().iter().any(
                |s| matches!(s, Seen::Call { tool: t, status: CallStatus::Ok, .. } if t == tool)
            )
        );
        rx.await.unwrap();
    }
    assert_eq!(
        *seen.lock().unwrap(),
        vec![
            ("task_plain".to_owned(), "none".to_owned()),
            ("task_carried".to_owned(), "task_carried".to_owned()),
        ]
    );
}
