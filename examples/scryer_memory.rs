//! What a scryer-prolog 0.10 machine keeps after asserts, retracts, count replacements
//! and plain queries — the measurements behind the engine's packet window, blackboard
//! counts and renewal (`docs/performance.md`, "The governance engine's memory").
//!
//! ```text
//! cargo run --release --example scryer_memory -- base 15000      # assertz of packet bases
//! cargo run --release --example scryer_memory -- small 20000     # assertz of 3-argument facts
//! cargo run --release --example scryer_memory -- retract 20000   # assert N, then retract each
//! cargo run --release --example scryer_memory -- churn 20000     # retract + assert one count
//! cargo run --release --example scryer_memory -- blackboard 20000  # bb_put one count
//! cargo run --release --example scryer_memory -- query 100000    # a trivial query
//! cargo run --release --example scryer_memory -- atoms 200000    # a distinct quoted atom per query
//! cargo run --release --example scryer_memory -- strings 200000  # the same text as a string
//! cargo run --release --example scryer_memory -- caught 50000    # catch/3 in the query
//! cargo run --release --example scryer_memory -- called 50000    # call/1 in the query
//! cargo run --release --example scryer_memory -- defined 50000   # catch/3 in a consulted clause
//! cargo run --release --example scryer_memory -- throw 1         # a query after an uncaught error
//! cargo run --release --example scryer_memory -- upkeep 50000    # the engine's per-command fact upkeep
//! ```
//!
//! `upkeep` runs what the engine runs after each send — a send count and the window's
//! floor, with the real prelude — as a conjunction in `'$caught'/2`; `upkeep_list` as a
//! list in `'$all'/1` (what the engine does); `upkeep_floor` / `upkeep_sends` each alone.
//!
//! `caught`, `called` and `defined` run the same `bb_put/2` (`blackboard`) through a
//! meta-call: written in the top-level query it is compiled anew each time; a clause
//! consulted once (`'$try'/1`, as the engine's prelude `'$caught'/2`) is not. `throw`
//! shows why the engine catches at all: after an uncaught exception scryer 0.10 answers
//! the next query with that exception again.
//!
//! `atoms` and `strings` then renew the machine as the engine does (a fresh one built
//! while the old one lives, then the old one dropped) and print the memory after: an
//! atom outlives every machine that saw it, a string does not.
//!
//! Prints the time taken and the process's resident memory before and after.

use std::error::Error;
use std::time::Instant;

use scryer_prolog::{LeafAnswer, Machine, MachineBuilder};

fn rss_mb() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| (pages * 4096) >> 20)
}

/// Runs `goal`; an error if its first answer is not a success.
fn run(machine: &mut Machine, goal: &str) -> Result<(), String> {
    match machine.run_query(goal.to_owned()).next() {
        Some(Ok(LeafAnswer::True | LeafAnswer::LeafAnswer { .. })) => Ok(()),
        other => Err(format!("{goal}: {other:?}")),
    }
}

