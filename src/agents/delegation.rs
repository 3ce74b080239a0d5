//! Delegation: a senior hands a task to one junior ([`delegate`]) or the same task to
//! up to five ([`fan_out`]) and synthesizes their answers (005 US-008/009).
//!
//! Each junior is spawned (task-bound), runs on its [`Driver`], answers its senior with
//! a CXP `junior_result` packet through the kernel (the same protocol seniors use with
//! each other), and dies when the task completes. A driver reporting a
//! [`DriverError::Violation`] gets its junior terminated for the violation and the
//! senior is told by an escalation (Articles XII/XIII). When every junior of a fan-out
//! fails, the senior escalates hop by hop up to the human queue (T18.4).
//! A fan-out's successful answers are scored and synthesized by [`super::synthesis`]:
//! one `junior_score` packet per scored answer, then the `synthesis` packet.
//! A junior whose driver failed otherwise (crash, timeout, protocol) is recorded
//! `unhealthy` (`health_changed`) before it terminates.

use futures::future::join_all;
use orchestrata_schemas::cxp::CxpPacket;
use orchestrata_schemas::events::types::Health;
use orchestrata_schemas::events::{Command, CommandKind};
use uuid::Uuid;

use super::driver::{result_packet, run_kept, run_task, Driver, DriverError, Task};
use super::error::AgentError;
use super::limits::MAX_JUNIORS;
use super::service::{Agents, LifespanSpec, SpawnSpec};
use super::synthesis::{score_map, score_packet, synthesize, Score, Scorer, Strategy};
use crate::kernel::convert;

/// Subject of the senior's synthesized answer.
pub const SYNTHESIS_SUBJECT: &str = "synthesis";

/// One junior's part in a delegation.
#[derive(Debug, Clone, PartialEq)]
pub struct JuniorRun {
    /// The junior's alias (terminated by now).
    pub alias: String,
    /// The `junior_result` packet it sent its senior.
    pub packet: CxpPacket,
    /// Its answer or why it failed.
    pub result: Result<String, DriverError>,
}

/// The end of a fan-out.
#[derive(Debug, Clone, PartialEq)]
pub enum FanOutOutcome {
    /// At least one junior answered; the scores and the synthesis packet went to the
    /// senior's parent.
    Synthesized {
        /// The answer (the best output, or the merge).
        output: String,
        /// The `synthesis` packet (boxed: it dwarfs the other variant).
        packet: Box<CxpPacket>,
        /// The junior whose output is the answer (strategy `best`).
        chosen: Option<String>,
        /// Every successful output's score, in junior order.
        scores: Vec<Score>,
    },
    /// Every junior failed; the senior escalated with their errors, hop by hop, to the
    /// human queue (the last hop).
    Escalated(super::escalation::Resolution),
}

/// How a fan-out compares and combines its answers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Synthesis {
    /// Best output or merge.
    pub strategy: Strategy,
    /// What scores each answer.
    pub scorer: Scorer,
}

/// Runs `task` on one junior of `senior` driven by `driver` (`kind` = `cli`, `api`,
/// `browser`).
pub async fn delegate(
    agents: &Agents,
    senior: &str,
    kind: &str,
    driver: &mut dyn Driver,
    task: &Task,
) -> Result<JuniorRun, AgentError> {
    let mut spec = SpawnSpec::for_task(senior, kind, &task.prompt_title(), &task.id);
    spec.lifespan = LifespanSpec::Task(task.id.clone());
    let alias = agents.spawn(spec).await?;
    let run = run_spawned(agents, senior, &alias, driver, task, false).await;
    // Whatever happened, the task is over for this junior.
    if agents.node(&alias).await?.is_some_and(|n| n.live) {
        agents.terminate(&alias, "task_completed").await?;
    }
    run
}

/// Runs `task` on the spawned junior `alias` and answers `senior` with its
/// `junior_result` packet; with `keep` the driver is not cleaned up (the junior lives
/// on for more tasks). A failed driver makes the junior `unhealthy`; a violation
/// escalates and terminates it.
pub(crate) async fn run_spawned(
    agents: &Agents,
    senior: &str,
    alias: &str,
    driver: &mut dyn Driver,
    task: &Task,
    keep: bool,
) -> Result<JuniorRun, AgentError> {
    let result = if keep {
        run_kept(driver, task).await
    } else {
        run_task(driver, task).await
    };
    let packet = result_packet(alias, senior, task, &driver.name(), &result)?;
    send(agents, alias, &packet).await?;
    match &result {
        Err(DriverError::Violation { .. }) | Ok(_) => {}
        // The driver's liveness is the junior's health (spec 014 `health_changed`).
        Err(e) => {
            agents
                .set_health(
                    senior,
                    alias,
                    Health::Unhealthy,
                    Some(format!("{} driver: {e}", driver.name())),
                )
                .await?;
        }
    }
    if let Err(DriverError::Violation { reason }) = &result {
        let context = serde_json::json!({ "task_id": task.id, "violation": reason });
        agents
            .escalate(
                alias,
                "runtime violation",
                Some(packet.thread_id()),
                context,
                &[],
            )
            .await?;
        agents
            .terminate(alias, &format!("violation: {reason}"))
            .await?;
    }
    Ok(JuniorRun {
        alias: alias.to_owned(),
        packet,
        result,
    })
}

