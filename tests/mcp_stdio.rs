//! `orchestrata mcp` over a real stdio exchange: the binary is spawned with `GATEWAY_*` in
//! its environment, talks MCP (JSON-RPC lines) on stdin/stdout, and is a WebSocket
//! client of a real gateway started in-process on loopback over a sled log, with the
//! kernel (standard roster) and the projection views wired in.

mod mcp_support;
mod support;

use mcp_support::{
    config_on, exit_of, ledger_rows, mcp_command, row, send_args, with_token, Mcp, Stack,
};
use orchestrata::gateway::methods::METHODS;
use serde_json::{json, Value};
use support::ws::{self, TestGateway, TOKEN};

// REQ-014-204 REQ-014-206
#[tokio::test]
async fn tools_list_is_the_exposed_method_table_plus_approve() {
    let stack = Stack::start().await;
    let mut mcp = Mcp::spawn(stack.port(), TOKEN, &stack.ledger());
    let init = mcp
        .request("initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}))
        .await;
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "{init}");
    assert_eq!(init["result"]["serverInfo"]["name"], "orchestrata");
    assert!(init["result"]["capabilities"]["tools"].is_object());
    // A notification gets no answer: the next line is the ping's.
    mcp.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    let ping = mcp.request("ping", json!({})).await;
    assert_eq!(ping["result"], json!({}), "{ping}");
    let list = mcp.request("tools/list", json!({})).await;
    let tools = list["result"]["tools"].as_array().expect("tools").clone();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    for m in METHODS {
        let name = m.name.replace('.', "_");
        assert_eq!(
            names.contains(&name.as_str()),
            m.exposed,
            "{name}: {names:?}"
        );
    }
    for absent in [
        "auth_authenticate",
        "gateway_subscribe",
        "gateway_unsubscribe",
        "cxp_subscribe",
        "cxp_unsubscribe",
    ] {
        assert!(!names.contains(&absent), "{absent} must not be a tool");
    }
    assert!(
        names.contains(&"gateway_ping")
            && names.contains(&"cxp_send")
            && names.contains(&"approve")
    );
    assert_eq!(
        names.len(),
        METHODS.iter().filter(|m| m.exposed).count() + 1
    );
    let send = tools
        .iter()
        .find(|t| t["name"] == "cxp_send")
        .expect("cxp_send");
    assert_eq!(send["inputSchema"]["type"], "object");
    assert!(
        send["inputSchema"]["properties"]["target"].is_object(),
        "{send}"
    );
    assert!(
        send["inputSchema"]["properties"]["approval_token"].is_object(),
        "{send}"
    );
    assert_eq!(send["annotations"]["readOnlyHint"], false);
    assert!(send["description"]
        .as_str()
        .unwrap_or("")
        .starts_with("Send a CXP packet"));
    let ping = tools
        .iter()
        .find(|t| t["name"] == "gateway_ping")
        .expect("gateway_ping");
    assert_eq!(
        ping["inputSchema"]["type"], "object",
        "null params narrowed: {ping}"
    );
    assert_eq!(ping["annotations"]["readOnlyHint"], true);
    mcp.finish().await;
}

// REQ-014-204
#[tokio::test]
async fn read_only_tools_are_forwarded_to_the_gateway() {
    let stack = Stack::start().await;
    let mut mcp = Mcp::ready(stack.port(), TOKEN, &stack.ledger()).await;
    let pong = mcp.ok("gateway_ping", json!({})).await;
    assert!(pong["server_timestamp"].is_string(), "{pong}");
    // Arguments may be omitted altogether.
    let r = mcp
        .request("tools/call", json!({"name": "gateway_ping"}))
        .await;
    assert_eq!(r["result"]["isError"], false, "{r}");
    assert!(r["result"]["structuredContent"]["server_timestamp"].is_string());
    let volks = mcp.ok("volk_list", json!({"limit": 50})).await;
    let aliases: Vec<&str> = volks["volks"]
        .as_array()
        .expect("volks")
        .iter()
        .filter_map(|v| v["alias"].as_str())
        .collect();
    assert!(
        aliases.contains(&"U:Ox"),
        "the kernel's roster, read through the gateway: {volks}"
    );
    // The gateway's own refusal comes back as a tool error carrying its error.
    let e = mcp
        .err("cxp_status", json!({"thread_id": "no-such-thread"}))
        .await;
    assert_eq!(e["gateway_error"]["code"], -32602, "{e}");
    assert_eq!(e["gateway_error"]["data"]["reason"], "unknown_thread");
    let rows = ledger_rows(&stack.ledger());
    assert_eq!(rows.len(), 4, "{rows:?}");
    assert_eq!(rows[0]["decision"], "executed");
    assert_eq!(rows[3]["decision"], "failed");
    assert_eq!(rows[3]["reason"], "unknown_thread");
    mcp.finish().await;
}

