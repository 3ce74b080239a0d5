//! `tools/call`: the approval gate, the `approve` tool, forwarding to the gateway, and a
//! ledger row for every decision (REQ-014-205).
//!
//! A read-only tool is forwarded as is. A gated tool is forwarded only with a valid
//! `approval_token` (issued by `approve` for that tool and those exact arguments, at
//! most 300 s ago, never presented before); otherwise the call is refused with
//! `{"message":"PERMISSION_DENIED","capability":<tool>,"ledger_row":<row>,…}` and nothing
//! is sent to the gateway. The token itself is stripped before forwarding and never
//! written anywhere.

use std::time::Instant;

use serde_json::{json, Map, Value};

use super::approval::Refusal;
use super::ledger::{Decision, Entry};
use super::protocol::ProtocolError;
use super::tools::{arguments_hash, Tool, APPROVAL_TOKEN, APPROVE};
use super::McpServer;

/// A `CallToolResult` whose text is `body` as JSON.
fn tool_result(body: &Value, is_error: bool) -> Value {
    let mut result = json!({
        "content": [{"type": "text", "text": body.to_string()}],
        "isError": is_error,
    });
    if body.is_object() {
        result["structuredContent"] = body.clone();
    }
    result
}

/// The refusal body of REQ-014-205.
fn denied(capability: &str, row: u64, reason: &str, detail: &str) -> Value {
    json!({
        "message": "PERMISSION_DENIED",
        "capability": capability,
        "ledger_row": row,
        "reason": reason,
        "detail": detail,
    })
}

fn ledger_failure(e: impl std::fmt::Display) -> ProtocolError {
    ProtocolError::internal(format!(
        "the MCP ledger cannot be written, so nothing is allowed: {e}"
    ))
}

impl McpServer {
    /// Handles `tools/call` params: `{"name": <tool>, "arguments": {…}}`.
    pub(super) async fn call_tool(&self, params: Option<Value>) -> Result<Value, ProtocolError> {
        let mut params = match params {
            Some(Value::Object(map)) => map,
            _ => {
                return Err(ProtocolError::invalid_params(
                    "params",
                    "must be an object with `name` and `arguments`",
                ))
            }
        };
        let name = match params.remove("name") {
            Some(Value::String(name)) => name,
            Some(_) => {
                return Err(ProtocolError::invalid_params(
                    "params.name",
                    "must be a string",
                ))
            }
            None => return Err(ProtocolError::invalid_params("params.name", "is missing")),
        };
        let arguments = match params.remove("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(map)) => map,
            Some(_) => {
                return Err(ProtocolError::invalid_params(
                    "params.arguments",
                    "must be an object",
                ))
            }
        };
        let hash = arguments_hash(&arguments);
        if name == APPROVE {
            return self.approve(arguments, &hash);
        }
        let Some(tool) = self.catalog.get(&name).cloned() else {
            let row = self.record(
                &name,
                Decision::Refused,
                Some("unknown_tool"),
                Some(&hash),
                None,
            )?;
            return Err(ProtocolError::new(
                -32602,
                format!("Unknown tool: `{name}` (tools/list has the tools of this server)"),
                Some(denied(&name, row, "unknown_tool", "no such tool")),
            ));
        };
        if tool.gated {
            if let Err(refusal) = self.redeem(&tool, &arguments, &hash) {
                let row = self.record(
                    &name,
                    Decision::Refused,
                    Some(refusal.reason()),
                    Some(&hash),
                    None,
                )?;
                return Ok(tool_result(
                    &denied(&name, row, refusal.reason(), &refusal.to_string()),
                    true,
                ));
            }
            self.record(&name, Decision::Allowed, None, Some(&hash), None)?;
        }
        self.forward(&tool, arguments, &hash).await
    }

    fn redeem(
        &self,
        tool: &Tool,
        arguments: &Map<String, Value>,
        hash: &str,
    ) -> Result<(), Refusal> {
        let token = match arguments.get(APPROVAL_TOKEN) {
            None => {
                return Err(Refusal::Missing {
                    tool: tool.name.clone(),
                })
            }
            Some(Value::String(t)) if !t.is_empty() => t,
            Some(_) => return Err(Refusal::Malformed),
        };
        self.approvals
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .redeem(token, &tool.name, hash, Instant::now())
    }