/// Sends `packet` as `from` through the kernel (governed like any packet).
pub(crate) async fn send(
    agents: &Agents,
    from: &str,
    packet: &CxpPacket,
) -> Result<(), AgentError> {
    let command = Command {
        id: Uuid::new_v4(),
        principal: None,
        issuer: from.to_owned(),
        action: CommandKind::SendPacket {
            packet: convert::to_record(packet, None),
        },
    };
    agents.kernel().execute(command).await?;
    Ok(())
}

/// The same `task` to every driver (at most [`MAX_JUNIORS`]), concurrently; failed
/// juniors are tolerated; the answers are scored (a `junior_score` packet each) and
/// combined by `synthesis` into a `synthesis` packet from `senior` to its parent. All
/// failed: the senior escalates to the human queue.
pub async fn fan_out(
    agents: &Agents,
    senior: &str,
    drivers: Vec<(String, Box<dyn Driver>)>,
    task: &Task,
    synthesis: &Synthesis,
) -> Result<(Vec<JuniorRun>, FanOutOutcome), AgentError> {
    if drivers.is_empty() || drivers.len() > MAX_JUNIORS {
        return Err(AgentError::invalid(
            "drivers",
            format!(
                "a fan-out takes 1 to {MAX_JUNIORS} juniors, not {}",
                drivers.len()
            ),
        ));
    }
    let parent = agents
        .node(senior)
        .await?
        .filter(|n| n.live)
        .ok_or_else(|| AgentError::UnknownAgent {
            field: "senior",
            alias: senior.to_owned(),
        })?
        .parent;
    let mut spawned = Vec::new();
    for (kind, driver) in drivers {
        let spec = SpawnSpec::for_task(senior, &kind, &task.prompt_title(), &task.id);
        let alias = agents.spawn(spec).await?;
        spawned.push((alias, driver));
    }
    let runs = join_all(spawned.into_iter().map(|(alias, mut driver)| async move {
        run_spawned(agents, senior, &alias, driver.as_mut(), task, false).await
    }))
    .await
    .into_iter()
    .collect::<Result<Vec<_>, _>>()?;
    agents.complete_task(&task.id).await?;
    let answers: Vec<(&str, &str)> = runs
        .iter()
        .filter_map(|r| {
            r.result
                .as_ref()
                .ok()
                .map(|o| (r.alias.as_str(), o.as_str()))
        })
        .collect();
    if answers.is_empty() {
        let errors: Vec<String> = runs
            .iter()
            .filter_map(|r| r.result.as_ref().err().map(|e| format!("{}: {e}", r.alias)))
            .collect();
        let context = serde_json::json!({ "task_id": task.id, "errors": errors });
        let resolution = agents
            .escalate_to_human(senior, "every junior failed", None, context)
            .await?;
        return Ok((runs, FanOutOutcome::Escalated(resolution)));
    }
    let to = parent.ok_or_else(|| {
        AgentError::invalid("senior", "a root has no parent to send the synthesis to")
    })?;
    let scores = synthesis.scorer.score_all(&answers).await;
    for score in &scores {
        send(agents, senior, &score_packet(senior, &to, &task.id, score)?).await?;
    }
    let chosen = synthesize(synthesis.strategy, &answers, &scores);
    let alias = |a: &str, f: &'static str| {
        orchestrata_schemas::cxp::VolkAlias::parse_field(a, f)
            .map_err(|e| AgentError::invalid(f, e.to_string()))
    };
    let sources: Vec<&str> = runs.iter().map(|r| r.alias.as_str()).collect();
    let body = serde_json::json!({
        "task_id": task.id, "output": chosen.output, "juniors": sources,
        "succeeded": answers.len(), "failed": runs.len() - answers.len(),
        "strategy": synthesis.strategy.as_str(), "chosen": chosen.chosen,
        "order": chosen.order, "scores": score_map(&scores),
    });
    let packet = CxpPacket::new(
        alias(senior, "senior")?,
        alias(&to, "parent")?,
        SYNTHESIS_SUBJECT,
        body,
    )
    .map_err(|e| AgentError::invalid("synthesis", e.to_string()))?;
    send(agents, senior, &packet).await?;
    Ok((
        runs,
        FanOutOutcome::Synthesized {
            output: chosen.output,
            packet: Box::new(packet),
            chosen: chosen.chosen,
            scores,
        },
    ))
}

impl Task {
    /// The first line of the prompt, shortened: a junior's `purpose`.
    pub fn prompt_title(&self) -> String {
        let line = self.prompt.lines().next().unwrap_or("").trim();
        let title: String = line.chars().take(80).collect();
        if title.is_empty() {
            format!("task {}", self.id)
        } else {
            title
        }
    }
}