/// A packet base as the engine stores one: integers for the id and sequence, atoms for
/// aliases and words, strings for the thread and payload reference.
fn base(i: u64) -> String {
    let ts = 1_700_000_000_000u64 + i;
    format!(
        "cxp_packet_base({i},{},{},{i},'U:Ox','U:Vz',\"thread-{i}\",task,{ts},5,'1.0',\
         \"cxp.traffic:{i}\",none,queued,{ts},pending,{ts})",
        i * 7 % 100_000,
        i % 1000
    )
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: scryer_memory base|small|retract|churn|blackboard|query|atoms|strings|caught|called|defined|throw|upkeep|upkeep_list|upkeep_floor|upkeep_sends N";
    let mode = args.first().ok_or(usage)?.clone();
    let n: u64 = args.get(1).ok_or(usage)?.parse()?;
    let mut m = MachineBuilder::new().build();
    m.consult_module_string(
        "harness",
        ":- use_module(library(iso_ext)).\n\
         :- dynamic(cxp_packet_base/17).\n:- dynamic(count/3).\n\
         '$try'(G) :- catch(G, _, true).\n"
            .to_owned(),
    );
    let before = rss_mb();
    let started = Instant::now();
    match mode.as_str() {
        "base" => {
            let goals: Vec<String> = (0..n).map(|i| format!("assertz({})", base(i))).collect();
            for chunk in goals.chunks(64) {
                run(&mut m, &format!("{}.", chunk.join(",")))?;
            }
        }
        "small" | "retract" => {
            for i in 0..n {
                run(&mut m, &format!("assertz(count('U:Ox',none,{i})).",))?;
            }
            if mode == "retract" {
                println!("asserted: {:?}, rss {} MB", started.elapsed(), rss_mb());
                for i in 0..n {
                    run(&mut m, &format!("retract(count('U:Ox',none,{i}))."))?;
                }
            }
        }
        "churn" => {
            for i in 0..n {
                run(
                    &mut m,
                    &format!("(retract(count('U:Ox',none,_)) -> true ; true), assertz(count('U:Ox',none,{i}))."),
                )?;
            }
        }
        "blackboard" | "caught" | "called" | "defined" => {
            for i in 0..n {
                let put = format!("bb_put('U:Ox/none', {i})");
                let goal = match mode.as_str() {
                    "caught" => format!("catch({put}, E, true)."),
                    "called" => format!("call({put})."),
                    "defined" => format!("'$try'({put})."),
                    _ => format!("{put}."),
                };
                run(&mut m, &goal)?;
            }
        }
        "upkeep" | "upkeep_floor" | "upkeep_sends" | "upkeep_list" => {
            m.consult_module_string(
                "orchestrata_prelude",
                include_str!("../src/governance/prelude.pl").to_owned(),
            );
            for i in 0..n {
                let goal = match mode.as_str() {
                    "upkeep_floor" => format!("'$set_floor'({i})"),
                    "upkeep_sends" => format!("'$set_sends'('U:GW',none,{i})"),
                    "upkeep_list" => {
                        run(&mut m, &format!("'$caught'('$all'(['$set_sends'('U:GW',none,{i}),'$set_floor'({i})]), E)."))?;
                        continue;
                    }
                    _ => format!("'$set_sends'('U:GW',none,{i}),'$set_floor'({i})"),
                };
                run(&mut m, &format!("'$caught'(({goal}), E)."))?;
            }
        }
        "throw" => {
            for goal in [
                "X is foo + 1.",
                "bb_put(k, 1), atom_length(1, _).",
                "bb_get(k, V).",
                "assertz(foo(1)), foo(Y).",
                "atom_length(X, 3).",
            ] {
                println!("{goal} -> {:?}", m.run_query(goal.to_owned()).next());
            }
        }
        "query" => {
            for i in 0..n {
                run(
                    &mut m,
                    &format!("X = foo('U:Ox',none,{i}), atom_length(abc, _)."),
                )?;
            }
        }
        "atoms" | "strings" => {
            for i in 0..n {
                let text = format!("a free-text packet subject, number {i:012}");
                let term = if mode == "atoms" {
                    format!("'{text}'")
                } else {
                    format!("\"{text}\"")
                };
                run(&mut m, &format!("X = [subject-{term}], X = [subject-_]."))?;
            }
        }
        _ => return Err(usage.into()),
    }
    let elapsed = started.elapsed();
    println!(
        "{mode} {n}: {elapsed:?} ({:.1} µs each), rss {before} -> {} MB",
        elapsed.as_secs_f64() * 1e6 / n as f64,
        rss_mb()
    );
    if matches!(mode.as_str(), "atoms" | "strings") {
        // A renewal as the engine does it: the successor is built while the old lives.
        let successor = MachineBuilder::new().build();
        drop(std::mem::replace(&mut m, successor));
        println!("after a renewal: rss {} MB", rss_mb());
    }
    Ok(())
}