// REQ-014-205
#[tokio::test]
async fn a_mutating_call_runs_only_with_a_fresh_token_issued_by_approve() {
    let stack = Stack::start().await;
    let mut mcp = Mcp::ready(stack.port(), TOKEN, &stack.ledger()).await;
    let args = send_args("build_feature");

    // Without a token: refused, with a ledger row, and nothing reaches the gateway.
    let denied = mcp.err("cxp_send", args.clone()).await;
    assert_eq!(denied["message"], "PERMISSION_DENIED", "{denied}");
    assert_eq!(denied["capability"], "cxp_send");
    assert_eq!(denied["reason"], "approval_required");
    assert!(
        denied["detail"].as_str().unwrap_or("").contains("approve"),
        "says how: {denied}"
    );
    let denied_row = denied["ledger_row"].clone();
    assert!(denied_row.is_u64(), "{denied}");
    assert_eq!(
        stack.inbox_len("U:Ox").await,
        0,
        "refused call must not reach the kernel"
    );

    // Approve, then call with the token: executed once.
    let token = mcp.approve("cxp_send", args.clone()).await;
    let sent = mcp.ok("cxp_send", with_token(args.clone(), &token)).await;
    assert_eq!(sent["status"], "queued", "{sent}");
    assert_eq!(sent["routed_via"], "U:PS");
    assert_eq!(stack.inbox_len("U:Ox").await, 1);

    // The same token again: refused, still one packet.
    let reused = mcp.err("cxp_send", with_token(args.clone(), &token)).await;
    assert_eq!(reused["message"], "PERMISSION_DENIED");
    assert_eq!(reused["reason"], "approval_token_reused", "{reused}");
    assert_eq!(stack.inbox_len("U:Ox").await, 1);

    // Every decision is in the ledger; no token ever is.
    let rows = ledger_rows(&stack.ledger());
    assert_eq!(row(&rows, &denied_row)["reason"], "approval_required");
    assert_eq!(row(&rows, &denied_row)["decision"], "refused");
    assert_eq!(
        row(&rows, &reused["ledger_row"])["reason"],
        "approval_token_reused"
    );
    let decisions: Vec<&str> = rows.iter().filter_map(|r| r["decision"].as_str()).collect();
    assert_eq!(
        decisions,
        ["refused", "approved", "allowed", "executed", "refused"]
    );
    let text = std::fs::read_to_string(stack.ledger()).expect("ledger");
    assert!(
        !text.contains(&token),
        "approval token leaked into the ledger"
    );
    assert!(
        !text.contains(TOKEN),
        "gateway token leaked into the ledger"
    );
    mcp.finish().await;
}

// REQ-014-205
#[tokio::test]
async fn wrong_tool_forged_changed_arguments_and_bad_approvals_are_refused_with_a_row() {
    let stack = Stack::start().await;
    let mut mcp = Mcp::ready(stack.port(), TOKEN, &stack.ledger()).await;
    let args = send_args("cross");

    // A token for cxp_ack presented to cxp_send.
    let ack_token = mcp
        .approve(
            "cxp_ack",
            json!({"message_id": uuid::Uuid::new_v4().to_string(), "by": "U:Ox"}),
        )
        .await;
    let e = mcp
        .err("cxp_send", with_token(args.clone(), &ack_token))
        .await;
    assert_eq!(e["reason"], "approval_token_wrong_tool", "{e}");
    assert!(
        e["detail"].as_str().unwrap_or("").contains("cxp_ack"),
        "{e}"
    );

    // A forged token.
    let e = mcp
        .err("cxp_send", with_token(args.clone(), &"f".repeat(64)))
        .await;
    assert_eq!(e["reason"], "approval_token_unknown", "{e}");

    // Approved for other arguments.
    let token = mcp.approve("cxp_send", send_args("approved-subject")).await;
    let e = mcp.err("cxp_send", with_token(args.clone(), &token)).await;
    assert_eq!(e["reason"], "approval_token_wrong_arguments", "{e}");
    assert_eq!(stack.inbox_len("U:Ox").await, 0);

    // approve on a read-only tool, on an unknown tool, without a tool.
    let e = mcp.err("approve", json!({"tool": "gateway_ping"})).await;
    assert_eq!(
        (e["capability"].as_str(), e["reason"].as_str()),
        (Some("approve"), Some("approve_read_only")),
        "{e}"
    );
    let e = mcp
        .err("approve", json!({"tool": "cxp_delete_everything"}))
        .await;
    assert_eq!(e["reason"], "unknown_tool", "{e}");
    let e = mcp.err("approve", json!({})).await;
    assert_eq!(e["reason"], "invalid_arguments", "{e}");

    // An unknown tool: a JSON-RPC error that still carries its ledger row.
    let r = mcp
        .request("tools/call", json!({"name": "rm_rf", "arguments": {}}))
        .await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(r["error"]["message"]
        .as_str()
        .unwrap_or("")
        .contains("rm_rf"));
    assert_eq!(r["error"]["data"]["message"], "PERMISSION_DENIED");
    let unknown_row = r["error"]["data"]["ledger_row"].clone();

    let rows = ledger_rows(&stack.ledger());
    assert_eq!(row(&rows, &unknown_row)["reason"], "unknown_tool");
    assert_eq!(row(&rows, &unknown_row)["tool"], "rm_rf");
    let refused = rows.iter().filter(|r| r["decision"] == "refused").count();
    assert_eq!(refused, 7, "{rows:?}");
    assert!(
        rows.iter().all(|r| r["decision"] != "allowed"),
        "nothing was let through"
    );
    let text = std::fs::read_to_string(stack.ledger()).expect("ledger");
    assert!(!text.contains(&token) && !text.contains(&ack_token));
    mcp.finish().await;
}