    async fn forward(
        &self,
        tool: &Tool,
        mut arguments: Map<String, Value>,
        hash: &str,
    ) -> Result<Value, ProtocolError> {
        arguments.remove(APPROVAL_TOKEN);
        let answer = self
            .gateway
            .call(tool.method, Value::Object(arguments), !tool.gated)
            .await;
        match answer {
            Ok(Ok(result)) => {
                self.record(&tool.name, Decision::Executed, None, Some(hash), None)?;
                Ok(tool_result(&result, false))
            }
            Ok(Err(error)) => {
                let reason = error["data"]["reason"].as_str().unwrap_or("gateway_error");
                self.record(&tool.name, Decision::Failed, Some(reason), Some(hash), None)?;
                Ok(tool_result(&json!({"gateway_error": error}), true))
            }
            Err(e) => {
                self.record(
                    &tool.name,
                    Decision::Failed,
                    Some(e.reason()),
                    Some(hash),
                    None,
                )?;
                Ok(tool_result(
                    &json!({"message": "GATEWAY_UNAVAILABLE", "reason": e.reason(), "detail": e.to_string()}),
                    true,
                ))
            }
        }
    }

    /// The `approve` tool: `{"tool": <gated tool>, "arguments": {…}}` -> a token.
    fn approve(
        &self,
        mut arguments: Map<String, Value>,
        hash: &str,
    ) -> Result<Value, ProtocolError> {
        let refuse =
            |target: Option<&str>, reason: &str, detail: &str| -> Result<Value, ProtocolError> {
                let row =
                    self.record(APPROVE, Decision::Refused, Some(reason), Some(hash), target)?;
                let mut body = denied(APPROVE, row, reason, detail);
                if let Some(t) = target {
                    body["tool"] = json!(t);
                }
                Ok(tool_result(&body, true))
            };
        let target = match arguments.remove("tool") {
            Some(Value::String(t)) => t,
            Some(_) => {
                return refuse(
                    None,
                    "invalid_arguments",
                    "`tool` must be a string naming the tool to approve",
                )
            }
            None => {
                return refuse(
                    None,
                    "invalid_arguments",
                    "`tool` is missing: name the tool to approve",
                )
            }
        };
        let approved_arguments = match arguments.remove("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(map)) => map,
            Some(_) => {
                return refuse(
                    Some(&target),
                    "invalid_arguments",
                    "`arguments` must be an object",
                )
            }
        };
        if let Some(extra) = arguments.keys().next() {
            let detail =
                format!("unexpected argument `{extra}` (approve takes `tool` and `arguments`)");
            return refuse(Some(&target), "invalid_arguments", &detail);
        }
        let Some(tool) = self.catalog.get(&target) else {
            return refuse(Some(&target), "unknown_tool", "no such tool");
        };
        if !tool.gated {
            return refuse(
                Some(&target),
                "approve_read_only",
                "this tool is read-only and needs no approval",
            );
        }
        let bound = arguments_hash(&approved_arguments);
        let row = self.record(
            APPROVE,
            Decision::Approved,
            None,
            Some(&bound),
            Some(&target),
        )?;
        let issued = self
            .approvals
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .issue(&target, &bound, Instant::now());
        Ok(tool_result(
            &json!({
                "approval_token": issued.token,
                "tool": target,
                "arguments_sha256": bound,
                "expires_in_seconds": issued.expires_in.as_secs(),
                "single_use": true,
                "ledger_row": row,
                "next": format!("call `{target}` with exactly the approved arguments plus \"approval_token\""),
            }),
            false,
        ))
    }

    fn record(
        &self,
        tool: &str,
        decision: Decision,
        reason: Option<&str>,
        hash: Option<&str>,
        target: Option<&str>,
    ) -> Result<u64, ProtocolError> {
        self.ledger
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .record(&Entry {
                tool,
                decision,
                reason,
                arguments_sha256: hash,
                target,
            })
            .map_err(ledger_failure)
    }
}