// REQ-014-204
#[tokio::test]
async fn protocol_errors_are_clear() {
    let stack = Stack::start().await;
    let mut mcp = Mcp::ready(stack.port(), TOKEN, &stack.ledger()).await;
    let r = mcp.request("resources/list", json!({})).await;
    assert_eq!(r["error"]["code"], -32601, "{r}");
    assert!(r["error"]["message"]
        .as_str()
        .unwrap_or("")
        .contains("resources/list"));
    mcp.send_line("{this is not json").await;
    let r = mcp.next().await;
    assert_eq!(
        (r["id"].clone(), r["error"]["code"].clone()),
        (Value::Null, json!(-32700)),
        "{r}"
    );
    let r = mcp.request("tools/call", json!({"arguments": {}})).await;
    assert_eq!(r["error"]["code"], -32602);
    assert_eq!(r["error"]["data"]["field"], "params.name", "{r}");
    let r = mcp
        .request(
            "tools/call",
            json!({"name": "gateway_ping", "arguments": [1]}),
        )
        .await;
    assert_eq!(r["error"]["data"]["field"], "params.arguments", "{r}");
    let r = mcp.request("initialize", json!({})).await;
    assert_eq!(r["error"]["data"]["field"], "params.protocolVersion", "{r}");
    let r = mcp
        .request("initialize", json!({"protocolVersion": "1999-01-01"}))
        .await;
    assert_eq!(
        r["result"]["protocolVersion"], "2025-11-25",
        "newest offered: {r}"
    );
    mcp.finish().await;
}

// REQ-014-204
#[tokio::test]
async fn a_missing_empty_or_refused_token_is_a_clear_startup_error() {
    let gw = TestGateway::sled(ws::test_config()).await;
    let port = gw.addr().port();
    let dir = tempfile::tempdir().expect("temp dir");
    let ledger = dir.path().join("ledger.jsonl");
    let (ok, stderr) = exit_of(mcp_command(port, None, &ledger)).await;
    assert!(!ok);
    assert!(stderr.contains("GATEWAY_TOKEN is not set"), "{stderr}");
    let (ok, stderr) = exit_of(mcp_command(port, Some("   "), &ledger)).await;
    assert!(!ok);
    assert!(stderr.contains("GATEWAY_TOKEN is empty"), "{stderr}");
    let (ok, stderr) = exit_of(mcp_command(port, Some("not-the-token"), &ledger)).await;
    assert!(!ok);
    assert!(
        stderr.contains("refused GATEWAY_TOKEN: invalid_token"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("not-the-token"),
        "the token is never printed: {stderr}"
    );
    let mut bad_port = mcp_command(port, Some(TOKEN), &ledger);
    bad_port.env("GATEWAY_PORT", "http");
    let (ok, stderr) = exit_of(bad_port).await;
    assert!(!ok);
    assert!(
        stderr.contains("GATEWAY_PORT: `http` is not a port number"),
        "{stderr}"
    );
}

// REQ-014-204
#[tokio::test]
async fn it_reconnects_when_the_gateway_comes_back() {
    let port = support::free_port();
    let dir = tempfile::tempdir().expect("temp dir");
    let ledger = dir.path().join("ledger.jsonl");
    // No gateway yet: the server starts, and calls say the gateway is unavailable.
    let mut mcp = Mcp::ready(port, TOKEN, &ledger).await;
    let e = mcp.err("gateway_ping", json!({})).await;
    assert_eq!(e["message"], "GATEWAY_UNAVAILABLE", "{e}");
    assert_eq!(e["reason"], "gateway_unreachable");
    // The gateway starts: the next call connects and authenticates.
    let mut first = TestGateway::sled(config_on(port)).await;
    assert!(mcp.ok("gateway_ping", json!({})).await["server_timestamp"].is_string());
    // It stops (its clients are closed) and another takes its place: reconnected.
    first.stop().await;
    let _second = TestGateway::sled(config_on(port)).await;
    assert!(mcp.ok("gateway_ping", json!({})).await["server_timestamp"].is_string());
    mcp.finish().await;
}
